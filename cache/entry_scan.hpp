#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/key.hpp"
#include "cache/layout.hpp"

namespace fajit::cache {

// An entry file found on disk (not decoded).
struct StoredEntry {
    std::string arch;
    Key key;
    std::filesystem::path path;
    std::uint64_t size = 0;
    std::filesystem::file_time_type modified;  // last publish or hit: the LRU clock
};

// Every entry under the layout, or only those of `arch`. Temp files, lock files and names the
// layout does not produce are skipped; unreadable directories are skipped, not fatal.
std::vector<StoredEntry> scan_entries(const Layout& layout, const std::optional<std::string>& arch = std::nullopt);

// Temp files and lock files last modified before `cutoff`: debris of killed writers.
// The _in form looks in one shard directory only (the cheap check done on publish).
std::vector<std::filesystem::path> scan_leftovers(const Layout& layout, std::filesystem::file_time_type cutoff);
std::vector<std::filesystem::path> scan_leftovers_in(const std::filesystem::path& shard_directory,
                                                     std::filesystem::file_time_type cutoff);

}  // namespace fajit::cache
