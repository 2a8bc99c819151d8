// The NVIDIA tensor-core families (mma-sm80, and wgmma-sm90 on sm_90a) on a real device
// through the library, against the f64 reference and the scalar kernel. Skips, saying
// why, where no CUDA device is present or the device cannot run the family.
//
// Tolerance: both families round P to the element type before the P.V product, so the
// reference tolerance gets one extra unit roundoff of that type.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "mma/mma_candidates.hpp"
#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

bool skip_unless_runs(const std::string& family) {
    if (skip_without_device()) return true;
    const auto arch = gpu_test_arch();
    for (const std::string& runnable : tensor_core_families(arch))
        if (runnable == family) return false;
    std::printf("skipped: the device is %s, which cannot run %s\n", arch.c_str(), family.c_str());
    return true;
}

void check_sweep(const std::string& family) {
    const std::pair<int, int> lengths[] = {{1, 1}, {1, 1000}, {7, 129}, {129, 7}, {1000, 1000}, {1000, 1}, {129, 1000}};
    const std::vector<int> head_dims = family_head_dims(family);
    const DType dtypes[] = {DType::f16, DType::bf16};
    const CausalMode causals[] = {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right};
    const float margins[] = {0.0f, 10.0f};
    const auto spec_for = [&](int head_dim, DType dtype, CausalMode causal, float margin) {
        return family_spec(family, gpu_test_arch(), head_dim, dtype, causal, margin);
    };

    std::vector<KernelSpec> specs;
    for (int head_dim : head_dims)
        for (DType dtype : dtypes)
            for (CausalMode causal : causals)
                for (float margin : margins) specs.push_back(spec_for(head_dim, dtype, causal, margin));
    REQUIRE(prepare_all(gpu_test_runtime(), specs) == 0);

    int cases = 0, failures = 0, scalar_checks = 0;
    double worst[2] = {0, 0};
    std::uint64_t seed = 1;
    for (int head_dim : head_dims)
        for (DType dtype : dtypes)
            for (CausalMode causal : causals)
                for (int group : {1, 4})
                    for (float margin : margins)
                        for (auto [len_q, len_k] : lengths) {
                            CaseShape shape;
                            shape.heads_kv = 1 + cases % 2;
                            shape.heads_q = group * shape.heads_kv;
                            shape.batch = 1 + cases % 3 / 2;
                            shape.len_q = len_q;
                            shape.len_k = len_k;
                            shape.head_dim = head_dim;
                            shape.dtype = dtype;
                            shape.causal = causal;
                            // Every fifth case negative: the kernels fold only a positive scale.
                            shape.scale = (cases % 5 == 4 ? -4.0f : 4.0f) / std::sqrt(static_cast<float>(head_dim));
                            shape.layout = static_cast<Layout>(cases % 3);
                            shape.with_lse = cases % 2 == 0;
                            const CaseInputs inputs = random_inputs(shape, seed++);
                            const KernelSpec spec = spec_for(head_dim, dtype, causal, margin);
                            const auto run = run_on_device(gpu_test_runtime(), spec, shape, inputs);
                            const auto want = reference_attention(shape, inputs);
                            const double tolerance = output_tolerance(shape, inputs, unit_roundoff(dtype));
                            const auto result = compare(shape, run.outputs, want, tolerance);
                            ++cases;
                            worst[dtype == DType::bf16] = std::max(worst[dtype == DType::bf16], result.max_error);
                            if (result.bad_elements) {
                                ++failures;
                                FAIL_CHECK(to_string(spec) << " " << shape.describe() << ": " << result.bad_elements
                                                           << " bad, first " << result.first_bad);
                            }
                            // Every eighth case also against the scalar kernel, each within
                            // its own tolerance of the reference so within the sum of each other.
                            if (cases % 8 == 0) {
                                ++scalar_checks;
                                const auto scalar =
                                    run_on_device(gpu_test_runtime(), scalar_spec(shape, margin), shape, inputs);
                                const auto agreement = compare(shape, run.outputs, scalar.outputs,
                                                               tolerance + output_tolerance(shape, inputs));
                                CHECK_MESSAGE(agreement.bad_elements == 0, to_string(spec), " ", shape.describe(),
                                              " vs scalar: ", agreement.first_bad);
                            }
                        }
    std::printf("%s sweep: %d cases (%d also against scalar), %d failed; max abs error f16 %.3g, bf16 %.3g\n",
                family.c_str(), cases, scalar_checks, failures, worst[0], worst[1]);
    CHECK(failures == 0);
}

