#pragma once
// Prepares many variants on a pool of threads sharing one Runtime (prepare() is thread
// safe and compiles each key once), reporting each as it finishes.
#include <string>
#include <vector>

#include "fajit/runtime.hpp"

namespace fajit::cli {

enum class WarmOutcome { compiled, cached, failed };

struct WarmResult {
    KernelSpec spec;
    WarmOutcome outcome = WarmOutcome::failed;
    double seconds = 0.0;          // wall time of this variant's prepare()
    double compile_seconds = 0.0;  // compiler time of a variant compiled now
    std::string key;
    std::string error;  // why it failed
    std::string log;    // the compiler's log when the compiler rejected it
};

// Told about every variant as it finishes; called from the worker threads, one call at a time.
class WarmObserver {
public:
    virtual ~WarmObserver() = default;
    virtual void finished(const WarmResult& result, std::size_t done, std::size_t total) = 0;
};

// Results in the order of specs. jobs must be at least 1.
std::vector<WarmResult> warm_variants(Runtime& runtime, const std::vector<KernelSpec>& specs, int jobs,
                                      WarmObserver& observer);

std::string_view to_string(WarmOutcome outcome);

}  // namespace fajit::cli
