// The NVIDIA tensor-core families compile through NVRTC for their head dims (mma-sm80: a
// covering sample of its 31, every one with FAJIT_TEST_EXHAUSTIVE=1), dtypes, causal
// modes and margins (mma-sm80 for sm_80 and sm_90a, wgmma-sm90 for sm_90a), and
// ptxas reports no spills (a spill in these kernels means the accumulators left
// registers, which costs more than any tile choice gains) and no serialized wgmma; a
// sample of ragged and paged variants (tests/support/batched_sample.hpp) holds to the same.
// No GPU is needed; without NVRTC the cases are skipped with the reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "codegen/emitter.hpp"
#include "families/registry.hpp"
#include "mma/mma_candidates.hpp"
#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

// Compiles every spec on every core (each NVRTC program is independent) and checks
// each compiled without spills, printing the register counts.
void check_no_spills(const std::vector<KernelSpec>& specs, const Backend& backend) {
    std::vector<PtxasCompile> reports(specs.size());
    on_every_core(specs.size(), [&](std::size_t i) { reports[i] = compile_with_ptxas_report(specs[i], backend); });

    for (std::size_t i = 0; i < specs.size(); ++i) {
        const auto& [ok, log, report] = reports[i];
        const std::string name = to_string(specs[i]);
        REQUIRE_MESSAGE(ok, name, ": ", log);
        std::printf("%-110s %3d registers, %lld/%lld bytes spilled (stores/loads)\n", name.c_str(), report.registers,
                    report.spill_store_bytes, report.spill_load_bytes);
        CHECK_MESSAGE(report.registers > 0, name, ": no register count in the log: ", log);
        CHECK_MESSAGE(report.spill_store_bytes == 0, name, ": ", log);
        CHECK_MESSAGE(report.spill_load_bytes == 0, name, ": ", log);
        if (specs[i].family == "wgmma-sm90") {
            // The kernel moves registers between its warpgroups assuming it starts with
            // all the launch bounds leave (fa_wgmma_layout::launch_registers); with fewer,
            // its consumers would wait forever for registers.
            const int threads = static_cast<int>(launch_shape(specs[i], AttentionArgs{}, 0).block[0]);
            CHECK_MESSAGE(report.registers == std::min(240, 65536 / threads / 8 * 8), name, ": ", log);
        }
        // ptxas serialized the kernel's wgmma instructions (advisories C7518, a wgmma
        // behind a branch, and C7512, too few registers, among others), which costs more
        // than anything the kernel's pipelining gains (tools/tiles/wgmma_sm90.md).
        CHECK_MESSAGE(log.find("wgmma.mma_async instructions are serialized") == std::string::npos, name, ": ", log);
    }
}

}  // namespace

TEST_CASE(
    "mma-sm80: the sampled head dims (every one when exhaustive), dtypes, causal modes and margins compile for "
    "sm_80 and sm_90a without spills") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (const std::string arch : {"sm_80", "sm_90a"})
        for (int head_dim : family_head_dims("mma-sm80"))
            for (DType dtype : {DType::f16, DType::bf16})
                for (CausalMode causal : {CausalMode::none, CausalMode::bottom_right})
                    for (float margin : {0.0f, 10.0f})
                        specs.push_back(family_spec("mma-sm80", arch, head_dim, dtype, causal, margin));
    check_no_spills(specs, *backend);
}

TEST_CASE("wgmma-sm90: every head dim, dtype, causal mode and margin compiles for sm_90a without spills") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (int head_dim : family_head_dims("wgmma-sm90"))
        for (DType dtype : {DType::f16, DType::bf16})
            for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
                for (float margin : {0.0f, 10.0f})
                    specs.push_back(family_spec("wgmma-sm90", "sm_90a", head_dim, dtype, causal, margin));
    check_no_spills(specs, *backend);
}

TEST_CASE(
    "wgmma-sm90 with e4m3: every head dim it takes, both outputs, causal modes and features compile without "
    "spills") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (int head_dim : {32, 64, 96, 128})
        for (DType out : {DType::f16, DType::bf16})
            for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right}) {
                KernelSpec spec = family_spec("wgmma-sm90", "sm_90a", head_dim, DType::e4m3, causal, 6.0f);
                spec.out_dtype = out;
                // Every feature on in one causal mode, so their registers are counted too.
                spec.window = spec.softcap = spec.sinks = causal == CausalMode::bottom_right;
                REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
                specs.push_back(spec);
            }
    check_no_spills(specs, *backend);
}

