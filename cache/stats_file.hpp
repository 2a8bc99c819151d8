#pragma once

#include <filesystem>
#include <functional>

#include "cache/stats.hpp"

namespace fajit::cache {

// The persisted totals; a missing, unreadable or malformed file reads as all zeros.
CacheStats read_stats_file(const std::filesystem::path& path);

// Replaces the totals with update(current totals), under a lock file so concurrent
// processes do not lose each other's counts, and written atomically. Returns false if the
// lock could not be taken quickly or the write failed; the caller keeps its counts for later.
bool update_stats_file(const std::filesystem::path& path, const std::function<CacheStats(CacheStats)>& update);

}  // namespace fajit::cache
