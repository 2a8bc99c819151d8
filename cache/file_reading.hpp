#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <system_error>
#include <type_traits>
#include <vector>

namespace fajit::cache {

// Why read_file refused a file that exists.
enum class FileRefusal {
    not_a_regular_file = 1,  // a FIFO (whose open would block), a device, a directory, ...
    too_large,               // over the limit the caller set for its kind of file
};
std::error_code make_error_code(FileRefusal refusal);

// The whole file if it is a regular file of at most max_size bytes; otherwise nullopt with
// `error` set (std::errc::no_such_file_or_directory for a missing file, a FileRefusal for one
// refused). Never blocks on a FIFO, and never holds more than max_size bytes, whatever size
// the file claims (a sparse file of a terabyte, say).
std::optional<std::vector<std::byte>> read_file(const std::filesystem::path& path, std::error_code& error,
                                                std::uint64_t max_size);
// The file's first `size` bytes (all of it if shorter), under the same rules.
std::optional<std::vector<std::byte>> read_file_prefix(const std::filesystem::path& path, std::error_code& error,
                                                       std::size_t size);

}  // namespace fajit::cache

template <>
struct std::is_error_code_enum<fajit::cache::FileRefusal> : std::true_type {};