TEST_CASE("wgmma-sm90 says which e4m3 specs it cannot take") {
    const auto error_of = [](const std::string& text) { return parse_spec(text).error; };
    const std::string head = "family=wgmma-sm90,dtype=e4m3,out=bf16,";
    CHECK(error_of(head + "d=128,arch=sm_90a").empty());
    CHECK(error_of(head + "d=80,arch=sm_90a").find("d=80: family wgmma-sm90 with e4m3 needs a multiple of 32") == 0);
    CHECK(error_of(head + "d=256,arch=sm_90a").find("d=256") == 0);
    CHECK(error_of(head + "d=128,bk=64,arch=sm_90a").find("bk=64: family wgmma-sm90 with e4m3 needs 128") == 0);
    CHECK(error_of(head + "d=128,kv=paged,page=16,arch=sm_90a").find("kv=paged") == 0);
    CHECK(error_of(head + "d=128,dv=64,arch=sm_90a").find("dv=64") == 0);
    CHECK(error_of(head + "d=128,margin=10,arch=sm_90a").find("margin=10: with dtype e4m3") == 0);
}

TEST_CASE("mma-sm80 and wgmma-sm90 take ragged and paged K/V: a covering sample compiles without spills") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs = batched_sample("mma-sm80", {"sm_80", "sm_90a"}, family_head_dims("mma-sm80"));
    for (const KernelSpec& spec : batched_sample("wgmma-sm90", {"sm_90a"}, family_head_dims("wgmma-sm90")))
        specs.push_back(spec);
    for (const KernelSpec& spec : specs) REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
    check_no_spills(specs, *backend);
}

TEST_CASE("every benchmark tile candidate compiles for sm_90a without spills") {
    const Backend* backend = compiler_for("sm_90a");
    if (!backend) return;
    std::vector<KernelSpec> specs;
    for (const std::string& family : tensor_core_families("sm_90a"))
        for (int head_dim : {64, 128, 256})
            for (const auto& tiles : tile_candidates(family, head_dim)) {
                const KernelSpec spec = with_tiles(
                    family_spec(family, "sm_90a", head_dim, DType::bf16, CausalMode::bottom_right, 10.0f), tiles);
                REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
                specs.push_back(spec);
            }
    check_no_spills(specs, *backend);
}

TEST_CASE("validation accepts the family's rules and rejects what it cannot run") {
    const auto error_of = [](const std::string& text) { return parse_spec(text).error; };
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,causal=bottom-right,margin=10,arch=sm_90a").empty());
    CHECK(error_of("family=mma-sm80,d=80,dtype=bf16,arch=sm_86").empty());
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,arch=sm_75").find("arch=sm_75") == 0);
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,arch=gfx1151").find("arch=gfx1151") == 0);
    CHECK(error_of("family=mma-sm80,d=72,dtype=f16,arch=sm_90a").empty());  // padded to 80 inside the kernel
    CHECK(error_of("family=mma-sm80,d=76,dtype=f16,arch=sm_90a").find("d=76") == 0);
    CHECK(error_of("family=mma-sm80,d=128,dtype=f32,arch=sm_90a").find("dtype=f32") == 0);
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,margin=12,arch=sm_90a").find("margin=12") == 0);
    CHECK(error_of("family=mma-sm80,d=128,dtype=bf16,margin=12,arch=sm_90a").empty());
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,bq=96,waves=4,arch=sm_90a").find("bq=96") == 0);
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,bk=40,arch=sm_90a").find("bk=40") == 0);
    // 32 rows per warp at d=256 would hold 320 accumulators per lane.
    CHECK(error_of("family=mma-sm80,d=256,dtype=f16,bq=128,waves=4,arch=sm_90a").find("bk=") == 0);
    // 16 rows per warp at d=256 with 128-key steps: 192 accumulators.
    CHECK(error_of("family=mma-sm80,d=256,dtype=f16,bq=128,waves=8,bk=128,arch=sm_90a").find("bk=128") == 0);
    // 32 rows per warp with 64-key steps at d=128: 192 accumulators, which spills.
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,bq=128,waves=4,bk=64,arch=sm_90a").find("bk=64") == 0);
    // The same tiles that fit an sm_90's 227 KiB are too big for an sm_86's 99 KiB.
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,bq=128,waves=8,bk=128,arch=sm_90a").empty());
    CHECK(error_of("family=mma-sm80,d=128,dtype=f16,bq=128,waves=8,bk=128,arch=sm_86").find("bk=128") == 0);
    for (int head_dim : family_head_dims("mma-sm80"))
        for (const std::string arch : {"sm_80", "sm_86", "sm_90a", "sm_120"}) {
            const KernelSpec spec = family_spec("mma-sm80", arch, head_dim, DType::f16, CausalMode::none, 10.0f);
            CHECK_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
        }
}

