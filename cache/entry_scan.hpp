#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/key.hpp"
#include "cache/layout.hpp"

namespace fajit::cache {

// An entry or failure record file found on disk (not decoded).
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

// Every failure record under the layout (not decoded), or only those of `arch`.
std::vector<StoredEntry> scan_failure_records(const Layout& layout,
                                              const std::optional<std::string>& arch = std::nullopt);

// Temp files and lock files last modified before `cutoff`: debris of killed writers.
// The _in form looks in one directory only (the cheap check done on publish); the other looks
// in the versioned root (beside the stats file and the memo) and every shard and failures directory.
std::vector<std::filesystem::path> scan_leftovers(const Layout& layout, std::filesystem::file_time_type cutoff);
std::vector<std::filesystem::path> scan_leftovers_in(const std::filesystem::path& directory,
                                                     std::filesystem::file_time_type cutoff);

}  // namespace fajit::cache
