// The wmma-gfx11 family compiles for every variant it accepts: through HIPRTC for
// gfx1151 and gfx1100 (native WMMA, checked in the ISA) and through NVRTC for sm_90a
// (the emulation); ragged and paged K/V through a covering sample
// (tests/support/batched_sample.hpp), for gfx1151 with the same ISA checks. No GPU is needed; a missing compiler or
// LLVM tool is a skip with its reason, never a failure.
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
#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct TileConfig {
    int waves;
    int block_k;
};

// Two tilings per head dim; 256 needs smaller steps to fit K, V^T and Q in 64 KiB.
std::vector<TileConfig> tile_configs(int head_dim) {
    if ((head_dim + 15) / 16 * 16 > 128) return {{2, 32}, {4, 16}};
    return {{4, 64}, {2, 32}};
}

KernelSpec wmma_spec(const std::string& arch, int head_dim, DType dtype, TileConfig tiles, float margin,
                     CausalMode causal) {
    KernelSpec spec;
    spec.family = "wmma-gfx11";
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
    spec.family = "wmma-gfx11";
    spec.head_dim = head_dim;
    spec = with_family_defaults(spec);
    return {spec.waves, spec.block_k};
}

// The measured head dims with every tiling, margin and causal mode; the rest of the sample
// (every head dim when exhaustive) with the dispatcher's tiles and margin 10.
std::vector<KernelSpec> sweep_specs(const std::string& arch) {
    std::vector<KernelSpec> specs;
    for (int head_dim : family_head_dims("wmma-gfx11")) {
        const bool measured = measured_head_dim(head_dim);
        for (DType dtype : {DType::f16, DType::bf16})
            for (TileConfig tiles : measured ? tile_configs(head_dim) : std::vector{default_tiles(head_dim)})
                for (float margin : {0.0f, 10.0f})
                    for (CausalMode causal : {CausalMode::none, CausalMode::bottom_right})
                        if (measured || margin != 0.0f)
                            specs.push_back(wmma_spec(arch, head_dim, dtype, tiles, margin, causal));
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
    std::snprintf(text, sizeof text, "%-8s d=%-3d %-4s bq=%-2d bk=%-2d m=%-2g %-12s %-9s", spec.arch.c_str(),
                  spec.head_dim, std::string(to_string(spec.dtype)).c_str(), spec.block_q, spec.block_k,
                  static_cast<double>(spec.rescale_margin), std::string(to_string(spec.causal)).c_str(), kv.c_str());
    return text;
}

// Compiles `specs` for gfx11 and checks the ISA facts every variant must hold: WMMA in
// wave32, the host's LDS size exactly, no scratch or spills up to head dim 128, and at
// most two barriers per key step.
void check_gfx11_sweep(const char* title, const std::vector<KernelSpec>& specs, const Backend& backend) {
    const auto start = std::chrono::steady_clock::now();
    const auto results = run_sweep(specs, backend, true);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    std::printf("\n%s (%zu variants, %.1f s on 2 threads)\n", title, results.size(), wall);
    std::printf("%-68s %5s %5s %6s %7s %6s %5s %5s %5s %5s %6s\n", "variant", "vgpr", "sgpr", "lds", "scratch",
                "spills", "wmma", "bar", "bar/it", "ds", "sec");
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
        std::printf("%-68s %5d %5d %6lld %7lld %6d %5d %5d %5d %5d %6.2f\n", short_name(result.spec).c_str(), isa.vgprs,
                    isa.sgprs, isa.lds_bytes, isa.scratch_bytes,
                    std::max(isa.vgpr_spills, 0) + std::max(isa.sgpr_spills, 0), isa.wmma_instructions,
                    isa.barrier_instructions, isa.loop_barriers, isa.lds_instructions, result.seconds);
        const std::string name = to_string(result.spec);
        CHECK_MESSAGE(isa.wmma_instructions > 0, name);
        CHECK_MESSAGE(isa.wave_size == 32, name);
        CHECK_MESSAGE(isa.lds_bytes <= 64 * 1024, name);
        // The host's size for the launch is the template's layout, byte for byte.
        CHECK_MESSAGE(isa.lds_bytes == shared_layout(result.spec).shared_bytes, name);
        if (result.spec.head_dim <= 128) {
            CHECK_MESSAGE(isa.scratch_bytes == 0, name);
            CHECK_MESSAGE(isa.vgpr_spills <= 0, name);
        }
        CHECK_MESSAGE(isa.loop_barriers <= 2, name);
    }
    if (reported == 0 && !results.empty())
        MESSAGE(
            "ISA checks skipped: " << (results.front().isa_error.empty() ? "no report" : results.front().isa_error));
}

