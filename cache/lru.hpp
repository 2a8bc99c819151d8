#pragma once

#include <cstdint>
#include <vector>

#include "cache/entry_scan.hpp"

namespace fajit::cache {

// The least recently used entries (oldest modification time first; ties by path, so the
// choice is deterministic) whose removal brings the total size of `entries` to at most
// `budget_bytes`.
std::vector<StoredEntry> least_recently_used_beyond(std::vector<StoredEntry> entries, std::uint64_t budget_bytes);

}  // namespace fajit::cache
