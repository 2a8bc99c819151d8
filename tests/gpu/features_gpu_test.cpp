// Sliding windows, logit soft-caps and attention sinks against the f64 reference: each
// feature in each family and dtype, on the cases each one invites:
//   windows narrower than a key block, wider than Lk, one- and two-sided, and rows that
//   see no key at all;
//   a soft-cap on huge scores (scale 4 puts raw scores far past the cap), one above every
//   score, and caps on either side of the largest for which bf16 rows keep a fixed frame;
//   sinks on rows that see no key (output 0, LSE the sink), and a sink of -inf.
// Prefill families and the decode families run dense calls; the decode families also run
// a paged batch, since serving decodes windowed models over a paged cache. Each family
// runs where it compiles for the device (wmma-gfx11 and mfma-gfx9 through their emulations on NVIDIA);
// skips, saying why, where no device is present.
//
// Tolerance: the tensor-core families round P to the element type before the P.V
// product, which output_tolerance's extra_relative takes (see wmma_gpu_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "families/registry.hpp"
#include "support/batched_sample.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/sequence_batch_case.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct FeatureCase {
    const char* what;
    CausalMode causal;
    int len_q, len_k;
    std::optional<SlidingWindow> window;
    float softcap = 0.0f;
    bool sinks = false;
    float scale = 0.0f;  // 0: 1/sqrt(head_dim)
};

const FeatureCase prefill_cases[] = {
    {"window narrower than a block", CausalMode::bottom_right, 150, 700, SlidingWindow{5, 0}},
    {"two-sided window", CausalMode::none, 300, 300, SlidingWindow{37, 11}},
    {"window wider than Lk", CausalMode::none, 129, 1000, SlidingWindow{5000, 5000}},
    {"window unbounded left, top-left", CausalMode::top_left, 200, 450, SlidingWindow{-1, 3}},
    {"window right edge only", CausalMode::none, 100, 400, SlidingWindow{-1, 2}},
    {"window with rows that see no key", CausalMode::bottom_right, 200, 150, SlidingWindow{16, 0}},
    {"soft-cap on huge scores", CausalMode::none, 257, 777, std::nullopt, 10.0f, false, 4.0f},
    {"soft-cap under a window", CausalMode::bottom_right, 300, 1000, SlidingWindow{200, 0}, 30.0f, false, 2.0f},
    // A cap above every score, as in models, where it is a guard rail.
    {"soft-cap above every score", CausalMode::bottom_right, 300, 1000, std::nullopt, 50.0f},
    // bf16 fixes capped rows' frames up to c = 65.8 (fa_capped_frame_fits); past it they move.
    {"soft-cap at the fixed frame's limit", CausalMode::bottom_right, 150, 900, std::nullopt, 65.0f, false, 8.0f},
    {"soft-cap past the fixed frame's limit", CausalMode::bottom_right, 150, 900, std::nullopt, 80.0f, false, 8.0f},
    {"sinks on rows that see no key", CausalMode::bottom_right, 200, 150, std::nullopt, 0.0f, true},
    {"sinks, soft-cap and window", CausalMode::bottom_right, 333, 2000, SlidingWindow{100, 0}, 20.0f, true, 1.0f},
};

const FeatureCase decode_cases[] = {
    {"decode window narrower than a block", CausalMode::bottom_right, 1, 3000, SlidingWindow{5, 0}},
    {"decode window of 100", CausalMode::bottom_right, 2, 3000, SlidingWindow{100, 0}},
    {"decode window wider than Lk", CausalMode::none, 1, 3000, SlidingWindow{5000, -1}},
    {"decode soft-cap on huge scores", CausalMode::none, 1, 2000, std::nullopt, 10.0f, false, 4.0f},
    {"decode soft-cap past the fixed frame's limit", CausalMode::none, 1, 2000, std::nullopt, 80.0f, false, 8.0f},
    {"decode sinks on rows that see no key", CausalMode::bottom_right, 4, 2, std::nullopt, 0.0f, true},
    {"decode sinks, soft-cap and window", CausalMode::bottom_right, 1, 4000, SlidingWindow{128, 0}, 20.0f, true, 1.0f},
};

