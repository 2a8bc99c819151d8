// V and O with a head dim of their own (KernelSpec::head_dim_v) against the f64
// reference, in every family: DeepSeek's MLA prefill (192 / 128), V wider
// than Q and K, head dims that need padding to each family's instruction shape, every
// dtype the family runs, GQA, the causal modes, strided layouts, and the model features
// on top. Each family runs where it compiles for the device (wmma-gfx11 and mfma-gfx9 through their
// emulations on NVIDIA); skips, saying why, where no device is present.
//
// Tolerance: the tensor-core families round P to the element type before the P.V
// product, which output_tolerance's extra_relative takes (see tests/matrix_core/matrix_core_gpu_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "families/registry.hpp"
#include "support/batched_sample.hpp"
#include "support/gpu_test_setup.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct ValueDimCase {
    int head_dim, head_dim_v;
    CausalMode causal;
    int len_q, len_k;
    Layout layout;
    bool features = false;  // a window, a soft-cap and sinks as well
};

const ValueDimCase cases[] = {
    {192, 128, CausalMode::bottom_right, 300, 1000, Layout::bhsd},
    {192, 128, CausalMode::none, 129, 777, Layout::bshd},
    {192, 128, CausalMode::bottom_right, 257, 1500, Layout::padded, true},
    {128, 192, CausalMode::top_left, 200, 450, Layout::bhsd},
    {64, 256, CausalMode::bottom_right, 150, 700, Layout::bshd},
    {256, 64, CausalMode::none, 100, 333, Layout::padded},
    {40, 24, CausalMode::bottom_right, 200, 150, Layout::bhsd},
    {96, 200, CausalMode::none, 65, 600, Layout::bshd, true},
};

CaseShape shape_of(const ValueDimCase& c, DType dtype) {
    CaseShape shape;
    shape.batch = 2;
    shape.heads_q = 4;
    shape.heads_kv = 2;
    shape.len_q = c.len_q;
    shape.len_k = c.len_k;
    shape.head_dim = c.head_dim;
    shape.head_dim_v = c.head_dim_v;
    shape.dtype = dtype;
    shape.causal = c.causal;
    shape.layout = c.layout;
    shape.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    if (c.features) {
        shape.window = SlidingWindow{100, 3};
        shape.softcap = 20.0f;
        shape.sinks = {-1.0f, 0.5f, 2.0f, -3.0f};
    }
    return shape;
}

}  // namespace

TEST_CASE("every prefill family with a V head dim of its own matches the f64 reference") {
    if (skip_without_device()) return;
    Runtime& runtime = gpu_test_runtime();
    for (const std::string& name : families_on(gpu_test_arch(), FamilyKind::prefill)) {
        const FamilyDescriptor* family = find_family(name);
        std::vector<std::pair<KernelSpec, CaseShape>> runs;
        std::vector<KernelSpec> specs;
        for (const DType dtype : {DType::f16, DType::bf16, DType::f32})
            for (const ValueDimCase& c : cases) {
                const CaseShape shape = shape_of(c, dtype);
                const KernelSpec spec = default_spec(std::string(family->name), gpu_test_arch(), c.head_dim, dtype,
                                                     c.causal, KvLayout::dense, 0, with_features({}, shape));
                if (!validate(spec).empty()) continue;  // a dtype or arch the family does not take
                runs.emplace_back(spec, shape);
                specs.push_back(spec);
            }
        if (runs.empty()) {
            MESSAGE(family->name << " skipped: it does not run on " << gpu_test_arch());
            continue;
        }
        REQUIRE(prepare_all(runtime, specs) == 0);
        int failures = 0;
        double worst = 0.0;
        std::uint64_t seed = 7000;
        for (const auto& [spec, shape] : runs) {
            const CaseInputs inputs = random_inputs(shape, seed++);
            const double rounding = family == &fallback_family() ? 0.0 : unit_roundoff(shape.dtype);
            const Comparison result =
                compare(shape, run_on_device(runtime, spec, shape, inputs).outputs, reference_attention(shape, inputs),
                        output_tolerance(shape, inputs, rounding));
            worst = std::max(worst, result.max_error);
            if (result.bad_elements == 0) continue;
            ++failures;
            FAIL_CHECK(to_string(spec) << " " << shape.describe() << ": " << result.bad_elements << " bad, first "
                                       << result.first_bad);
        }
        std::printf("%s with dv != d: %zu cases, %d failed; max abs error %.3g\n", std::string(family->name).c_str(),
                    runs.size(), failures, worst);
        CHECK(failures == 0);
    }
}

TEST_CASE("each decode family with a V head dim of its own matches the f64 reference, whole and split") {
    if (skip_without_device()) return;
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::decode)) {
        int cases = 0, failures = 0;
        std::uint64_t seed = 8000;
        for (const int splits : {1, 0}) {  // the whole range in one block, and the planned split (merged partials)
            Options options = gpu_test_options(false);
            options.decode_splits = splits;
            Runtime runtime(options);
            for (const DType dtype : {DType::f16, DType::bf16})
                for (const auto& [head_dim, head_dim_v, len_q] : {std::tuple{192, 128, 1}, {64, 256, 2}, {40, 24, 4}}) {
                    const ValueDimCase c = {head_dim, head_dim_v, CausalMode::bottom_right, len_q, 3000, Layout::bhsd};
                    CaseShape shape = shape_of(c, dtype);
                    shape.heads_q = 8;  // a GQA group of 4 per KV head: 4 x len_q packed rows
                    shape.heads_kv = 2;
                    KernelSpec spec =
                        decode_spec(family, gpu_test_arch(), 4 * len_q, head_dim, dtype, c.causal, KvLayout::dense, 0);
                    spec.head_dim_v = head_dim_v;
                    spec = with_family_defaults(spec);
                    if (family == "decode-split") spec.block_q = 4 * len_q;
                    REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
                    const CaseInputs inputs = random_inputs(shape, seed++);
                    const Comparison result = compare(shape, run_on_device(runtime, spec, shape, inputs).outputs,
                                                      reference_attention(shape, inputs),
                                                      output_tolerance(shape, inputs, unit_roundoff(dtype)));
                    ++cases;
                    if (result.bad_elements == 0) continue;
                    ++failures;
                    FAIL_CHECK(to_string(spec) << " splits=" << splits << " " << shape.describe() << ": "
                                               << result.bad_elements << " bad, first " << result.first_bad);
                }
        }
        std::printf("%s with dv != d: %d cases, %d failed\n", family.c_str(), cases, failures);
        CHECK(failures == 0);
    }
}
