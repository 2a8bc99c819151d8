// A family of fa_matrix_core.h (matrix_core_family.hpp: wmma-gfx11 or mfma-gfx9) against
// the scalar kernel and the f64 reference: natively on its own AMD device, and on an
// NVIDIA device through its tile part's lane-faithful emulation of the same template.
// Skips, saying why, where no device is present or the device runs the family neither way.
//
// Tolerance. The family rounds P = exp(S - frame) to the element type before the P.V
// product, so on top of output_tolerance's terms (one rounding of the output, f32
// arithmetic) every weight carries a relative error of at most u (2^-11 for f16, 2^-8
// for bf16). The output is a convex combination of value rows, so that costs at most
// u * max|v|: passed as extra_relative. Against the scalar kernel, the two kernels'
// bounds add.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "families/registry.hpp"
#include "matrix_core_family.hpp"
#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

using Tiles = MatrixCoreTiles;

const MatrixCoreFamily& family = tested_family();

KernelSpec family_spec(const CaseShape& shape, Tiles tiles, float margin) {
    KernelSpec spec;
    spec.family = family.name;
    spec.arch = gpu_test_arch();
    spec.head_dim = shape.head_dim;
    spec.dtype = shape.dtype;
    spec.causal = shape.causal;
    spec.waves = tiles.waves;
    spec.block_q = 16 * tiles.waves;
    spec.block_k = tiles.block_k;
    spec.rescale_margin = margin;
    return spec;
}

// True, after printing why, where the tests cannot run the family here.
bool skip_unless_family_runs() {
    if (skip_without_device()) return true;
    const std::string reason = validate(family_spec(CaseShape{}, family.tile_configs(64).front(), 0.0f));
    if (reason.empty()) return false;
    std::printf("skipped: %s\n", reason.c_str());
    return true;
}

struct Case {
    CaseShape shape;
    Tiles tiles;
    float margin;
};

}  // namespace

TEST_CASE(MATRIX_CORE_FAMILY " matches the scalar kernel and the f64 reference") {
    if (skip_unless_family_runs()) return;
    const std::pair<int, int> lengths[] = {{1, 1},      {1, 1000},   {7, 129},     {129, 7},  {7, 7},
                                           {129, 1000}, {1000, 129}, {1000, 1000}, {1000, 1}, {129, 129}};
    std::vector<Case> cases;
    int index = 0;
    for (DType dtype : {DType::f16, DType::bf16})
        for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
            for (int head_dim : family_head_dims(family.name))
                for (std::size_t t = 0; t < family.tile_configs(head_dim).size(); ++t)
                    for (auto [len_q, len_k] : lengths) {
                        Case c;
                        c.tiles = family.tile_configs(head_dim)[t];
                        // Margins rotate with the head dim so each one meets every other axis
                        // while the number of distinct kernels stays small; 40 is bf16 only.
                        const float margins_f16[] = {0.0f, 10.0f};
                        const float margins_bf16[] = {0.0f, 10.0f, 40.0f};
                        const int spin = head_dim / 16 + static_cast<int>(t) + static_cast<int>(causal);
                        c.margin = dtype == DType::f16 ? margins_f16[spin % 2] : margins_bf16[spin % 3];
                        CaseShape& shape = c.shape;
                        shape.batch = index % 5 == 0 ? 2 : 1;
                        shape.heads_kv = index % 3 == 0 ? 2 : 1;
                        shape.heads_q = shape.heads_kv * (index % 2 == 0 ? 4 : 1);  // GQA group 4 or 1
                        shape.len_q = len_q;
                        shape.len_k = len_k;
                        shape.head_dim = head_dim;
                        shape.dtype = dtype;
                        shape.causal = causal;
                        shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                        shape.layout = static_cast<Layout>(index % 3);  // bhsd, bshd, padded rows
                        shape.with_lse = index % 4 != 1;
                        // Long pairs at large batch/heads make the f64 reference slow; keep those at 1.
                        if (len_q * len_k >= 129000) shape.batch = 1;
                        cases.push_back(c);
                        ++index;
                    }

    std::vector<KernelSpec> specs;
    {
        std::set<std::string> seen;
        for (const Case& c : cases)
            for (const KernelSpec& spec : {family_spec(c.shape, c.tiles, c.margin), scalar_spec(c.shape, c.margin)})
                if (seen.insert(to_string(spec)).second) specs.push_back(spec);
    }
    std::printf("preparing %zu kernels for %zu cases\n", specs.size(), cases.size());
    REQUIRE(prepare_all(gpu_test_runtime(), specs) == 0);

    int run = 0, failures = 0, scalar_failures = 0;
    double worst[2] = {0, 0}, worst_vs_scalar[2] = {0, 0}, worst_lse[2] = {0, 0};
    std::uint64_t seed = 100;
    for (const Case& c : cases) {
        const CaseShape& shape = c.shape;
        const CaseInputs inputs = random_inputs(shape, seed++);
        const auto want = reference_attention(shape, inputs);
        const auto got = run_on_device(gpu_test_runtime(), family_spec(shape, c.tiles, c.margin), shape, inputs);
        const auto scalar = run_on_device(gpu_test_runtime(), scalar_spec(shape, c.margin), shape, inputs);
        const double tolerance = output_tolerance(shape, inputs, unit_roundoff(shape.dtype));
        const auto result = compare(shape, got.outputs, want, tolerance);
        const auto versus_scalar =
            compare(shape, got.outputs, scalar.outputs, tolerance + output_tolerance(shape, inputs));
        const int d = shape.dtype == DType::f16 ? 0 : 1;
        worst[d] = std::max(worst[d], result.max_error);
        worst_lse[d] = std::max(worst_lse[d], result.max_lse_error);
        worst_vs_scalar[d] = std::max(worst_vs_scalar[d], versus_scalar.max_error);
        ++run;
        const std::string name = shape.describe() + " bq=" + std::to_string(16 * c.tiles.waves) +
                                 " bk=" + std::to_string(c.tiles.block_k) + " margin=" + std::to_string(c.margin);
        if (result.bad_elements) {
            ++failures;
            FAIL_CHECK(name << ": " << result.bad_elements << " bad vs f64 (tolerance " << tolerance << "), first "
                            << result.first_bad);
        }
        if (versus_scalar.bad_elements) {
            ++scalar_failures;
            FAIL_CHECK(name << ": " << versus_scalar.bad_elements << " bad vs scalar, first "
                            << versus_scalar.first_bad);
        }
    }
    std::printf(MATRIX_CORE_FAMILY " sweep on %s: %d cases, %d failed vs f64, %d vs scalar\n", gpu_test_arch().c_str(),
                run, failures, scalar_failures);
    std::printf("  max abs error vs f64:    f16 %.3g, bf16 %.3g (lse %.3g, %.3g)\n", worst[0], worst[1], worst_lse[0],
                worst_lse[1]);
    std::printf("  max abs diff vs scalar:  f16 %.3g, bf16 %.3g\n", worst_vs_scalar[0], worst_vs_scalar[1]);
    CHECK(failures == 0);
    CHECK(scalar_failures == 0);
}

