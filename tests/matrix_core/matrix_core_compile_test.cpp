// A family of fa_matrix_core.h (matrix_core_family.hpp: wmma-gfx11 or mfma-gfx9) compiles
// for every variant it accepts: through HIPRTC for its native targets (gfx1151 and gfx1100;
// gfx942 and gfx90a), with the matrix instructions, registers, LDS and barriers checked in
// the ISA, and through NVRTC for sm_90a (the emulation); ragged and paged K/V through a
// covering sample (tests/support/batched_sample.hpp), for the first native target with the
// same ISA checks. No GPU is needed; a missing compiler or LLVM tool is a skip with its
// reason, never a failure.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "codegen/emitter.hpp"
#include "codegen/isa_report.hpp"
#include "families/registry.hpp"
#include "matrix_core_family.hpp"
#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

using TileConfig = MatrixCoreTiles;

const MatrixCoreFamily& family = tested_family();

KernelSpec family_spec(const std::string& arch, int head_dim, DType dtype, TileConfig tiles, float margin,
                       CausalMode causal) {
    KernelSpec spec;
    spec.family = family.name;
    spec.arch = arch;
    spec.head_dim = head_dim;
    spec.dtype = dtype;
    spec.waves = tiles.waves;
    spec.block_q = 16 * tiles.waves;
    spec.block_k = tiles.block_k;
    spec.rescale_margin = margin;
    spec.causal = causal;
    return spec;
}

// The tiles the dispatcher gives a head dim.
TileConfig default_tiles(int head_dim) {
    KernelSpec spec;
    spec.family = family.name;
    spec.head_dim = head_dim;
    spec = with_family_defaults(spec);
    return {spec.waves, spec.block_k};
}

// The measured head dims with every tiling, margin and causal mode; the rest of the sample
// (every head dim when exhaustive) with the dispatcher's tiles and margin 10.
std::vector<KernelSpec> sweep_specs(const std::string& arch) {
    std::vector<KernelSpec> specs;
    for (int head_dim : family_head_dims(family.name)) {
        const bool measured = measured_head_dim(head_dim);
        for (DType dtype : {DType::f16, DType::bf16})
            for (TileConfig tiles : measured ? family.tile_configs(head_dim) : std::vector{default_tiles(head_dim)})
                for (float margin : {0.0f, 10.0f})
                    for (CausalMode causal : {CausalMode::none, CausalMode::bottom_right})
                        if (measured || margin != 0.0f)
                            specs.push_back(family_spec(arch, head_dim, dtype, tiles, margin, causal));
    }
    return specs;
}

struct SweepResult {
    KernelSpec spec;
    bool ok = false;
    std::string log;
    std::size_t code_bytes = 0;
    double seconds = 0.0;
    std::optional<IsaReport> isa;
    std::string isa_error;
};

// Compiles every spec on `workers` threads (the compilers are the bottleneck and
// both are safe to call concurrently); the ISA report runs for AMD targets.
std::vector<SweepResult> run_sweep(const std::vector<KernelSpec>& specs, const Backend& backend, bool report,
                                   int workers = 2) {
    std::vector<SweepResult> results(specs.size());
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t i = next++; i < specs.size(); i = next++) {
            SweepResult& result = results[i];
            result.spec = specs[i];
            const auto start = std::chrono::steady_clock::now();
            CompileResult compiled = compile_directly(specs[i], backend);
            result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            result.ok = compiled.ok;
            result.log = compiled.log;
            result.code_bytes = compiled.code.size();
            if (compiled.ok && report) result.isa = isa_report(compiled.code, specs[i].arch, &result.isa_error);
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& thread : pool) thread.join();
    return results;
}

std::string short_name(const KernelSpec& spec) {
    std::string kv(to_string(spec.kv_layout));
    if (spec.kv_layout == KvLayout::paged) kv += "/" + std::to_string(spec.page_size);
    char text[160];
    std::snprintf(text, sizeof text, "%-22s d=%-3d %-4s bq=%-2d bk=%-2d m=%-2g %-12s %-9s", spec.arch.c_str(),
                  spec.head_dim, std::string(to_string(spec.dtype)).c_str(), spec.block_q, spec.block_k,
                  static_cast<double>(spec.rescale_margin), std::string(to_string(spec.causal)).c_str(), kv.c_str());
    return text;
}