std::optional<IsaReport> default_d128_report(std::string* why) {
    const Backend* backend = compiler_for("gfx1151");
    if (!backend) {
        *why = "no HIPRTC";
        return std::nullopt;
    }
    const auto spec = wmma_spec("gfx1151", 128, DType::f16, {4, 64}, 10.0f, CausalMode::bottom_right);
    const auto compiled = compile_directly(spec, *backend);
    REQUIRE_MESSAGE(compiled.ok, compiled.log);
    return isa_report(compiled.code, spec.arch, why);
}

}  // namespace

TEST_CASE(
    "wmma-gfx11 sweep: the sampled head dims, dtypes, tilings, margins and causal modes compile for gfx11 via "
    "HIPRTC") {
    std::vector<KernelSpec> specs;
    const Backend* backend = nullptr;
    for (const std::string arch : {"gfx1151", "gfx1100"}) {
        backend = compiler_for(arch);
        if (!backend) return;
        for (auto& spec : sweep_specs(arch)) {
            REQUIRE_MESSAGE(validate(spec).empty(), validate(spec));
            specs.push_back(spec);
        }
    }
    check_gfx11_sweep("wmma-gfx11 HIPRTC sweep", specs, *backend);
}

TEST_CASE("wmma-gfx11 takes ragged and paged K/V: a covering sample compiles for gfx1151 with the same ISA facts") {
    const Backend* backend = compiler_for("gfx1151");
    if (!backend) return;
    const auto specs = batched_sample("wmma-gfx11", {"gfx1151"}, family_head_dims("wmma-gfx11"));
    for (const KernelSpec& spec : specs) REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
    check_gfx11_sweep("wmma-gfx11 batched HIPRTC sample", specs, *backend);
}

TEST_CASE("wmma-gfx11 emulation takes ragged and paged K/V: a sample compiles for sm_90a via NVRTC") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (const KernelSpec& spec : batched_sample("wmma-gfx11", {"sm_90a"}, {64, 128}))
        if (spec.page_size <= 1) specs.push_back(spec);  // ragged, and paged with every row looked up
    const auto results = run_sweep(specs, *backend, false);
    for (const auto& result : results) CHECK_MESSAGE(result.ok, to_string(result.spec), ": ", result.log);
    std::printf("wmma-gfx11 NVRTC sm_90a batched sample: %zu variants\n", results.size());
}

TEST_CASE("wmma-gfx11 sweep: every variant compiles for sm_90a via NVRTC (the emulation)") {
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
    std::printf("wmma-gfx11 NVRTC sm_90a sweep: %d of %zu variants compiled in %.1f s\n", compiled, results.size(),
                wall);
}

TEST_CASE("wmma-gfx11 d=128 key loop: s_barrier per key-block iteration") {
    std::string why;
    const auto isa = default_d128_report(&why);
    if (!isa) {
        MESSAGE("skipped: " << why);
        return;
    }
    std::printf("\nd=128 f16 bq=64 bk=64 waves=4 on gfx1151:\n%s", format_isa_report(*isa).c_str());
    std::printf("s_barrier per key-block iteration: %d (target <= 2)\n", isa->loop_barriers);
    // The key loop is the loop holding the matrix instructions: 64 per step (32 for
    // S^T over 4 key tiles x 8 dim tiles, 32 for O^T).
    CHECK(isa->loop_matrix_instructions == 64);
    CHECK(isa->loop_barriers >= 1);
    CHECK(isa->loop_barriers <= 2);
}

