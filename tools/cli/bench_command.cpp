// fa-jit bench: times the variant the library selects for a shape against the fallback
// fallback, on one device, with the same inputs. Each figure is the wall time of `reps`
// back-to-back calls between two synchronizations, after warm-up calls, so compiling
// and loading stay out of it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <random>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"

namespace fajit::cli {
namespace {

// The inputs bench fills: 16-bit floats and f32. e4m3 takes an output dtype and descale
// factors of its own, which bench does not make.
const std::vector<std::string> bench_dtypes = {"f16", "bf16", "f32"};

struct BenchOptions {
    int batch = 1;
    int heads_q = 32;
    int heads_kv = 8;
    int len_q = 2048;
    int len_k = 2048;
    int head_dim = 128;
    std::string dtype = "f16";
    std::string causal = "bottom-right";
    int device = 0;
    int warmup = 3;
    int reps = 20;
    int fallback_reps = 3;  // the fallback is ~100x slower; a few calls time it well enough
};

// Random values of magnitude in [0.5, 1) with random signs, written directly as the
// element type's bits, so no float conversion is needed on the host.
std::vector<std::uint16_t> random_halves(std::size_t count, DType dtype, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::vector<std::uint16_t> bits(count);
    for (auto& value : bits) {
        const auto random = generator();
        const std::uint16_t sign = (random & 1u) << 15;
        value = dtype == DType::f16 ? sign | (14u << 10) | ((random >> 1) & 0x3ffu)
                                    : sign | (126u << 7) | ((random >> 1) & 0x7fu);
    }
    return bits;
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (auto& value : values) value = uniform(generator);
    return values;
}

// The query-key pairs the causal mode leaves, as the kernels count them.
double visible_pairs(const AttentionArgs& args) {
    double pairs = 0;
    for (int row = 0; row < args.len_q; ++row) {
        long long limit = args.len_k;
        if (args.causal == CausalMode::top_left) limit = row + 1;
        if (args.causal == CausalMode::bottom_right) limit = static_cast<long long>(args.len_k) - args.len_q + row + 1;
        pairs += static_cast<double>(std::clamp<long long>(limit, 0, args.len_k));
    }
    return pairs;
}

double milliseconds_per_call(Runtime& runtime, const Backend& backend, const AttentionArgs& args, int warmup,
                             int reps) {
    for (int i = 0; i < warmup; ++i) runtime.attention(args, nullptr);
    backend.synchronize(args.device);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) runtime.attention(args, nullptr);
    backend.synchronize(args.device);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
}

int run_bench(const CommonOptions& common, const BenchOptions& bench) {
    const Options options = resolve_options(common);
    AttentionArgs args;
    const DType dtype = *parse_dtype(bench.dtype);  // --dtype admits bench_dtypes only
    const auto causal = parse_causal(bench.causal);
    if (!causal) throw UsageError("--causal=" + bench.causal + ": expected none, top-left or bottom-right");
    args.dtype = dtype;
    args.causal = *causal;
    args.batch = bench.batch;
    args.heads_q = bench.heads_q;
    args.heads_kv = bench.heads_kv;
    args.len_q = bench.len_q;
    args.len_k = bench.len_k;
    args.head_dim = bench.head_dim;
    args.device = bench.device;
    args.scale = 1.0f / std::sqrt(static_cast<float>(bench.head_dim));
    const std::int64_t d = bench.head_dim;
    args.q_strides = args.o_strides = {bench.heads_q * bench.len_q * d, bench.len_q * d, d};
    args.k_strides = args.v_strides = {bench.heads_kv * bench.len_k * d, bench.len_k * d, d};

    // Shape errors are errors of use, found before any device is touched.
    args.q = args.k = args.v = args.o = reinterpret_cast<void*>(std::uintptr_t{256});
    if (auto error = check_arguments(args); !error.empty()) throw UsageError(error);

    const auto backends = make_backends();
    std::string reasons;
    const Backend* runner = running_backend(backends, reasons);
    if (!runner) {
        std::cerr << "fa-jit bench: no GPU device (" << (reasons.empty() ? "no backend built" : reasons) << ")\n";
        return exit_failed;
    }

    const std::size_t element = dtype == DType::f32 ? 4 : 2;
    const std::size_t q_count = std::size_t(bench.batch) * bench.heads_q * bench.len_q * bench.head_dim;
    const std::size_t kv_count = std::size_t(bench.batch) * bench.heads_kv * bench.len_k * bench.head_dim;
    DeviceBuffer q(*runner, bench.device, q_count * element), k(*runner, bench.device, kv_count * element),
        v(*runner, bench.device, kv_count * element), o(*runner, bench.device, q_count * element);
    std::uint64_t seed = 1;
    for (auto [buffer, count] : {std::pair{&q, q_count}, {&k, kv_count}, {&v, kv_count}}) {
        if (dtype == DType::f32)
            buffer->upload(random_floats(count, seed++));
        else
            buffer->upload(random_halves(count, dtype, seed++));
    }
    args.q = q.get();
    args.k = k.get();
    args.v = v.get();
    args.o = o.get();

    Runtime selected(options);
    Options fallback_options = options;
    fallback_options.force_fallback = true;
    Runtime fallback(fallback_options);
    const double flops = 4.0 * bench.head_dim * bench.batch * bench.heads_q * visible_pairs(args);

    struct Timing {
        std::string name;
        std::string spec;
        double ms;
    };
    const std::string selected_spec = to_string(selected.select(args));
    const double selected_ms = milliseconds_per_call(selected, *runner, args, bench.warmup, bench.reps);
    const std::string fallback_spec = to_string(fallback.select(args));
    const double fallback_ms = milliseconds_per_call(fallback, *runner, args, 1, bench.fallback_reps);
    const Timing timings[] = {{"selected", selected_spec, selected_ms}, {"fallback", fallback_spec, fallback_ms}};

    if (common.json) {
        nlohmann::json report = {{"shape",
                                  {{"batch", bench.batch},
                                   {"heads_q", bench.heads_q},
                                   {"heads_kv", bench.heads_kv},
                                   {"len_q", bench.len_q},
                                   {"len_k", bench.len_k},
                                   {"head_dim", bench.head_dim},
                                   {"dtype", bench.dtype},
                                   {"causal", bench.causal}}},
                                 {"flops", flops},
                                 {"speedup", fallback_ms / selected_ms}};
        for (const auto& timing : timings)
            report[timing.name] = {{"spec", timing.spec}, {"ms", timing.ms}, {"tflops", flops / timing.ms / 1e9}};
        std::cout << report.dump(2) << "\n";
        return exit_success;
    }
    std::cout << std::fixed << std::setprecision(3);
    for (const auto& timing : timings)
        std::cout << std::left << std::setw(9) << timing.name << std::right << std::setw(10) << timing.ms << " ms  "
                  << std::setw(8) << std::setprecision(1) << flops / timing.ms / 1e9 << " TFLOP/s  " << timing.spec
                  << "\n"
                  << std::setprecision(3);
    std::cout << "speedup over the fallback: " << std::setprecision(1) << fallback_ms / selected_ms << "x\n";
    return exit_success;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
    auto common = std::make_shared<CommonOptions>();
    auto bench = std::make_shared<BenchOptions>();
    auto* command = app.add_subcommand("bench", "time the selected variant against the fallback on a GPU");
    add_common_options(*command, *common);
    command->add_option("--batch", bench->batch, "batch size")->capture_default_str();
    command->add_option("--heads-q", bench->heads_q, "query heads")->capture_default_str();
    command->add_option("--heads-kv", bench->heads_kv, "key/value heads")->capture_default_str();
    command->add_option("--len-q", bench->len_q, "query length")->capture_default_str();
    command->add_option("--len-k", bench->len_k, "key length")->capture_default_str();
    command->add_option("--head-dim", bench->head_dim, "head dim")->capture_default_str();
    command->add_option("--dtype", bench->dtype, "f16, bf16 or f32")
        ->check(CLI::IsMember(bench_dtypes))
        ->capture_default_str();
    command->add_option("--causal", bench->causal, "none, top-left or bottom-right")->capture_default_str();
    command->add_option("--device", bench->device, "device ordinal")->capture_default_str();
    // Each figure is a wall time divided by its call count, which must not be 0.
    const CLI::Range at_least_one(1, std::numeric_limits<int>::max());
    command->add_option("--warmup", bench->warmup, "untimed calls first")
        ->check(CLI::Range(0, std::numeric_limits<int>::max()))
        ->capture_default_str();
    command->add_option("--reps", bench->reps, "timed calls of the selected variant")
        ->check(at_least_one)
        ->capture_default_str();
    command->add_option("--fallback-reps", bench->fallback_reps, "timed calls of the fallback")
        ->check(at_least_one)
        ->capture_default_str();
    return {command, [common, bench] { return run_bench(*common, *bench); }};
}

}  // namespace fajit::cli
