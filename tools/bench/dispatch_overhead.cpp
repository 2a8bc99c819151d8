// Nanoseconds per Runtime::attention() call on its hot path, beside a raw launch of the
// same kernel, so the difference is what the library adds to a launch.
//
//   fajit-bench-dispatch [calls] [threads]          host path on the fake backend (no GPU)
//   fajit-bench-dispatch --device [calls]           a real device (HIP or CUDA), a tiny problem
//   fajit-bench-dispatch --help
//
// The hot path is: argument checks, shape class, lock-free function-cache lookup,
// kernel arguments and launch geometry. With several threads each runs its own calls, so
// contention on the cache would show as a rising time per call.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend/device_buffer.hpp"
#include "families/registry.hpp"
#include "fajit/runtime.hpp"
#include "runtime/kernel_arguments.hpp"
#include "support/fake_backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Median over rounds of the mean time per call of a round.
double nanoseconds_per_call(const std::function<void()>& call, long calls, const std::function<void()>& settle) {
    constexpr int rounds = 7;
    std::vector<double> means;
    for (int round = 0; round < rounds; ++round) {
        settle();
        const auto start = Clock::now();
        for (long i = 0; i < calls; ++i) call();
        settle();
        means.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / calls);
    }
    std::sort(means.begin(), means.end());
    return means[rounds / 2];
}

fajit::AttentionArgs tiny_args(void* q, void* k, void* v, void* o) {
    fajit::AttentionArgs args;
    args.q = q;
    args.k = k;
    args.v = v;
    args.o = o;
    args.batch = args.heads_q = args.heads_kv = args.len_q = args.len_k = 1;
    args.head_dim = 64;
    args.dtype = fajit::DType::f16;
    args.q_strides = args.k_strides = args.v_strides = args.o_strides = {64, 64, 64};
    args.scale = 0.125f;
    return args;
}

void report(const char* where, double attention_ns, double raw_ns, int threads) {
    std::printf(
        "{\"where\": \"%s\", \"threads\": %d, \"attention_ns_per_call\": %.1f, "
        "\"raw_launch_ns_per_call\": %.1f, \"overhead_ns_per_call\": %.1f}\n",
        where, threads, attention_ns, raw_ns, attention_ns - raw_ns);
}

int run_fake(long calls, int threads) {
    auto counters = std::make_shared<fajit::FakeBackendCounters>();
    std::vector<std::unique_ptr<fajit::Backend>> backends;
    backends.push_back(fajit::make_fake_backend({}, counters));
    fajit::Backend& backend = *backends.front();
    fajit::Options options = fajit::Options::from_environment();
    options.cache_disabled = true;
    fajit::Runtime runtime(options, std::move(backends));

    alignas(16) static char memory[4][256];
    const fajit::AttentionArgs args = tiny_args(memory[0], memory[1], memory[2], memory[3]);
    const fajit::KernelSpec spec = runtime.select(args);
    const fajit::CompiledKernel compiled = runtime.prepare(spec);
    const auto raw = backend.load(0, compiled.code, compiled.lowered_name);
    const int compute_units = backend.devices().front().compute_units;
    const auto nothing = [] {};

    std::vector<double> attention(threads), launch(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            attention[t] = nanoseconds_per_call([&] { runtime.attention(args, nullptr); }, calls, nothing);
            launch[t] = nanoseconds_per_call(
                [&] {
                    const fajit::KernelArguments arguments = fajit::make_kernel_arguments(args);
                    raw->launch(fajit::launch_shape(spec, args, compute_units), &arguments, sizeof arguments, nullptr);
                },
                calls, nothing);
        });
    for (auto& thread : pool) thread.join();
    report("fake backend (host path only)", *std::max_element(attention.begin(), attention.end()),
           *std::max_element(launch.begin(), launch.end()), threads);
    return 0;
}

int run_device(long calls) {
    const auto backends = fajit::make_backends();
    std::string reasons;
    const fajit::Backend* backend = fajit::running_backend(backends, reasons);
    if (!backend) {
        std::fprintf(stderr, "fajit-bench-dispatch: no GPU device (%s)\n",
                     backends.empty() ? "no backend built" : reasons.c_str());
        return 2;
    }
    fajit::DeviceBuffer q(*backend, 0, 256), k(*backend, 0, 256), v(*backend, 0, 256), o(*backend, 0, 256);
    const fajit::AttentionArgs args = tiny_args(q.get(), k.get(), v.get(), o.get());

    fajit::Runtime runtime;
    const fajit::KernelSpec spec = runtime.select(args);
    const fajit::CompiledKernel compiled = runtime.prepare(spec);
    const auto raw = backend->load(0, compiled.code, compiled.lowered_name);
    const int compute_units = backend->devices().front().compute_units;
    const auto settle = [&] { backend->synchronize(0); };
    const double attention = nanoseconds_per_call([&] { runtime.attention(args, nullptr); }, calls, settle);
    const double launch = nanoseconds_per_call(
        [&] {
            const fajit::KernelArguments arguments = fajit::make_kernel_arguments(args);
            if (auto error =
                    raw->launch(fajit::launch_shape(spec, args, compute_units), &arguments, sizeof arguments, nullptr);
                !error.empty())
                std::fprintf(stderr, "raw launch: %s\n", error.c_str());
        },
        calls, settle);
    std::printf("# %s\n", fajit::to_string(spec).c_str());
    report("device (launch included, queue drained each round)", attention, launch, 1);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "fajit-bench-dispatch: nanoseconds per Runtime::attention() call on its hot path, beside a raw launch of "
        "the same kernel; prints one JSON line"};
    bool device = false;
    long calls = 0;
    int threads = 1;
    app.add_flag("--device", device, "time on the first device of a real backend (HIP or CUDA), launches included");
    app.add_option("calls", calls, "calls per timed round (default 1000000 on the fake backend, 20000 on a device)")
        ->check(CLI::PositiveNumber);
    app.add_option("threads", threads, "threads calling at once, on the fake backend")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.footer("Exit status: 0 success, 1 bad usage, 2 no device or a failed call.");
    try {
        app.parse(argc, argv);
        if (device && app.count("threads")) throw CLI::ValidationError("threads", "--device times one thread");
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : 1;
    }
    try {
        if (device) return run_device(calls ? calls : 20000);
        return run_fake(calls ? calls : 1000000, threads);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "fajit-bench-dispatch: %s\n", error.what());
        return 2;
    }
}
