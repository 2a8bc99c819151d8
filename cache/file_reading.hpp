#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <optional>
#include <system_error>
#include <vector>

namespace fajit::cache {

// The file's first `limit` bytes (all of it by default), or nullopt with `error` set
// (std::errc::no_such_file_or_directory for a missing file).
std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& path, std::error_code& error,
                                                std::size_t limit = std::numeric_limits<std::size_t>::max());

}  // namespace fajit::cache