TEST_CASE("wgmma-sm90 validation: sm_90a only, its head dims and its tiles") {
    const auto error_of = [](const std::string& text) { return parse_spec(text).error; };
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,causal=bottom-right,margin=10,arch=sm_90a").empty());
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,arch=sm_90").find("arch=sm_90") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,arch=sm_80").find("arch=sm_80") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,arch=sm_100a").find("arch=sm_100a") == 0);
    CHECK(error_of("family=wgmma-sm90,d=80,dtype=f16,arch=sm_90a").empty());
    CHECK(error_of("family=wgmma-sm90,d=264,dtype=f16,arch=sm_90a").find("d=264") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f32,arch=sm_90a").find("dtype=f32") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,margin=12,arch=sm_90a").find("margin=12") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,waves=2,bq=32,arch=sm_90a").find("waves=2") == 0);
    CHECK(error_of("family=wgmma-sm90,d=64,dtype=f16,waves=12,bq=192,bk=64,arch=sm_90a").empty());
    CHECK(error_of("family=wgmma-sm90,d=64,dtype=f16,waves=16,bq=256,bk=64,arch=sm_90a").find("waves=16") == 0);
    // Three warpgroups at d=64 with 128-key steps: 128 accumulator registers, over 3 groups' 112
    // (ptxas serializes its wgmma, advisory C7512).
    CHECK(error_of("family=wgmma-sm90,d=64,dtype=f16,waves=12,bq=192,bk=128,arch=sm_90a").find("bk=128") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,waves=12,bq=192,bk=64,arch=sm_90a").empty());
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,waves=8,bq=64,arch=sm_90a").find("bq=64") == 0);
    CHECK(error_of("family=wgmma-sm90,d=128,dtype=f16,bk=96,arch=sm_90a").find("bk=96") == 0);
    // d=256 with 128-key steps: 224 accumulator registers per lane; d=160 stages 192 head dims, 192.
    CHECK(error_of("family=wgmma-sm90,d=160,dtype=f16,bk=128,arch=sm_90a").find("bk=128") == 0);
    CHECK(error_of("family=wgmma-sm90,d=256,dtype=f16,bk=128,arch=sm_90a").find("bk=128") == 0);
    for (int head_dim : family_head_dims("wgmma-sm90")) {
        const KernelSpec spec =
            family_spec("wgmma-sm90", "sm_90a", head_dim, DType::bf16, CausalMode::bottom_right, 10.0f);
        CHECK_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
    }
}

TEST_CASE("the NVIDIA tensor-core families accept ragged K/V and paged K/V at every power-of-two page size to 256") {
    const auto error_of = [](const std::string& text) { return parse_spec(text).error; };
    for (const std::string family : {"mma-sm80", "wgmma-sm90"}) {
        const std::string head = "family=" + family + ",d=128,dtype=f16,causal=bottom-right,";
        CHECK(error_of(head + "kv=ragged,arch=sm_90a").empty());
        for (int page = 1; page <= 256; page *= 2)
            CHECK_MESSAGE(error_of(head + "kv=paged,page=" + std::to_string(page) + ",arch=sm_90a").empty(), family,
                          " page=", page);
        CHECK(error_of(head + "kv=paged,page=512,arch=sm_90a").find("page=512") == 0);
        CHECK(error_of(head + "kv=paged,page=48,arch=sm_90a").find("page=48") == 0);
    }
}

TEST_CASE("wgmma-sm90 launch geometry: one persistent block per multiprocessor, never more blocks than tiles") {
    const KernelSpec spec = family_spec("wgmma-sm90", "sm_90a", 128, DType::f16, CausalMode::bottom_right, 10.0f);
    AttentionArgs args;
    args.batch = 2;
    args.heads_q = 32;
    args.len_q = 2000;  // 16 query tiles of 128 rows: 1024 tiles in all
    const LaunchShape persistent = launch_shape(spec, args, 132);
    CHECK(persistent.grid[0] == 132);
    CHECK(persistent.grid[1] == 1);
    CHECK(persistent.grid[2] == 1);
    CHECK(persistent.block[0] == 8 * 32 + 128);  // the consumers' waves and the producer warpgroup
    CHECK(persistent.shared_bytes == shared_layout(spec).shared_bytes);

    args.batch = 1;
    args.heads_q = 4;
    args.len_q = 300;  // 3 query tiles a head: 12 tiles
    CHECK(launch_shape(spec, args, 132).grid[0] == 12);
    CHECK(launch_shape(spec, args, 0).grid[0] == 12);  // no multiprocessor count: a block per tile
}
