// The split-KV decode families compile for every arch kind they serve (decode-split: gfx11
// wave32, gfx9 wave64, sm_80, sm_90a; decode-mma: sm_80, sm_90a, with one and two row
// tiles) over dtype, head dims at the edges and between (every one the family takes with
// FAJIT_TEST_EXHAUSTIVE=1), tile rows and K/V layouts, and over every tile each family
// accepts; AMD code objects are checked for spills and scratch, NVIDIA ones through
// ptxas -v. No GPU is needed; a backend whose compiler library is absent is skipped with
// its reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "codegen/isa_report.hpp"
#include "spec/arch.hpp"
#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

std::vector<KernelSpec> decode_specs(const std::string& family, const std::string& arch) {
    std::vector<KernelSpec> specs;
    int index = 0;
    // A covering sample: every dtype x head dim x rows and layout, causal taking turns.
    const auto& all_dims = find_family(family)->head_dims;
    const std::vector<int> head_dims =
        exhaustive_sweeps() ? std::vector<int>(all_dims.begin(), all_dims.end()) : std::vector<int>{16, 72, 128, 256};
    for (const DType dtype : {DType::f16, DType::bf16})
        for (const int head_dim : head_dims)
            for (const auto& [rows, layout, page_size] : {std::tuple{1, KvLayout::dense, 0},
                                                          {4, KvLayout::paged, 16},
                                                          {16, KvLayout::ragged, 0},
                                                          {32, KvLayout::paged, 64}}) {
                if (family == "decode-split" && rows > 16) continue;  // decode-mma's two row tiles only
                const CausalMode causal = index++ % 2 ? CausalMode::bottom_right : CausalMode::none;
                const KernelSpec spec = decode_spec(family, arch, rows, head_dim, dtype, causal, layout, page_size);
                if (validate(spec).empty()) specs.push_back(spec);
            }
    return specs;
}

// Every tile a decode family accepts: decode-mma's waves x keys per warp step x row tiles
// on sm_90a, and each family's waves on its other targets. A tile the family's check
// refuses is skipped; one it accepts must compile (waves=1 once failed a static assertion
// on its shared memory). Only the chosen tiles must not spill (the test above): a tile set
// by hand (FAJIT_TILE, a manifest) may, and `fa-jit warm --isa` lists those that do.
std::vector<KernelSpec> tile_specs(const std::string& family, const std::string& arch) {
    return decode_tile_specs(family, arch, family == "decode-mma" && arch == "sm_90a");
}

// Compiles specs for arch on every core and checks each for spills (NVIDIA through ptxas -v,
// AMD through the code object's notes); returns how many compiled. A spill fails the test
// where spills_fail, else it is printed: a tile that compiles runs, where one that does not
// falls back to the scalar kernel.
int compile_checking_spills(const std::vector<KernelSpec>& specs, const std::string& arch, const Backend& backend,
                            bool spills_fail) {
    int compiled = 0;
    if (vendor_of(arch) == Vendor::nvidia) {
        std::vector<PtxasCompile> reports(specs.size());
        on_every_core(specs.size(), [&](std::size_t i) { reports[i] = compile_with_ptxas_report(specs[i], backend); });
        for (std::size_t i = 0; i < specs.size(); ++i) {
            INFO(to_string(specs[i]));
            CHECK_MESSAGE(reports[i].ok, reports[i].log);
            if (!reports[i].ok) continue;
            ++compiled;
            const PtxasReport& report = reports[i].report;
            CHECK_MESSAGE(report.registers > 0, reports[i].log);
            if (spills_fail) {
                CHECK_MESSAGE(report.spill_store_bytes == 0, reports[i].log);
                CHECK_MESSAGE(report.spill_load_bytes == 0, reports[i].log);
            } else if (report.spill_store_bytes != 0 || report.spill_load_bytes != 0) {
                std::printf("spills %lld bytes at %d registers: %s\n", report.spill_store_bytes, report.registers,
                            to_string(specs[i]).c_str());
            }
        }
        return compiled;
    }
    std::vector<CompileResult> results(specs.size());
    on_every_core(specs.size(), [&](std::size_t i) { results[i] = compile_directly(specs[i], backend); });
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const CompileResult& result = results[i];
        INFO(to_string(specs[i]));
        CHECK_MESSAGE(result.ok, result.log);
        if (!result.ok) continue;
        ++compiled;
        std::string why;
        const auto report = isa_report(result.code, arch, &why);
        if (!report) {
            MESSAGE("no ISA report: " << why);
            continue;
        }
        CHECK(report->wave_size == wave_size(arch));
        if (spills_fail) {
            CHECK(report->vgpr_spills == 0);
            CHECK(report->scratch_bytes == 0);
        } else if (report->vgpr_spills != 0 || report->scratch_bytes != 0) {
            std::printf("spills %d VGPRs, scratch %lld bytes: %s\n", report->vgpr_spills, report->scratch_bytes,
                        to_string(specs[i]).c_str());
        }
    }
    return compiled;
}

using Target = std::pair<std::string, std::string>;  // a family and an arch it serves

// For each target whose compiler is present: specs_of(family, arch), at least `at_least`
// of them, compiled and checked as compile_checking_spills does; returns how many compiled.
template <class SpecsOf>
int compile_targets(std::initializer_list<Target> targets, SpecsOf specs_of, std::size_t at_least, bool spills_fail) {
    int compiled = 0;
    for (const auto& [family, arch] : targets) {
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const std::vector<KernelSpec> specs = specs_of(family, arch);
        REQUIRE_MESSAGE(specs.size() >= at_least, family << " on " << arch);
        compiled += compile_checking_spills(specs, arch, *backend, spills_fail);
    }
    return compiled;
}

}  // namespace

TEST_CASE("the decode families compile on gfx1151, gfx942, sm_80 and sm_90a without spills") {
    // 24 each, less the rows x head dims decode-split refuses (too many outputs per lane).
    const int compiled = compile_targets({{"decode-split", "gfx1151"},
                                          {"decode-split", "gfx942:sramecc+:xnack-"},
                                          {"decode-split", "sm_80"},
                                          {"decode-split", "sm_90a"},
                                          {"decode-mma", "sm_80"},
                                          {"decode-mma", "sm_90a"}},
                                         decode_specs, 20, true);
    std::printf("decode families: %d variants compiled\n", compiled);
}

TEST_CASE("every tile the decode families accept compiles") {
    // Each wave count at least.
    const int compiled = compile_targets(
        {{"decode-mma", "sm_90a"}, {"decode-mma", "sm_80"}, {"decode-split", "sm_90a"}, {"decode-split", "gfx1151"}},
        tile_specs, 4, false);
    std::printf("decode tiles: %d variants compiled\n", compiled);
}
