// Times the tile candidates of the NVIDIA tensor-core families the device runs
// (mma-sm80, and wgmma-sm90 on sm_90a) on the seed shape (B=1, Hq=32, Hkv=8, Lq=2048,
// causal bottom-right) and prints TFLOP/s per candidate, counting only the FLOPs the
// mask leaves: 4 * D * Hq * (Lq * (Lk - Lq) + Lq * (Lq + 1) / 2). A benchmark, not a
// test: it exits 0 whatever the speed, 1 when there is no device or a launch fails.
//
//   mma_tile_bench                  D=128 candidates, f16 and bf16, Lk 2048/8192/16384,
//                                   then D=64 and D=256 candidates at Lk=16384 (f16)
//   mma_tile_bench [FAMILY] [D...]  only that family, only the listed head dims (all
//                                   three Lk, both dtypes)
//   mma_tile_bench --help
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "fajit/runtime.hpp"
#include "mma/mma_candidates.hpp"
#include "support/event_timer.hpp"
#include "support/half_precision.hpp"
#include "support/test_device.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

constexpr int heads_q = 32;
constexpr int heads_kv = 8;
constexpr int len_q = 2048;
constexpr int max_len_k = 16384;

double causal_flops(int head_dim, int len_k) {
    return 4.0 * head_dim * heads_q * (double(len_q) * (len_k - len_q) + double(len_q) * (len_q + 1) / 2.0);
}

// Values uniform in [-1, 1), as bits of the element type; xorshift keeps 100M draws fast.
std::vector<std::uint16_t> random_bits(std::size_t count, DType dtype, std::uint64_t seed) {
    std::vector<std::uint16_t> bits(count);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& value : bits) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const float x = static_cast<float>(state >> 40) / 8388608.0f - 1.0f;
        value = dtype == DType::f16 ? to_f16_bits(x) : to_bf16_bits(x);
    }
    return bits;
}

struct Problem {
    int head_dim;
    DType dtype;
    DeviceBuffer q, k, v, o;

    Problem(int d, DType type)
        : head_dim(d),
          dtype(type),
          q(device_buffer(std::size_t(heads_q) * len_q * d * 2)),
          k(device_buffer(std::size_t(heads_kv) * max_len_k * d * 2)),
          v(device_buffer(std::size_t(heads_kv) * max_len_k * d * 2)),
          o(device_buffer(std::size_t(heads_q) * len_q * d * 2)) {
        q.upload(random_bits(q.size() / 2, dtype, 1));
        k.upload(random_bits(k.size() / 2, dtype, 2));
        v.upload(random_bits(v.size() / 2, dtype, 3));
    }

    AttentionArgs args(int len_k) const {
        AttentionArgs a;
        a.q = q.get();
        a.k = k.get();
        a.v = v.get();
        a.o = o.get();
        a.dtype = dtype;
        a.batch = 1;
        a.heads_q = heads_q;
        a.heads_kv = heads_kv;
        a.len_q = len_q;
        a.len_k = len_k;
        a.head_dim = head_dim;
        // BHSD; K and V keep their full-length strides whatever len_k is timed.
        a.q_strides =
            a.o_strides = {std::int64_t(heads_q) * len_q * head_dim, std::int64_t(len_q) * head_dim, head_dim};
        a.k_strides =
            a.v_strides = {std::int64_t(heads_kv) * max_len_k * head_dim, std::int64_t(max_len_k) * head_dim, head_dim};
        a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        a.causal = CausalMode::bottom_right;
        return a;
    }

    // True when every output element is finite: a fast kernel that computes garbage
    // must not enter the table.
    bool output_finite() const {
        for (std::uint16_t bits : o.download<std::uint16_t>()) {
            const float x = dtype == DType::f16 ? from_f16_bits(bits) : from_bf16_bits(bits);
            if (!std::isfinite(x)) return false;
        }
        return true;
    }
};

// Best average over three batches of launches, each batch at least ~30 ms of GPU time.
double time_ms(Runtime& runtime, const KernelSpec& spec, const AttentionArgs& args) {
    EventTimer timer(test_backend(), test_device);
    runtime.run(spec, args, nullptr);  // loads the module
    timer.start();
    runtime.run(spec, args, nullptr);
    const float once = timer.stop();
    const int launches = std::clamp(static_cast<int>(30.0f / std::max(once, 0.001f)), 3, 200);
    double best = 1e30;
    for (int batch = 0; batch < 3; ++batch) {
        timer.start();
        for (int i = 0; i < launches; ++i) runtime.run(spec, args, nullptr);
        best = std::min(best, static_cast<double>(timer.stop()) / launches);
    }
    return best;
}

