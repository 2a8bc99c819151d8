#include "warm_runner.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

namespace fajit::cli {
namespace {

// The words an operator acts on: make it writable, free space, or fix the path.
std::string not_stored_reason_of(std::error_code error) {
    if (error == std::errc::read_only_file_system || error == std::errc::permission_denied ||
        error == std::errc::operation_not_permitted)
        return "read-only";
    // EFBIG also comes from a file size limit (RLIMIT_FSIZE) and from entries beyond max_bytes.
    if (error == std::errc::no_space_on_device || error == std::errc::file_too_large ||
        error == std::error_code(EDQUOT, std::generic_category()))
        return "no space";
    if (error == std::errc::not_a_directory) return "not a directory";
    return "other";
}

WarmResult warm_one(Runtime& runtime, const KernelSpec& spec, bool with_cost) {
    WarmResult result;
    result.spec = spec;
    const auto start = std::chrono::steady_clock::now();
    try {
        const CompiledKernel kernel = runtime.prepare(spec);
        result.compile_seconds = kernel.compiled_now ? kernel.compile_seconds : 0.0;
        result.key = kernel.key;
        if (with_cost) result.cost = kernel_cost(kernel);
        if (kernel.store_error) {
            result.outcome = WarmOutcome::not_stored;
            result.not_stored_reason = not_stored_reason_of(kernel.store_error);
            result.error = kernel.store_error.message();
        } else {
            result.outcome = kernel.compiled_now ? WarmOutcome::compiled : WarmOutcome::cached;
        }
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

std::vector<WarmResult> warm_variants(Runtime& runtime, const std::vector<KernelSpec>& specs, int jobs, bool with_cost,
                                      WarmObserver& observer) {
    std::vector<WarmResult> results(specs.size());
    std::atomic<std::size_t> next{0};
    std::mutex report_mutex;
    std::size_t done = 0;
    const auto work = [&] {
        for (std::size_t index = next++; index < specs.size(); index = next++) {
            results[index] = warm_one(runtime, specs[index], with_cost);
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

void confirm_stored(std::vector<WarmResult>& results, const cache::DiskCache& disk) {
    for (WarmResult& result : results) {
        if (result.outcome != WarmOutcome::compiled && result.outcome != WarmOutcome::cached) continue;
        const auto key = cache::Key::from_hex(result.key);
        if (key && disk.holds(result.spec.arch, *key)) continue;
        result.outcome = WarmOutcome::not_stored;
        result.not_stored_reason = "missing";
        result.error =
            "not in the cache at the end: evicted to stay within the size limit, or removed by another process";
    }
}

std::string_view to_string(WarmOutcome outcome) {
    switch (outcome) {
        case WarmOutcome::compiled:
            return "compiled";
        case WarmOutcome::cached:
            return "cached";
        case WarmOutcome::not_stored:
            return "not_stored";
        case WarmOutcome::failed:
            return "failed";
    }
    return "?";
}

}  // namespace fajit::cli
