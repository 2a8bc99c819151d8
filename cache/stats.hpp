#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace fajit::cache {

// Counters of what the cache did; summed over processes in the persisted stats file.
struct CacheStats {
    std::uint64_t hits = 0;              // requests answered without running the producer
    std::uint64_t misses = 0;            // requests that found no usable entry
    std::uint64_t compiles = 0;          // producer calls
    double compile_seconds = 0;          // time spent in the producer
    std::uint64_t corrupt_entries = 0;   // entries that failed to decode and were removed
    std::uint64_t evictions = 0;         // entries removed to respect a size or age bound
    std::uint64_t rejected_entries = 0;  // entries removed by evict(), e.g. refused by the GPU loader
    std::uint64_t lock_waits = 0;        // requests that waited for another producer's lock
    std::uint64_t lock_timeouts = 0;     // waits that gave up and produced anyway
    std::uint64_t publish_failures = 0;  // entries that could not be written (unwritable, full, too big)
    // The remote tier (remote_tier.hpp).
    std::uint64_t remote_hits = 0;           // local misses answered by the store
    std::uint64_t remote_misses = 0;         // local misses the store could not answer
    std::uint64_t remote_errors = 0;         // operations on the store that failed or timed out, or could not be sent
    std::uint64_t remote_rejected = 0;       // values refused: damaged, unsigned, wrongly signed, not for this key
    std::uint64_t remote_bytes_read = 0;     // of accepted values
    std::uint64_t remote_bytes_written = 0;  // of values stored
    std::uint64_t remote_lock_waits = 0;     // requests that waited for another machine's producer
    std::uint64_t remote_lock_timeouts = 0;  // waits that gave up and produced anyway

    CacheStats& operator+=(const CacheStats& other);
    bool operator==(const CacheStats&) const = default;
};

nlohmann::json to_json(const CacheStats& stats);
// Missing or mistyped fields read as zero, so files written by other versions still load.
CacheStats stats_from_json(const nlohmann::json& json);

}  // namespace fajit::cache