void check_tile_candidates(const std::string& family) {
    for (int head_dim : {64, 128, 256})
        for (const auto& tiles : tile_candidates(family, head_dim)) {
            const KernelSpec spec = with_tiles(
                family_spec(family, gpu_test_arch(), head_dim, DType::bf16, CausalMode::bottom_right, 10.0f), tiles);
            if (!validate(spec).empty()) continue;  // too big for this device's shared memory
            CaseShape shape;
            shape.heads_q = 4;
            shape.heads_kv = 2;
            shape.len_q = 300;
            shape.len_k = 557;
            shape.head_dim = head_dim;
            shape.dtype = DType::bf16;
            shape.causal = CausalMode::bottom_right;
            shape.layout = Layout::bshd;
            const CaseInputs inputs = random_inputs(shape, 99);
            const auto run = run_on_device(gpu_test_runtime(), spec, shape, inputs);
            const auto result = compare(shape, run.outputs, reference_attention(shape, inputs),
                                        output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
            CHECK_MESSAGE(result.bad_elements == 0, to_string(spec), ": ", result.first_bad);
        }
}

// Every family takes one decision per row per key step that row sees keys in, through
// the prelude's one deferred rescale, and counts it once per row; with 64-key steps the
// counts must match the scalar kernel's exactly.
void check_ramp(const std::string& family) {
    Runtime counting(gpu_test_options(true));
    unsigned long long moves[3], kept[3];
    const float margins[3] = {0.0f, 10.0f, 40.0f};
    for (int m = 0; m < 3; ++m) {
        const CaseShape shape = ramp_shape();
        KernelSpec spec = family_spec(family, gpu_test_arch(), 64, shape.dtype, shape.causal, margins[m]);
        spec.block_k = 64;
        REQUIRE_MESSAGE(validate(spec).empty(), validate(spec));
        const CaseInputs inputs = ramp_inputs(shape, 7);
        const auto run = run_on_device(counting, spec, shape, inputs, true);
        const auto scalar = run_on_device(counting, scalar_spec(shape, margins[m]), shape, inputs, true);
        const auto result = compare(shape, run.outputs, reference_attention(shape, inputs),
                                    output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
        std::printf("ramp margin %g: %s %llu moves, %llu kept; scalar %llu moves, %llu kept; max abs error %.3g\n",
                    margins[m], family.c_str(), run.counters[0], run.counters[1], scalar.counters[0],
                    scalar.counters[1], result.max_error);
        CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
        CHECK(scalar.counters[0] == run.counters[0]);
        CHECK(scalar.counters[1] == run.counters[1]);
        moves[m] = run.counters[0];
        kept[m] = run.counters[1];
    }
    CHECK(moves[0] > moves[1]);
    CHECK(moves[1] > moves[2]);
    CHECK(moves[2] > 0);
    CHECK(kept[0] < kept[2]);
}

// wgmma-sm90's blocks are persistent: the grid has one block per multiprocessor and each
// walks several query tiles, reusing its shared buffers and barriers. Shapes with more
// tiles than the device has multiprocessors, including tiles whose rows see no key
// (bottom-right with fewer keys than queries) and the two-stage d=256 path. The causal
// calls with many (head, batch) pairs and no GQA sharing take the chunked tile order
// (fa_wgmma_tile_order) over more than four rounds, so over more than one chunk.
void check_persistent_tiles() {
    struct Case {
        int batch, heads_q, heads_kv, head_dim, len_q, len_k;
        CausalMode causal;
    };
    const Case cases[] = {
        {2, 12, 4, 64, 1000, 300, CausalMode::bottom_right},  {2, 12, 4, 128, 1000, 300, CausalMode::bottom_right},
        {2, 12, 4, 256, 1000, 300, CausalMode::bottom_right}, {2, 12, 4, 128, 1000, 600, CausalMode::none},
        {2, 12, 4, 128, 1000, 1000, CausalMode::top_left},    {8, 8, 8, 128, 1100, 1100, CausalMode::top_left},
        {8, 8, 8, 64, 1100, 400, CausalMode::bottom_right}};
    const int multiprocessors = gpu_test_runtime().devices().front().compute_units;
    for (const Case& c : cases) {
        CaseShape shape;
        shape.batch = c.batch;
        shape.heads_q = c.heads_q;
        shape.heads_kv = c.heads_kv;
        shape.len_q = c.len_q;
        shape.len_k = c.len_k;
        shape.head_dim = c.head_dim;
        shape.dtype = DType::bf16;
        shape.causal = c.causal;
        shape.layout = Layout::bshd;
        const KernelSpec spec = family_spec("wgmma-sm90", gpu_test_arch(), c.head_dim, shape.dtype, c.causal, 10.0f);
        const int tiles = shape.batch * shape.heads_q * ((shape.len_q + spec.block_q - 1) / spec.block_q);
        CHECK_MESSAGE(tiles > multiprocessors, tiles, " tiles do not outnumber ", multiprocessors,
                      " multiprocessors: the case would not walk several tiles per block");
        const CaseInputs inputs = random_inputs(shape, 5);
        const auto run = run_on_device(gpu_test_runtime(), spec, shape, inputs);
        const auto result = compare(shape, run.outputs, reference_attention(shape, inputs),
                                    output_tolerance(shape, inputs, unit_roundoff(shape.dtype)));
        std::printf("persistent %s: %d tiles on %d blocks, max abs error %.3g\n", shape.describe().c_str(), tiles,
                    multiprocessors, result.max_error);
        CHECK_MESSAGE(result.bad_elements == 0, to_string(spec), " ", shape.describe(), ": ", result.first_bad);
    }
}

// e4m3 inputs on wgmma-sm90, against the f64 reference: the TMA copies (aligned layouts),
// the cp.async ones (a runtime with FAJIT_TENSOR_MAPS=0) and the element-wise ones (the
// padded layout's rows are off 16 bytes), with descale factors per tensor and per KV
// head, both output dtypes, and the model features on some cases.
// Tolerance: P is rounded to e4m3 before P V. A normal P element moves by at most its
// unit roundoff u (2^-4), which moves O by at most u max|v|; one under 2^-6 moves by at
// most 2^-10 absolutely, and the rows' sums are at least 1 (their largest term is 2^0),
// so n such terms move O by about sqrt(n) 2^-10 / sqrt(3) max|v| (independent roundings):
// 0.018 max|v| at 1000 keys, inside a second u. And Hopper's e4m3 products accumulate
// keeping about 14 bits (DeepSeek-V3's report measured it on H800; the first H200 run of
// this sweep saw LSEs 3e-3 off at scores near 36): a score moves by up to about 2^-14 of
// the sum of its products' magnitudes, at most |q||k| (Cauchy-Schwarz), so 2^-13 |scale|
// max|q| max|k| (row norms, with their factors) is allowed, in the LSE and, through the
// weights (e^(+-2 error)), in O. Scores are wide (scale 8/sqrt(d)), so a row's weight sits
// on few keys and a key paired with the wrong V row moves O by far more than all that.
void check_e4m3() {
    Options options = gpu_test_options(false);
    options.tensor_maps = false;
    Runtime without_maps(options);
    const std::pair<int, int> lengths[] = {{1, 1}, {7, 129}, {129, 1000}, {1000, 1000}, {1000, 129}};
    const std::vector<float> none, per_tensor = {0.5f}, per_head = {2.0f, 0.25f};
    const auto shape_of = [&](int head_dim, DType out, CausalMode causal, std::pair<int, int> lengths, int index) {
        CaseShape shape;
        shape.heads_kv = 2;
        shape.heads_q = 8;
        shape.batch = 1 + index % 2;
        shape.len_q = lengths.first;
        shape.len_k = lengths.second;
        shape.head_dim = head_dim;
        shape.dtype = DType::e4m3;
        shape.o_dtype = out;
        shape.causal = causal;
        shape.scale = 8.0f / std::sqrt(static_cast<float>(head_dim));
        shape.layout = static_cast<Layout>(index % 3);
        shape.with_lse = index % 2 == 0;
        const std::vector<float>& factors = index % 3 == 0 ? none : index % 3 == 1 ? per_tensor : per_head;
        shape.q_descale = shape.k_descale = shape.v_descale = factors;
        if (index % 7 == 3) {
            shape.softcap = 20.0f;
            shape.window = SlidingWindow{200, -1};
            shape.sinks.assign(static_cast<std::size_t>(shape.heads_q), 0.5f);
        }
        return shape;
    };
    const auto spec_of = [](const CaseShape& shape) {
        return with_features(
            family_spec("wgmma-sm90", gpu_test_arch(), shape.head_dim, DType::e4m3, shape.causal, 6.0f), shape);
    };
    struct Case {
        CaseShape shape;
        KernelSpec spec;
    };
    std::vector<Case> cases;
    std::vector<KernelSpec> specs;
    for (int head_dim : {32, 64, 96, 128})
        for (DType out : {DType::f16, DType::bf16})
            for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
                for (auto length : lengths) {
                    const CaseShape shape = shape_of(head_dim, out, causal, length, static_cast<int>(cases.size()));
                    cases.push_back({shape, spec_of(shape)});
                    specs.push_back(cases.back().spec);
                }
    REQUIRE(prepare_all(gpu_test_runtime(), specs) == 0);
    int failures = 0;
    double worst = 0.0;
    std::uint64_t seed = 300;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const auto& [shape, spec] = cases[i];
        const CaseInputs inputs = random_inputs(shape, seed++);
        Runtime& runtime = i % 4 == 1 ? without_maps : gpu_test_runtime();
        const auto run = run_on_device(runtime, spec, shape, inputs);
        const auto largest_row_norm = [&](const std::vector<float>& values, const std::vector<float>& factors) {
            double largest = 0.0;
            for (std::size_t row = 0; row < values.size(); row += static_cast<std::size_t>(shape.head_dim)) {
                double squares = 0.0;
                for (int d = 0; d < shape.head_dim; ++d) squares += double(values[row + d]) * values[row + d];
                largest = std::max(largest, std::sqrt(squares));
            }
            double factor = 1.0;
            for (float f : factors) factor = std::max(factor, double(std::fabs(f)));
            return largest * factor;
        };
        const double score_error = std::ldexp(1.0, -13) * std::fabs(shape.scale) *
                                   largest_row_norm(inputs.q, shape.q_descale) *
                                   largest_row_norm(inputs.k, shape.k_descale);
        const double tolerance =
            output_tolerance(shape, inputs, 2.0 * unit_roundoff(DType::e4m3) + std::expm1(2.0 * score_error));
        const auto result = compare(shape, run.outputs, reference_attention(shape, inputs), tolerance, score_error);
        worst = std::max(worst, result.max_error);
        if (result.bad_elements) {
            ++failures;
            FAIL_CHECK(to_string(spec) << " " << shape.describe() << (i % 4 == 1 ? " cp.async" : "") << ": "
                                       << result.bad_elements << " bad, first " << result.first_bad);
        }
    }
    std::printf("wgmma-sm90 e4m3 sweep: %zu cases, %d failed; max abs error %.3g\n", cases.size(), failures, worst);
    CHECK(failures == 0);
}

}  // namespace