// The matrix instructions a wave's key step needs at the least: S^T over key tiles x dim
// tiles, and O^T over key tiles x value tiles.
int minimum_matrix_instructions(const KernelSpec& spec) {
    const int key_tiles = spec.block_k / 16;
    return key_tiles * ((spec.head_dim + 15) / 16 + (value_head_dim(spec) + 15) / 16);
}

// Compiles `specs` for the native targets and checks the ISA facts every variant must
// hold: the family's matrix instructions at the wave size, exactly the minimum of them per
// key step, the host's LDS size exactly, no scratch or spills up to head dim 128 (where,
// on CDNA, VGPRs and AGPRs leave room for two waves per SIMD), and at most two barriers
// per key step.
void check_native_sweep(const char* title, const std::vector<KernelSpec>& specs, const Backend& backend) {
    const auto start = std::chrono::steady_clock::now();
    const auto results = run_sweep(specs, backend, true);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::printf("\n%s (%zu variants, %.1f s on 2 threads)\n", title, results.size(), wall);
    std::printf("%-82s %5s %5s %5s %6s %7s %6s %6s %7s %5s %6s %5s %6s\n", "variant", "vgpr", "agpr", "sgpr", "lds",
                "scratch", "spills", "matrix", "mat/it", "bar", "bar/it", "ds", "sec");
    int reported = 0;
    for (const auto& result : results) {
        CHECK_MESSAGE(result.ok, to_string(result.spec), ": ", result.log);
        if (!result.ok) continue;
        if (!result.isa) {
            std::printf("%s  (no ISA report: %s)\n", short_name(result.spec).c_str(), result.isa_error.c_str());
            continue;
        }
        const IsaReport& isa = *result.isa;
        ++reported;
        const int matrix = family.wave_size == 64 ? isa.mfma_instructions : isa.wmma_instructions;
        const int minimum = minimum_matrix_instructions(result.spec);
        std::printf("%-82s %5d %5d %5d %6lld %7lld %6d %6d %3d/%-3d %5d %6d %5d %6.2f\n",
                    short_name(result.spec).c_str(), isa.vgprs, std::max(isa.agprs, 0), isa.sgprs, isa.lds_bytes,
                    isa.scratch_bytes, std::max(isa.vgpr_spills, 0) + std::max(isa.sgpr_spills, 0), matrix,
                    isa.loop_matrix_instructions, minimum, isa.barrier_instructions, isa.loop_barriers,
                    isa.lds_instructions, result.seconds);
        const std::string name = to_string(result.spec);
        CHECK_MESSAGE(matrix > 0, name);
        CHECK_MESSAGE(isa.wave_size == family.wave_size, name);
        // No more matrix instructions per key step than the step's products need.
        CHECK_MESSAGE(isa.loop_matrix_instructions == minimum, name);
        CHECK_MESSAGE(isa.lds_bytes <= 64 * 1024, name);
        // The host's size for the launch is the template's layout, byte for byte.
        CHECK_MESSAGE(isa.lds_bytes == shared_layout(result.spec).shared_bytes, name);
        if (result.spec.head_dim <= 128) {
            CHECK_MESSAGE(isa.scratch_bytes == 0, name);
            CHECK_MESSAGE(isa.vgpr_spills <= 0, name);
            // AGPRs are allocated after the VGPRs rounded up to 4.
            if (family.unified_agprs) CHECK_MESSAGE((isa.vgprs + 3) / 4 * 4 + std::max(isa.agprs, 0) <= 256, name);
        }
        CHECK_MESSAGE(isa.loop_barriers <= 2, name);
    }
    if (reported == 0 && !results.empty())
        MESSAGE(
            "ISA checks skipped: " << (results.front().isa_error.empty() ? "no report" : results.front().isa_error));
}

