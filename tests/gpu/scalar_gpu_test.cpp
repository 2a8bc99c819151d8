// The scalar kernel against the f64 reference, on a real device through the library.
// Skips, saying why, where no CUDA device is present.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "support/attention_case.hpp"
#include "support/gpu_test_setup.hpp"

using namespace fajit;
using namespace fajit::testing;

TEST_CASE("scalar kernel matches the f64 reference over dtype, causal, head dim, GQA, lengths and margin") {
    if (skip_without_device()) return;
    const std::pair<int, int> lengths[] = {{1, 1},      {1, 1000},   {7, 129},     {129, 7}, {7, 7},
                                           {129, 1000}, {1000, 129}, {1000, 1000}, {1000, 1}};
    int cases = 0, failures = 0;
    double worst[3] = {0, 0, 0};
    std::uint64_t seed = 1;
    for (DType dtype : {DType::f16, DType::bf16, DType::f32})
        for (CausalMode causal : {CausalMode::none, CausalMode::top_left, CausalMode::bottom_right})
            for (int head_dim : {64, 80, 128, 256})
                for (int group : {1, 4})
                    for (float margin : {0.0f, 10.0f})
                        for (auto [len_q, len_k] : lengths) {
                            CaseShape shape;
                            shape.heads_kv = 1;
                            shape.heads_q = group;
                            shape.batch = 1;
                            shape.len_q = len_q;
                            shape.len_k = len_k;
                            shape.head_dim = head_dim;
                            shape.dtype = dtype;
                            shape.causal = causal;
                            shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                            shape.layout = static_cast<Layout>(cases % 3);
                            shape.with_lse = cases % 2 == 0;
                            const CaseInputs inputs = random_inputs(shape, seed++);
                            const auto run =
                                run_on_device(gpu_test_runtime(), scalar_spec(shape, margin), shape, inputs);
                            const auto want = reference_attention(shape, inputs);
                            const auto result = compare(shape, run.outputs, want, output_tolerance(shape, inputs));
                            ++cases;
                            worst[static_cast<int>(dtype)] = std::max(worst[static_cast<int>(dtype)], result.max_error);
                            if (result.bad_elements) {
                                ++failures;
                                FAIL_CHECK(shape.describe() << " margin=" << margin << ": " << result.bad_elements
                                                            << " bad, first " << result.first_bad);
                            }
                        }
    std::printf("scalar sweep: %d cases, %d failed; max abs error f16 %.3g, bf16 %.3g, f32 %.3g\n", cases, failures,
                worst[0], worst[1], worst[2]);
    CHECK(failures == 0);
}

TEST_CASE("scalar kernel takes e4m3 inputs with f16 and bf16 outputs and descale factors") {
    if (skip_without_device()) return;
    // Factors per tensor and per KV head, some far from 1, so a factor applied to the
    // wrong tensor or head shows.
    const std::vector<float> none, per_tensor = {0.5f}, per_head = {2.0f, 0.25f};
    const std::pair<int, int> lengths[] = {{1, 1}, {7, 129}, {129, 1000}, {1000, 129}};
    int cases = 0, failures = 0;
    double worst = 0.0;
    std::uint64_t seed = 100;
    for (DType out : {DType::f16, DType::bf16})
        for (CausalMode causal : {CausalMode::none, CausalMode::bottom_right})
            for (int head_dim : {64, 128, 256})
                for (int descaled = 0; descaled < 3; ++descaled)
                    for (auto [len_q, len_k] : lengths) {
                        CaseShape shape;
                        shape.heads_kv = 2;
                        shape.heads_q = 8;
                        shape.len_q = len_q;
                        shape.len_k = len_k;
                        shape.head_dim = head_dim;
                        shape.dtype = DType::e4m3;
                        shape.o_dtype = out;
                        shape.causal = causal;
                        shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                        const std::vector<float>& factors = descaled == 0   ? none
                                                            : descaled == 1 ? per_tensor
                                                                            : per_head;
                        shape.q_descale = shape.k_descale = shape.v_descale = factors;
                        if (descaled == 2) shape.k_descale = {0.5f, 3.0f};
                        const CaseInputs inputs = random_inputs(shape, seed++);
                        const KernelSpec spec = with_features(scalar_spec(shape, 6.0f), shape);
                        const auto run = run_on_device(gpu_test_runtime(), spec, shape, inputs);
                        const auto result = compare(shape, run.outputs, reference_attention(shape, inputs),
                                                    output_tolerance(shape, inputs));
                        ++cases;
                        worst = std::max(worst, result.max_error);
                        if (result.bad_elements) {
                            ++failures;
                            FAIL_CHECK(shape.describe()
                                       << ": " << result.bad_elements << " bad, first " << result.first_bad);
                        }
                    }
    std::printf("scalar e4m3 sweep: %d cases, %d failed; max abs error %.3g\n", cases, failures, worst);
    CHECK(failures == 0);
}

TEST_CASE("scalar kernel moves its frame only past the margin on a rising score ramp") {
    if (skip_without_device()) return;
    Runtime counting(gpu_test_options(true));
    unsigned long long moves[3], kept[3];
    const float margins[3] = {0.0f, 10.0f, 40.0f};
    for (int m = 0; m < 3; ++m) {
        const CaseShape shape = ramp_shape();
        const CaseInputs inputs = ramp_inputs(shape, 7);
        const auto run = run_on_device(counting, scalar_spec(shape, margins[m]), shape, inputs, true);
        const auto want = reference_attention(shape, inputs);
        const auto result = compare(shape, run.outputs, want, output_tolerance(shape, inputs));
        std::printf("ramp margin %g: %llu frame moves, %llu frames kept, max abs error %.3g\n", margins[m],
                    run.counters[0], run.counters[1], result.max_error);
        CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
        moves[m] = run.counters[0];
        kept[m] = run.counters[1];
    }
    // The ramp rises about 6 units per 64-key step. With margin 0 every rise moves the
    // frame, so none is kept; a wider margin defers more of the moves, keeping the frame.
    CHECK(moves[0] > moves[1]);
    CHECK(moves[1] > moves[2]);
    CHECK(moves[2] > 0);
    CHECK(kept[0] == 0);
    CHECK(kept[1] > 0);
    CHECK(kept[2] > 0);
}