TEST_CASE(MATRIX_CORE_FAMILY " defers the rescale within the margin on a rising score ramp") {
    if (skip_unless_family_runs()) return;
    Runtime counting(gpu_test_options(true));
    struct Ramp {
        DType dtype;
        float margin;
        int head_dim;
        Tiles tiles;
    };
    const Ramp ramps[] = {{DType::f16, 0.0f, 64, {4, 64}},    {DType::f16, 10.0f, 64, {4, 64}},
                          {DType::bf16, 0.0f, 128, {2, 32}},  {DType::bf16, 10.0f, 128, {4, 64}},
                          {DType::bf16, 40.0f, 128, {4, 64}}, {DType::f16, 10.0f, 256, {2, 32}}};
    int run = 0;
    for (const Ramp& ramp : ramps) {
        CaseShape shape;
        shape.len_q = 100;
        shape.len_k = 1024;
        shape.heads_q = 4;
        shape.heads_kv = 1;
        shape.head_dim = ramp.head_dim;
        shape.dtype = ramp.dtype;
        shape.causal = CausalMode::bottom_right;
        // The ramp's scores rise 100 natural-log units over the keys: 6.25 per 64-key
        // step, 3.1 per 32-key step. A margin of 10 keeps the frame through 1-3 such
        // rises, so both branches run; margin 0 moves it at every rise.
        const CaseInputs inputs = ramp_inputs(shape, 11);
        const auto spec = family_spec(shape, ramp.tiles, ramp.margin);
        const auto got = run_on_device(counting, spec, shape, inputs, true);
        const auto want = reference_attention(shape, inputs);
        const double tolerance = output_tolerance(shape, inputs, unit_roundoff(shape.dtype));
        const auto result = compare(shape, got.outputs, want, tolerance);
        std::printf("ramp %s: %llu frame moves, %llu frames kept (rescale deferred), max abs error %.3g\n",
                    to_string(spec).c_str(), got.counters[0], got.counters[1], result.max_error);
        CHECK_MESSAGE(result.bad_elements == 0, to_string(spec), ": ", result.first_bad);
        CHECK(got.counters[0] > 0);
        if (ramp.margin == 0.0f)
            CHECK(got.counters[1] == 0);
        else
            CHECK(got.counters[1] > 0);
        // Every family counts through the prelude's one deferred rescale: with the
        // scalar kernel's 64-key steps, its counts must be the same.
        if (ramp.tiles.block_k == 64) {
            const auto scalar = run_on_device(counting, scalar_spec(shape, ramp.margin), shape, inputs, true);
            CHECK(scalar.counters[0] == got.counters[0]);
            CHECK(scalar.counters[1] == got.counters[1]);
        }
        ++run;
    }
    std::printf("ramp cases run: %d\n", run);
}

TEST_CASE(MATRIX_CORE_FAMILY " launches with over 48 KiB of dynamic shared memory") {
    if (skip_unless_family_runs()) return;
    CaseShape shape;
    shape.len_q = 77;
    shape.len_k = 300;
    shape.head_dim = family.large_layout_head_dim;
    shape.dtype = DType::bf16;
    shape.causal = CausalMode::top_left;
    const auto spec = family_spec(shape, family.large_layout_tiles, 10.0f);
    REQUIRE(shared_layout(spec).shared_bytes > 48 * 1024);
    const CaseInputs inputs = random_inputs(shape, 5);
    const auto got = run_on_device(gpu_test_runtime(), spec, shape, inputs);
    const auto result = compare(shape, got.outputs, reference_attention(shape, inputs),
                                output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
    std::printf("d=%d with %u bytes of shared memory: max abs error %.3g\n", shape.head_dim,
                shared_layout(spec).shared_bytes, result.max_error);
    CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
}