std::optional<IsaReport> default_d128_report(std::string* why) {
    const std::string& arch = family.native_archs.front();
    const Backend* backend = compiler_for(arch);
    if (!backend) {
        *why = "no HIPRTC";
        return std::nullopt;
    }
    const auto spec = family_spec(arch, 128, DType::f16, {4, 64}, 10.0f, CausalMode::bottom_right);
    const auto compiled = compile_directly(spec, *backend);
    REQUIRE_MESSAGE(compiled.ok, compiled.log);
    return isa_report(compiled.code, spec.arch, why);
}

}  // namespace

TEST_CASE(MATRIX_CORE_FAMILY
          " sweep: the sampled head dims, dtypes, tilings, margins and causal modes compile for its native targets "
          "via HIPRTC") {
    std::vector<KernelSpec> specs;
    const Backend* backend = nullptr;
    for (const std::string& arch : family.native_archs) {
        backend = compiler_for(arch);
        if (!backend) return;
        for (auto& spec : sweep_specs(arch)) {
            REQUIRE_MESSAGE(validate(spec).empty(), validate(spec));
            specs.push_back(spec);
        }
    }
    check_native_sweep(MATRIX_CORE_FAMILY " HIPRTC sweep", specs, *backend);
}

TEST_CASE(MATRIX_CORE_FAMILY
          " takes ragged and paged K/V: a covering sample compiles for its first native target with the same ISA "
          "facts") {
    const std::string& arch = family.native_archs.front();
    const Backend* backend = compiler_for(arch);
    if (!backend) return;
    const auto specs = batched_sample(family.name, {arch}, family_head_dims(family.name));
    for (const KernelSpec& spec : specs) REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
    check_native_sweep(MATRIX_CORE_FAMILY " batched HIPRTC sample", specs, *backend);
}

TEST_CASE(MATRIX_CORE_FAMILY " emulation takes ragged and paged K/V: a sample compiles for sm_90a via NVRTC") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (const KernelSpec& spec : batched_sample(family.name, {"sm_90a"}, {64, 128}))
        if (spec.page_size <= 1) specs.push_back(spec);  // ragged, and paged with every row looked up
    const auto results = run_sweep(specs, *backend, false);
    for (const auto& result : results) CHECK_MESSAGE(result.ok, to_string(result.spec), ": ", result.log);
    std::printf(MATRIX_CORE_FAMILY " NVRTC sm_90a batched sample: %zu variants\n", results.size());
}

TEST_CASE(MATRIX_CORE_FAMILY " sweep: every variant compiles for sm_90a via NVRTC (the emulation)") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    const auto specs = sweep_specs("sm_90a");
    const auto start = std::chrono::steady_clock::now();
    const auto results = run_sweep(specs, *backend, false);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int compiled = 0;
    for (const auto& result : results) {
        CHECK_MESSAGE(result.ok, to_string(result.spec), ": ", result.log);
        compiled += result.ok;
    }
    std::printf(MATRIX_CORE_FAMILY " NVRTC sm_90a sweep: %d of %zu variants compiled in %.1f s\n", compiled,
                results.size(), wall);
}

TEST_CASE(MATRIX_CORE_FAMILY " d=128 key loop: matrix instructions and s_barrier per key-block iteration") {
    std::string why;
    const auto isa = default_d128_report(&why);
    if (!isa) {
        MESSAGE("skipped: " << why);
        return;
    }
    std::printf("\nd=128 f16 bq=64 bk=64 waves=4 on %s:\n%s", family.native_archs.front().c_str(),
                format_isa_report(*isa).c_str());
    std::printf("s_barrier per key-block iteration: %d (target <= 2)\n", isa->loop_barriers);
    // The key loop is the loop holding the matrix instructions: 64 per step (32 for
    // S^T over 4 key tiles x 8 dim tiles, 32 for O^T), the minimum of 16x16x16 products.
    CHECK(isa->loop_matrix_instructions == 64);
    CHECK(isa->loop_barriers >= 1);
    CHECK(isa->loop_barriers <= 2);
}