// One sink per query head, one of them -inf: that head's rows behave as with no sink.
std::vector<float> sinks_for(int heads_q) {
    std::vector<float> sinks;
    for (int h = 0; h < heads_q; ++h)
        sinks.push_back(h == 1 ? -std::numeric_limits<float>::infinity() : -2.0f + 1.5f * static_cast<float>(h));
    return sinks;
}

CaseShape shape_of(const FeatureCase& c, int heads_q, int heads_kv, int head_dim, DType dtype) {
    CaseShape shape;
    shape.batch = 2;
    shape.heads_q = heads_q;
    shape.heads_kv = heads_kv;
    shape.len_q = c.len_q;
    shape.len_k = c.len_k;
    shape.head_dim = head_dim;
    shape.dtype = dtype;
    shape.causal = c.causal;
    shape.scale = c.scale > 0.0f ? c.scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
    shape.window = c.window;
    shape.softcap = c.softcap;
    if (c.sinks) shape.sinks = sinks_for(heads_q);
    return shape;
}

struct Tally {
    int cases = 0, failures = 0;
    double worst = 0.0;

    void add(const std::string& what, const Comparison& result) {
        ++cases;
        worst = std::max(worst, result.max_error);
        if (result.bad_elements == 0) return;
        ++failures;
        FAIL_CHECK(what << ": " << result.bad_elements << " bad, first " << result.first_bad);
    }
};

double rounding_of(const std::string& family, DType dtype) {
    return family == fallback_family().name ? 0.0 : unit_roundoff(dtype);
}

}  // namespace

TEST_CASE("every prefill family masks windows, caps scores and adds sinks as the f64 reference does") {
    if (skip_without_device()) return;
    Runtime& runtime = gpu_test_runtime();
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::prefill)) {
        struct Run {
            KernelSpec spec;
            CaseShape shape;
            const char* what;
        };
        std::vector<Run> runs;
        std::vector<KernelSpec> specs;
        for (const DType dtype : {DType::f16, DType::bf16, DType::f32})
            for (const int head_dim : {64, 80, 128, 256})
                for (const FeatureCase& c : prefill_cases) {
                    const CaseShape shape = shape_of(c, 4, 2, head_dim, dtype);
                    const KernelSpec spec = default_spec(family, gpu_test_arch(), head_dim, dtype, c.causal,
                                                         KvLayout::dense, 0, with_features({}, shape));
                    if (!validate(spec).empty()) continue;  // a dtype, head dim or arch the family does not take
                    runs.push_back({spec, shape, c.what});
                    specs.push_back(spec);
                }
        if (runs.empty()) {
            MESSAGE(family << " skipped: it does not run on " << gpu_test_arch());
            continue;
        }
        REQUIRE(prepare_all(runtime, specs) == 0);
        Tally tally;
        std::uint64_t seed = 4000;
        for (const Run& run : runs) {
            const CaseInputs inputs = random_inputs(run.shape, seed++);
            const DeviceRun got = run_on_device(runtime, run.spec, run.shape, inputs);
            tally.add(std::string(run.what) + ": " + to_string(run.spec) + " " + run.shape.describe(),
                      compare(run.shape, got.outputs, reference_attention(run.shape, inputs),
                              output_tolerance(run.shape, inputs, rounding_of(family, run.shape.dtype))));
        }
        std::printf("%s features: %d cases, %d failed; max abs error %.3g\n", family.c_str(), tally.cases,
                    tally.failures, tally.worst);
        CHECK(tally.failures == 0);
    }
}