TEST_CASE("wgmma-sm90 takes e4m3 inputs through each copy path, with descale factors and features") {
    if (!skip_unless_runs("wgmma-sm90")) check_e4m3();
}

TEST_CASE("wgmma-sm90 blocks walk several query tiles each and still match the reference") {
    if (!skip_unless_runs("wgmma-sm90")) check_persistent_tiles();
}

TEST_CASE(
    "mma-sm80 matches the f64 reference and the scalar kernel over head dims, dtypes, causal modes, GQA, "
    "lengths, margins and layouts") {
    if (!skip_unless_runs("mma-sm80")) check_sweep("mma-sm80");
}

TEST_CASE(
    "wgmma-sm90 matches the f64 reference and the scalar kernel over head dims, dtypes, causal modes, GQA, "
    "lengths, margins and layouts") {
    if (!skip_unless_runs("wgmma-sm90")) check_sweep("wgmma-sm90");
}

TEST_CASE("mma-sm80 tile candidates agree with the reference on an odd-length GQA case") {
    if (!skip_unless_runs("mma-sm80")) check_tile_candidates("mma-sm80");
}

TEST_CASE("wgmma-sm90 tile candidates agree with the reference on an odd-length GQA case") {
    if (!skip_unless_runs("wgmma-sm90")) check_tile_candidates("wgmma-sm90");
}

TEST_CASE("mma-sm80 moves its frame only past the margin, deciding per row and step as the scalar kernel does") {
    if (!skip_unless_runs("mma-sm80")) check_ramp("mma-sm80");
}

TEST_CASE("wgmma-sm90 moves its frame only past the margin, deciding per row and step as the scalar kernel does") {
    if (!skip_unless_runs("wgmma-sm90")) check_ramp("wgmma-sm90");
}