TEST_CASE(MATRIX_CORE_FAMILY " d=128 HIPRTC compile time, median of 5") {
    const std::string& arch = family.native_archs.front();
    const Backend* backend = compiler_for(arch);
    if (!backend) return;
    const auto spec = family_spec(arch, 128, DType::f16, {4, 64}, 10.0f, CausalMode::bottom_right);
    std::vector<double> seconds;
    for (int i = 0; i < 5; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const auto result = compile_directly(spec, *backend);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        REQUIRE_MESSAGE(result.ok, result.log);
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("HIPRTC compile of %s: median %.3f s (min %.3f, max %.3f)\n", to_string(spec).c_str(), seconds[2],
                seconds.front(), seconds.back());
    CHECK(seconds[2] < 30.0);
}

TEST_CASE(MATRIX_CORE_FAMILY " launch geometry: dynamic shared memory on NVIDIA, static LDS on AMD") {
    AttentionArgs args;
    args.batch = 2;
    args.heads_q = 8;
    args.len_q = 1000;
    const TileConfig tiles = family.large_layout_tiles;
    const int head_dim = family.large_layout_head_dim;
    const auto nvidia = family_spec("sm_90a", head_dim, DType::bf16, tiles, 10.0f, CausalMode::none);
    const auto shape = launch_shape(nvidia, args, 0);
    const int block_q = 16 * tiles.waves;
    CHECK(shape.grid[0] == static_cast<unsigned>((1000 + block_q - 1) / block_q));
    CHECK(shape.grid[1] == 8);
    CHECK(shape.grid[2] == 2);
    // A wave is the family's wave on every target: on NVIDIA wave64 is two warps.
    CHECK(shape.block[0] == static_cast<unsigned>(tiles.waves * family.wave_size));
    const unsigned d = static_cast<unsigned>(head_dim), k = static_cast<unsigned>(tiles.block_k);
    const unsigned q_rows = family.wave_size == 32 ? 16u * static_cast<unsigned>(tiles.waves) : 0u;  // Q staged
    CHECK(shape.shared_bytes == 2 * (k * (d + 8) + d * (k + 8) + q_rows * (d + 8)));
    CHECK(shape.shared_bytes > 48 * 1024);  // the case that needs the opt-in on NVIDIA
    auto amd = nvidia;
    amd.arch = family.native_archs.front();
    CHECK(launch_shape(amd, args, 0).shared_bytes == 0);
    CHECK(launch_shape(amd, args, 0).block[0] == static_cast<unsigned>(tiles.waves * family.wave_size));

    KernelSpec scalar;
    scalar.family = "scalar";
    scalar.arch = "sm_90a";
    scalar = with_family_defaults(scalar);
    CHECK(launch_shape(scalar, args, 0).shared_bytes == 0);  // its one array is static
    CHECK_FALSE(shared_layout(scalar).dynamic);
}

TEST_CASE(MATRIX_CORE_FAMILY " validation keeps LDS within 64 KiB and defaults fit every head dim") {
    const std::string& arch = family.native_archs.front();
    auto too_big = family_spec(arch, 256, DType::f16, {4, 64}, 10.0f, CausalMode::none);
    const std::string error = validate(too_big);
    CHECK(error.find("bk=64") != std::string::npos);
    CHECK(error.find("LDS") != std::string::npos);
    for (int head_dim = 16; head_dim <= 256; head_dim += 8) {  // every head dim: host arithmetic only
        const auto parsed = parse_spec("family=" + family.name + ",d=" + std::to_string(head_dim) +
                                       ",dtype=bf16,margin=40,arch=" + arch);
        CHECK_MESSAGE(parsed.spec.has_value(), head_dim, ": ", parsed.error);
        if (parsed.spec) CHECK(shared_layout(*parsed.spec).shared_bytes <= 64u * 1024u);
    }
    CHECK_FALSE(parse_spec("family=" + family.name + ",d=128,dtype=f16,margin=12,arch=" + arch).spec.has_value());
    CHECK(parse_spec("family=" + family.name + ",d=128,dtype=f16,waves=8,bq=128,arch=" + arch).spec.has_value());
    const auto wrong_rows = parse_spec("family=" + family.name + ",d=128,dtype=f16,waves=4,bq=32,arch=" + arch);
    CHECK_FALSE(wrong_rows.spec.has_value());
    CHECK(wrong_rows.error.find("bq=32") != std::string::npos);
}