TEST_CASE("each decode family masks windows, caps scores and adds sinks, dense and paged") {
    if (skip_without_device()) return;
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::decode)) {
        Tally tally;
        std::uint64_t seed = 5000;
        for (const int splits : {1, 0}) {  // the whole range in one block, and the planned split
            Options options = gpu_test_options(false);
            options.decode_splits = splits;
            Runtime runtime(options);
            for (const DType dtype : {DType::f16, DType::bf16})
                for (const int head_dim : {64, 128}) {
                    for (const FeatureCase& c : decode_cases) {
                        const CaseShape shape = shape_of(c, 8, 2, head_dim, dtype);
                        const KernelSpec spec =
                            with_features(decode_spec(family, gpu_test_arch(), 4 * c.len_q, head_dim, dtype, c.causal,
                                                      KvLayout::dense, 0),
                                          shape);
                        REQUIRE_MESSAGE(validate(spec) == "", validate(spec));
                        const CaseInputs inputs = random_inputs(shape, seed++);
                        const DeviceRun got = run_on_device(runtime, spec, shape, inputs);
                        tally.add(std::string(c.what) + " splits=" + std::to_string(splits) + ": " + to_string(spec) +
                                      " " + shape.describe(),
                                  compare(shape, got.outputs, reference_attention(shape, inputs),
                                          output_tolerance(shape, inputs, unit_roundoff(dtype))));
                    }
                    // Paged: a window that starts mid-page and mid-block, every feature on, and
                    // sequences shorter than the window, than a page, and empty.
                    BatchShape shape;
                    shape.len_q = {1, 1, 1, 1};
                    shape.len_k = {1, 5000, 0, 300};
                    shape.heads_kv = 2;
                    shape.heads_q = 8;
                    shape.head_dim = head_dim;
                    shape.dtype = dtype;
                    shape.causal = CausalMode::bottom_right;
                    shape.scale = 1.0f;
                    shape.kv_layout = KvLayout::paged;
                    shape.page_size = 16;
                    shape.window = SlidingWindow{999, 0};
                    shape.softcap = 20.0f;
                    shape.sinks = sinks_for(shape.heads_q);
                    CaseShape features;
                    features.window = shape.window;
                    features.softcap = shape.softcap;
                    features.sinks = shape.sinks;
                    const KernelSpec spec = with_features(
                        decode_spec(family, gpu_test_arch(), 4, head_dim, dtype, shape.causal, KvLayout::paged, 16),
                        features);
                    const auto inputs = random_batch_inputs(shape, seed);
                    tally.add("paged decode splits=" + std::to_string(splits) + ": " + to_string(spec) + " " +
                                  shape.describe(),
                              compare_batch(shape, inputs, run_batch_on_device(runtime, &spec, shape, inputs, seed),
                                            unit_roundoff(dtype)));
                    ++seed;
                }
        }
        std::printf("%s features: %d cases, %d failed; max abs error %.3g\n", family.c_str(), tally.cases,
                    tally.failures, tally.worst);
        CHECK(tally.failures == 0);
    }
}

TEST_CASE("the dispatcher runs each feature on the arch's tensor-core family, not the fallback") {
    if (skip_without_device()) return;
    static char memory[16];
    AttentionArgs args;
    args.q = args.k = args.v = args.o = memory;
    args.batch = 1;
    args.heads_q = 8;
    args.heads_kv = 2;
    args.len_q = 2048;
    args.len_k = 8192;
    args.head_dim = 128;
    args.dtype = DType::bf16;
    args.scale = 0.088f;
    args.causal = CausalMode::bottom_right;
    args.q_strides = args.o_strides = {8LL * 2048 * 128, 2048LL * 128, 128};
    args.k_strides = args.v_strides = {2LL * 8192 * 128, 8192LL * 128, 128};
    const std::string plain = gpu_test_runtime().select(args).family;
    args.window = SlidingWindow{4095, 0};
    args.softcap = 50.0f;
    args.sinks = reinterpret_cast<const float*>(memory);
    const KernelSpec featured = gpu_test_runtime().select(args);
    CHECK(featured.family == plain);
    CHECK(featured.window);
    CHECK(featured.softcap);
    CHECK(featured.sinks);
}
