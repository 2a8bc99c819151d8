#include "warm_runner.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace fajit::cli {
namespace {

WarmResult warm_one(Runtime& runtime, const KernelSpec& spec) {
    WarmResult result;
    result.spec = spec;
    const auto start = std::chrono::steady_clock::now();
    try {
        const CompiledKernel kernel = runtime.prepare(spec);
        result.outcome = kernel.compiled_now ? WarmOutcome::compiled : WarmOutcome::cached;
        result.compile_seconds = kernel.compiled_now ? kernel.compile_seconds : 0.0;
        result.key = kernel.key;
    } catch (const CompileError& error) {
        result.error = error.what();
        result.log = error.log();
    } catch (const std::exception& error) {
        result.error = error.what();
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace

std::vector<WarmResult> warm_variants(Runtime& runtime, const std::vector<KernelSpec>& specs, int jobs,
                                      WarmObserver& observer) {
    std::vector<WarmResult> results(specs.size());
    std::atomic<std::size_t> next{0};
    std::mutex report_mutex;
    std::size_t done = 0;
    const auto work = [&] {
        for (std::size_t index = next++; index < specs.size(); index = next++) {
            results[index] = warm_one(runtime, specs[index]);
            std::lock_guard lock(report_mutex);
            observer.finished(results[index], ++done, specs.size());
        }
    };
    {
        std::vector<std::jthread> workers;
        const std::size_t thread_count = std::min<std::size_t>(static_cast<std::size_t>(jobs), specs.size());
        for (std::size_t i = 0; i < thread_count; ++i) workers.emplace_back(work);
    }
    return results;
}

std::string_view to_string(WarmOutcome outcome) {
    switch (outcome) {
        case WarmOutcome::compiled:
            return "compiled";
        case WarmOutcome::cached:
            return "cached";
        case WarmOutcome::failed:
            return "failed";
    }
    return "?";
}

}  // namespace fajit::cli