KernelSpec candidate_spec(const std::string& family, const std::string& arch, int head_dim, DType dtype,
                          const Tiles& tiles) {
    return with_tiles(family_spec(family, arch, head_dim, dtype, CausalMode::bottom_right, 10.0f), tiles);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "mma_tile_bench: TFLOP/s of the tile candidates of mma-sm80 and wgmma-sm90 on the seed shape (B=1, "
        "Hq=32, Hkv=8, Lq=2048, causal bottom-right), counting only the FLOPs the mask leaves"};
    std::vector<std::string> words;
    app.add_option("family-and-head-dims", words,
                   "[FAMILY] [D...]: only that family (mma-sm80, wgmma-sm90), only those head dims, at Lk "
                   "2048/8192/16384 in f16 and bf16 (default: D=128 both dtypes, then D=64 and D=256 in f16 at "
                   "Lk=16384)");
    app.footer("Exit status: 0 whatever the speed, 1 without a device or when a launch fails.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : 1;
    }
    if (auto reason = test_device_unavailable_reason(); !reason.empty()) {
        std::printf("no device: %s\n", reason.c_str());
        return 1;
    }
    Options options = Options::from_environment();
    options.cache_dir = std::filesystem::temp_directory_path() / "fa-jit-bench-cache";
    options.log_level = "warn";
    Runtime runtime(options);
    const Device device = runtime.devices().at(0);
    std::printf("device: %s (%s, %d SMs)\n", device.name.c_str(), device.arch.c_str(), device.compute_units);

    struct Run {
        int head_dim;
        DType dtype;
        std::vector<int> len_k;
    };
    std::vector<std::string> families = tensor_core_families(device.arch);
    std::size_t first_dim_word = 0;
    if (!words.empty())
        if (find_family(words.front())) {
            families = {words.front()};
            first_dim_word = 1;
        }
    std::vector<Run> runs;
    if (words.size() > first_dim_word) {
        for (std::size_t i = first_dim_word; i < words.size(); ++i)
            for (DType dtype : {DType::f16, DType::bf16})
                runs.push_back({std::stoi(words[i]), dtype, {2048, 8192, 16384}});
    } else {
        for (DType dtype : {DType::f16, DType::bf16}) runs.push_back({128, dtype, {2048, 8192, 16384}});
        runs.push_back({64, DType::f16, {16384}});
        runs.push_back({256, DType::f16, {16384}});
    }

    // Compile every variant first, on all cores.
    std::vector<KernelSpec> specs;
    for (const std::string& family : families)
        for (const auto& run : runs)
            for (const auto& tiles : tile_candidates(family, run.head_dim))
                if (auto spec = candidate_spec(family, device.arch, run.head_dim, run.dtype, tiles);
                    validate(spec).empty())
                    specs.push_back(spec);
    {
        std::vector<std::thread> pool;
        const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                for (std::size_t i = t; i < specs.size(); i += threads) runtime.prepare(specs[i]);
            });
        for (auto& thread : pool) thread.join();
    }

    std::printf("%-5s %-5s %-28s %8s %8s %8s   (TFLOP/s, causal bottom-right, B=1 Hq=32 Hkv=8 Lq=2048)\n", "D", "dtype",
                "family waves/bq/bk", "Lk=2048", "Lk=8192", "Lk=16384");
    int status = 0;
    for (const auto& run : runs) {
        Problem problem(run.head_dim, run.dtype);
        for (const std::string& family : families)
            for (const auto& tiles : tile_candidates(family, run.head_dim)) {
                const KernelSpec spec = candidate_spec(family, device.arch, run.head_dim, run.dtype, tiles);
                const std::string tile_text = family + " " + std::to_string(tiles.waves) + "/" +
                                              std::to_string(tiles.block_q) + "/" + std::to_string(tiles.block_k);
                if (auto error = validate(spec); !error.empty()) {
                    std::printf("%-5d %-5s %-28s skipped: %s\n", run.head_dim,
                                std::string(to_string(run.dtype)).c_str(), tile_text.c_str(), error.c_str());
                    continue;
                }
                std::string cells;
                for (int len_k : {2048, 8192, 16384}) {
                    char cell[16] = "       -";
                    if (std::find(run.len_k.begin(), run.len_k.end(), len_k) != run.len_k.end()) {
                        try {
                            const double ms = time_ms(runtime, spec, problem.args(len_k));
                            if (problem.output_finite())
                                std::snprintf(cell, sizeof cell, "%8.1f", causal_flops(run.head_dim, len_k) / ms / 1e9);
                            else
                                std::snprintf(cell, sizeof cell, "%8s", "NaN-out");
                        } catch (const std::exception& error) {
                            std::printf("%s: %s\n", to_string(spec).c_str(), error.what());
                            status = 1;
                        }
                    }
                    cells += std::string(" ") + cell;
                }
                std::printf("%-5d %-5s %-28s%s\n", run.head_dim, std::string(to_string(run.dtype)).c_str(),
                            tile_text.c_str(), cells.c_str());
                std::fflush(stdout);
            }
    }
    return status;
}
