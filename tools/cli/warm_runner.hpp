#pragma once
// Prepares many variants on a pool of threads sharing one Runtime (prepare() is thread
// safe and compiles each key once), reporting each as it finishes, then checks which of them
// the cache holds.
#include <optional>
#include <string>
#include <vector>

#include "cache/disk_cache.hpp"
#include "fajit/runtime.hpp"
#include "kernel_cost.hpp"

namespace fajit::cli {

// compiled and cached mean the variant is in the cache; not_stored that it compiled (or was
// found) but the cache does not hold it; failed that it could not be prepared at all.
enum class WarmOutcome { compiled, cached, not_stored, failed };

struct WarmResult {
    KernelSpec spec;
    WarmOutcome outcome = WarmOutcome::failed;
    double seconds = 0.0;          // wall time of this variant's prepare()
    double compile_seconds = 0.0;  // compiler time of a variant compiled now
    std::string key;
    std::string error;  // why it failed, or why it is not stored
    std::string log;    // the compiler's log when the compiler rejected it
    // For not_stored: "read-only", "no space", "not a directory", "missing" (stored, then
    // gone by the end: evicted for the size limit or removed by another process) or "other".
    std::string not_stored_reason;
    std::optional<KernelCost> cost;  // with --isa, for a variant prepared (compiled, cached or not stored)
};

// Told about every variant as it finishes; called from the worker threads, one call at a time.
class WarmObserver {
public:
    virtual ~WarmObserver() = default;
    virtual void finished(const WarmResult& result, std::size_t done, std::size_t total) = 0;
};

// Results in the order of specs, each with its cost where with_cost. jobs must be at least 1.
std::vector<WarmResult> warm_variants(Runtime& runtime, const std::vector<KernelSpec>& specs, int jobs, bool with_cost,
                                      WarmObserver& observer);

// Turns each compiled or cached result whose entry disk does not hold (whole and sound) now
// into not_stored: what warm promises is the cache's content at the end, not the compiles.
void confirm_stored(std::vector<WarmResult>& results, const cache::DiskCache& disk);

std::string_view to_string(WarmOutcome outcome);

}  // namespace fajit::cli
