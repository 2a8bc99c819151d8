// The split-KV decode families against the f64 reference: dense and paged, one split, a
// few, and as many as the plan gives, GQA groups packed into the tile's rows. Each family
// runs where its arch rule admits the device; skips, saying why, where no device is present.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "families/registry.hpp"
#include "spec/arch.hpp"
#include "support/batched_sample.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/sequence_batch_case.hpp"

using namespace fajit;
using namespace fajit::testing;

TEST_CASE("each decode family matches the f64 reference with one split, a few and the planned count") {
    if (skip_without_device()) return;
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::decode)) {
        int cases = 0, failures = 0;
        double worst = 0.0;
        std::uint64_t seed = 900;
        for (const int splits : {1, 3, 0}) {
            Options options = gpu_test_options(false);
            options.decode_splits = splits;
            Runtime runtime(options);
            for (const DType dtype : {DType::f16, DType::bf16})
                // 40: a head dim decode-mma pads to 48 inside the kernel.
                for (const int head_dim : {40, 64, 128, 256})
                    // 24 and 32 rows: decode-mma's two row tiles (a speculative step).
                    for (const auto& [group, len_q] :
                         {std::pair{1, 1}, {4, 1}, {8, 1}, {4, 4}, {8, 2}, {8, 3}, {8, 4}}) {
                        const int rows = group * len_q;
                        if (family == "decode-split" && rows > 16) continue;  // more rows than its tile
                        // More outputs per lane than decode-split keeps, or than decode-mma
                        // keeps in two row tiles.
                        if (family == "decode-split" && head_dim == 256 && rows > 8) continue;
                        if (family == "decode-mma" && head_dim == 256 && rows > 16) continue;
                        for (const KvLayout layout : {KvLayout::dense, KvLayout::paged}) {
                            const CausalMode causal = cases % 3 == 0 ? CausalMode::none : CausalMode::bottom_right;
                            const int page_size = layout == KvLayout::paged ? (cases % 2 ? 16 : 1) : 0;
                            const KernelSpec spec =
                                decode_spec(family, gpu_test_arch(), rows, head_dim, dtype, causal, layout, page_size);
                            REQUIRE_MESSAGE(validate(spec) == "", validate(spec));
                            Comparison result;
                            std::string what;
                            if (layout == KvLayout::dense) {
                                CaseShape shape;
                                shape.batch = 3;
                                shape.heads_kv = 2;
                                shape.heads_q = 2 * group;
                                shape.len_q = len_q;
                                shape.len_k = 3000 + cases;
                                shape.head_dim = head_dim;
                                shape.dtype = dtype;
                                shape.causal = causal;
                                shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                                shape.layout = static_cast<Layout>(cases % 3);
                                const CaseInputs inputs = random_inputs(shape, seed++);
                                const auto run = run_on_device(runtime, spec, shape, inputs);
                                result = compare(shape, run.outputs, reference_attention(shape, inputs),
                                                 output_tolerance(shape, inputs));
                                what = shape.describe();
                            } else {
                                BatchShape shape;
                                shape.len_q = {len_q, len_q, len_q, len_q};
                                shape.len_k = {1, 5000, 0, 300 + cases};
                                shape.heads_kv = 2;
                                shape.heads_q = 2 * group;
                                shape.head_dim = head_dim;
                                shape.dtype = dtype;
                                shape.causal = causal;
                                shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                                shape.kv_layout = layout;
                                shape.page_size = page_size;
                                shape.heads_first = cases % 2 == 0;
                                const auto inputs = random_batch_inputs(shape, seed);
                                result = compare_batch(shape, inputs,
                                                       run_batch_on_device(runtime, &spec, shape, inputs, seed));
                                ++seed;
                                what = shape.describe();
                            }
                            ++cases;
                            worst = std::max(worst, result.max_error);
                            if (result.bad_elements) {
                                ++failures;
                                FAIL_CHECK("splits=" << splits << " " << to_string(spec) << " " << what << ": "
                                                     << result.bad_elements << " bad, first " << result.first_bad);
                            }
                        }
                    }
        }
        std::printf("%s sweep: %d cases, %d failed; max abs error %.3g\n", family.c_str(), cases, failures, worst);
        CHECK(failures == 0);
    }
}