TEST_CASE("wmma-gfx11 d=128 HIPRTC compile time, median of 5") {
    const Backend* backend = compiler_for("gfx1151");
    if (!backend) return;
    const auto spec = wmma_spec("gfx1151", 128, DType::f16, {4, 64}, 10.0f, CausalMode::bottom_right);
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

TEST_CASE("wmma-gfx11 launch geometry: dynamic shared memory on NVIDIA, static LDS on AMD") {
    AttentionArgs args;
    args.batch = 2;
    args.heads_q = 8;
    args.len_q = 1000;
    const auto nvidia = wmma_spec("sm_90a", 256, DType::bf16, {2, 32}, 10.0f, CausalMode::none);
    const auto shape = launch_shape(nvidia, args, 0);
    CHECK(shape.grid[0] == 32);  // ceil(1000 / 32)
    CHECK(shape.grid[1] == 8);
    CHECK(shape.grid[2] == 2);
    CHECK(shape.block[0] == 64);
    CHECK(shape.shared_bytes == 2 * (32 * 264 + 256 * 40 + 32 * 264));
    CHECK(shape.shared_bytes > 48 * 1024);  // the case that needs the opt-in on NVIDIA
    auto amd = nvidia;
    amd.arch = "gfx1151";
    CHECK(launch_shape(amd, args, 0).shared_bytes == 0);

    KernelSpec scalar;
    scalar.family = "scalar";
    scalar.arch = "sm_90a";
    scalar = with_family_defaults(scalar);
    CHECK(launch_shape(scalar, args, 0).shared_bytes == 0);  // its one array is static
    CHECK_FALSE(shared_layout(scalar).dynamic);
}

TEST_CASE("wmma-gfx11 validation keeps LDS within 64 KiB and defaults fit every head dim") {
    auto too_big = wmma_spec("gfx1151", 256, DType::f16, {4, 64}, 10.0f, CausalMode::none);
    const std::string error = validate(too_big);
    CHECK(error.find("bk=64") != std::string::npos);
    CHECK(error.find("LDS") != std::string::npos);
    for (int head_dim = 16; head_dim <= 256; head_dim += 8) {  // every head dim: host arithmetic only
        const auto parsed =
            parse_spec("family=wmma-gfx11,d=" + std::to_string(head_dim) + ",dtype=bf16,margin=40,arch=gfx1151");
        CHECK_MESSAGE(parsed.spec.has_value(), head_dim, ": ", parsed.error);
        if (parsed.spec) CHECK(shared_layout(*parsed.spec).shared_bytes <= 64u * 1024u);
    }
    CHECK_FALSE(parse_spec("family=wmma-gfx11,d=128,dtype=f16,margin=12,arch=gfx1151").spec.has_value());
}

TEST_CASE("ISA report parses readelf notes and objdump text") {
    const std::string notes = R"(Displaying notes found in: .note
  Owner                Data size 	Description
  AMDGPU               0x00000a1c	NT_AMDGPU_METADATA (AMDGPU Metadata)
    amdhsa.kernels:
      - .agpr_count:     0
        .args:
          - .offset:         0
            .size:           168
            .value_kind:     by_value
        .group_segment_fixed_size: 35840
        .kernarg_segment_size: 168
        .name:           kernel_a
        .private_segment_fixed_size: 0
        .sgpr_count:     40
        .sgpr_spill_count: 0
        .symbol:         kernel_a.kd
        .vgpr_count:     212
        .vgpr_spill_count: 0
        .wavefront_size: 32
    amdhsa.target:   amdgcn-amd-amdhsa--gfx1151
)";
    const std::string disassembly = R"(
0000000000001900 <kernel_a>:
	s_load_b128 s[4:7], s[0:1], 0x0                            // 000000001900: F4080100 F8000000
	s_barrier                                                  // 000000001908: BFBD0000
	ds_load_b128 v[0:3], v1                                    // 00000000190C: DBFC0000 00000001
	v_wmma_f32_16x16x16_f16 v[8:15], v[16:23], v[24:31], v[8:15] // 000000001914: CC404008 1C222110
	s_barrier                                                  // 00000000191C: BFBD0000
	s_cbranch_scc1 65532                                       // 000000001920: BFA2FFFC <kernel_a+0x14>
	ds_store_b32 v0, v1                                        // 000000001924: D8340000 00000100
	s_endpgm                                                   // 000000001928: BFB00000
)";
    const IsaReport report = isa_report_from_text(notes, disassembly);
    CHECK(report.kernel == "kernel_a");
    CHECK(report.vgprs == 212);
    CHECK(report.sgprs == 40);
    CHECK(report.agprs == 0);
    CHECK(report.lds_bytes == 35840);
    CHECK(report.scratch_bytes == 0);
    CHECK(report.vgpr_spills == 0);
    CHECK(report.wave_size == 32);
    CHECK(report.instructions == 8);
    CHECK(report.wmma_instructions == 1);
    CHECK(report.barrier_instructions == 2);
    CHECK(report.lds_instructions == 2);
    // The branch at 0x1920 jumps 4 words back from the next instruction, to the v_wmma
    // at 0x1914: the loop holds it and the second s_barrier only.
    CHECK(report.loop_matrix_instructions == 1);
    CHECK(report.loop_barriers == 1);
    CHECK(format_isa_report(report).find("35840") != std::string::npos);
}

TEST_CASE("ISA report refuses what is not a code object") {
    const std::vector<std::byte> junk(64, std::byte{0x42});
    std::string error;
    CHECK_FALSE(isa_report(junk, "gfx1151", &error).has_value());
    CHECK(error.find("not an ELF") != std::string::npos);
}
