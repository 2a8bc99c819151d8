#include "cache/lru.hpp"

#include <algorithm>
#include <tuple>

namespace fajit::cache {

std::vector<StoredEntry> least_recently_used_beyond(std::vector<StoredEntry> entries, std::uint64_t budget_bytes) {
    std::uint64_t total = 0;
    for (const auto& entry : entries) total += entry.size;

    std::sort(entries.begin(), entries.end(), [](const StoredEntry& a, const StoredEntry& b) {
        return std::tie(a.modified, a.path) < std::tie(b.modified, b.path);
    });
    std::vector<StoredEntry> victims;
    for (auto& entry : entries) {
        if (total <= budget_bytes) break;
        total -= entry.size;
        victims.push_back(std::move(entry));
    }
    return victims;
}

}  // namespace fajit::cache