TEST_CASE("every wave count a decode family accepts matches the f64 reference") {
    if (skip_without_device()) return;
    // The dispatcher chooses 8 warps (4 where their buffers do not fit); 1, 2 and 4 come only
    // from FAJIT_TILE or a manifest, and 1 once did not compile at all.
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::decode)) {
        int cases = 0;
        std::uint64_t seed = 2300;
        Runtime runtime(gpu_test_options(false));
        for (const KernelSpec& spec : decode_tile_specs(family, gpu_test_arch(), false)) {
            BatchShape shape;
            shape.len_q = {1, 1, 1, 1};
            // One key, many (the planner splits them), none, and a partial page.
            shape.len_k = {1, 5000, 0, 300 + cases};
            shape.heads_kv = 2;
            shape.heads_q = 8;
            shape.head_dim = spec.head_dim;
            shape.dtype = spec.dtype;
            shape.causal = spec.causal;
            shape.scale = 4.0f / std::sqrt(static_cast<float>(spec.head_dim));
            shape.kv_layout = spec.kv_layout;
            shape.page_size = spec.page_size;
            const auto inputs = random_batch_inputs(shape, seed);
            const Comparison result =
                compare_batch(shape, inputs, run_batch_on_device(runtime, &spec, shape, inputs, seed));
            ++seed;
            ++cases;
            CHECK_MESSAGE(result.bad_elements == 0, to_string(spec) << " " << shape.describe() << ": "
                                                                    << result.bad_elements << " bad, first "
                                                                    << result.first_bad);
        }
        std::printf("%s: %d wave counts matched the reference\n", family.c_str(), cases);
        CHECK(cases >= 3);
    }
}

TEST_CASE("the splits of a KV head merge within a cluster as through L2, to the bit where the kernel is deterministic") {
    if (skip_without_device()) return;
    if (sm_version(gpu_test_arch()) < 90) {
        std::printf("skipped: %s has no thread-block clusters (sm_90 and later)\n", gpu_test_arch().c_str());
        return;
    }
    for (const std::string& family : families_on(gpu_test_arch(), FamilyKind::decode)) {
        int cases = 0;
        std::uint64_t seed = 1700;
        // 16: the largest cluster; 2: each block stores half the rows; 5: a share that
        // leaves some blocks a row fewer (or none: 4 packed rows at GQA 4).
        for (const int splits : {2, 5, 16})
            for (const int group : {1, 4, 8}) {
                const KernelSpec spec = decode_spec(family, gpu_test_arch(), group, 128, DType::bf16,
                                                    CausalMode::bottom_right, KvLayout::dense, 0);
                CaseShape shape;
                shape.batch = 2;
                shape.heads_kv = 2;
                shape.heads_q = 2 * group;
                shape.len_q = 1;
                shape.len_k = 4000 + splits;
                shape.head_dim = 128;
                shape.dtype = DType::bf16;
                shape.causal = CausalMode::bottom_right;
                shape.scale = 4.0f / std::sqrt(128.0f);
                const CaseInputs inputs = random_inputs(shape, seed++);
                Outputs merged[2];
                for (const bool in_cluster : {true, false}) {
                    Options options = gpu_test_options(false);
                    options.decode_splits = splits;
                    options.cluster_merge = in_cluster;
                    Runtime runtime(options);
                    merged[in_cluster] = run_on_device(runtime, spec, shape, inputs).outputs;
                }
                CAPTURE(to_string(spec));
                CAPTURE(splits);
                // decode-split's waves meet through shared-memory float atomics, in no fixed
                // order, so its partials (and outputs) may differ in the last bit from run to run.
                if (family == "decode-mma") {
                    CHECK(merged[true].o == merged[false].o);
                    CHECK(merged[true].lse == merged[false].lse);
                }
                CHECK(compare(shape, merged[true], reference_attention(shape, inputs), output_tolerance(shape, inputs))
                          .bad_elements == 0);
                ++cases;
            }
        std::printf("%s: %d cases merged in a cluster and through L2\n", family.c_str(), cases);
    }
}

TEST_CASE("the dispatcher sends decode to a decode family and prefill to the prefill families") {
    if (skip_without_device()) return;
    AttentionArgs args;
    static char memory[16];
    args.q = args.k = args.v = args.o = memory;
    args.batch = 4;
    args.heads_q = 32;
    args.heads_kv = 8;
    args.len_k = 8192;
    args.head_dim = 128;
    args.dtype = DType::bf16;
    args.scale = 0.088f;
    args.causal = CausalMode::bottom_right;
    const auto select = [&](int len_q) {
        args.len_q = len_q;
        args.q_strides = args.o_strides = {32LL * len_q * 128, std::int64_t(len_q) * 128, 128};
        args.k_strides = args.v_strides = {8LL * 8192 * 128, 8192LL * 128, 128};
        return gpu_test_runtime().select(args);
    };
    // Tensor cores where the arch has mma.sync; elsewhere a tile of just the rows needed.
    const bool tensor_cores = sm_version(gpu_test_arch()) >= 80;
    const std::string decode_family = tensor_cores ? "decode-mma" : "decode-split";
    CHECK(select(1).family == decode_family);
    CHECK(select(1).block_q == (tensor_cores ? 16 : 4));
    CHECK(select(4).family == decode_family);
    CHECK(select(4).block_q == 16);
    // 20 rows per KV head: decode-mma's two row tiles, more than decode-split's tile.
    CHECK((select(5).family == "decode-mma") == tensor_cores);
    if (tensor_cores) CHECK(select(5).block_q == 32);
    CHECK(select(9).family != decode_family);  // 36 rows: more than any decode tile
    CHECK(select(2048).family != decode_family);
}
