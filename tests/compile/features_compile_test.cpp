// The model features (sliding window, soft-cap, sinks) compile in every family for every
// arch it serves (gfx1151, gfx942, sm_80, sm_90a), in f16 and bf16, at the dispatcher's
// tiles, and spill nothing: AMD code objects are read for spills and scratch, NVIDIA ones
// through ptxas -v. A covering sample: all three features at once (the most registers) at
// head dims at the edges and the middle, each feature alone at D=128, all of them with
// ragged and paged K/V at D=64 and 256, a soft-cap alone over pages at D=112 and a window
// alone over ragged K/V at D=64 and 96; with FAJIT_TEST_EXHAUSTIVE=1 every feature set at
// every head dim the family takes, and all of them and each alone in every layout. No GPU
// is needed; a backend whose compiler library is absent is skipped with its reason.
// V head dims of their own (KernelSpec::head_dim_v) are swept the same way, and so are
// paged K/V's page sizes.
#include <doctest/doctest.h>

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "support/batched_sample.hpp"
#include "support/compile_support.hpp"
#include "support/head_dim_sample.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct Features {
    bool window, softcap, sinks;
};
constexpr Features all_features = {true, true, true};
constexpr Features single_features[] = {{true, false, false}, {false, true, false}, {false, false, true}};

KernelSpec featured_spec(const std::string& family, const std::string& arch, int head_dim, DType dtype,
                         CausalMode causal, Features features, KvCase layout = {KvLayout::dense, 0},
                         int head_dim_v = 0) {
    KernelSpec with;
    with.head_dim_v = head_dim_v;
    with.window = features.window;
    with.softcap = features.softcap;
    with.sinks = features.sinks;
    KernelSpec spec = default_spec(family, arch, head_dim, dtype, causal, layout.layout, layout.page_size, with);
    if (family == "decode-split") spec.block_q = 4;  // a GQA group of 4, one query row
    return spec;
}

std::vector<KernelSpec> featured_specs(const std::string& family, const std::string& arch) {
    std::vector<KernelSpec> specs;
    const auto add = [&](int head_dim, DType dtype, CausalMode causal, Features features, KvCase layout) {
        const KernelSpec spec = featured_spec(family, arch, head_dim, dtype, causal, features, layout);
        if (validate(spec).empty()) specs.push_back(spec);  // e.g. a layout the family does not take
    };
    constexpr KvCase dense = {KvLayout::dense, 0}, ragged = {KvLayout::ragged, 0}, paged = {KvLayout::paged, 16};
    for (const DType dtype : {DType::f16, DType::bf16})
        for (const int head_dim : family_head_dims(family)) {
            const bool sampled = head_dim == 16 || head_dim == 64 || head_dim == 128 || head_dim == 256;
            if (exhaustive_sweeps() || sampled) add(head_dim, dtype, CausalMode::bottom_right, all_features, dense);
            for (const Features& one : single_features)
                if (exhaustive_sweeps() || head_dim == 128) add(head_dim, dtype, CausalMode::none, one, dense);
            // A batched layout's addressing adds registers to the features': wgmma-sm90
            // spilled with ragged K/V, a window and a soft-cap past d=192 while dense and
            // paged did not. The sample meets each layout at a small and the largest head
            // dim, one dtype each, and ragged K/V at d=64 in both: decode-mma, two blocks an
            // SM there, spilled in f16 and not in bf16 (tools/tiles/decode_mma.md, step 19).
            const bool batched_sampled = head_dim == 64 || head_dim == 256;
            if (exhaustive_sweeps() || (batched_sampled && (dtype == DType::bf16 || head_dim == 64)))
                add(head_dim, dtype, CausalMode::bottom_right, all_features, ragged);
            if (exhaustive_sweeps() || (batched_sampled && dtype == DType::f16))
                add(head_dim, dtype, CausalMode::bottom_right, all_features, paged);
            // Each feature alone meets the batched layouts too: wmma-gfx11 spilled with a
            // soft-cap alone over pages at padded 112 in bf16, and with a window alone over
            // ragged K/V at 64 (as mma-sm80 did at 96), which neither all three features
            // (shorter steps there) nor dense K/V showed.
            const auto sampled_alone = [&](const Features& one, const KvCase& layout) {
                if (one.softcap && layout.layout == KvLayout::paged) return head_dim == 112 && dtype == DType::bf16;
                if (one.window && layout.layout == KvLayout::ragged)
                    return (head_dim == 64 || head_dim == 96) && dtype == DType::f16;
                return false;
            };
            for (const Features& one : single_features)
                for (const KvCase& layout : {ragged, paged})
                    if (exhaustive_sweeps() || sampled_alone(one, layout))
                        add(head_dim, dtype, CausalMode::bottom_right, one, layout);
        }
    return specs;
}

// The prefill families on every arch each serves, then the decode families on theirs.
const Target every_target[] = {{"scalar", "gfx1151"},
                               {"scalar", "gfx942:sramecc+:xnack-"},
                               {"scalar", "sm_80"},
                               {"scalar", "sm_90a"},
                               {"wmma-gfx11", "gfx1151"},
                               {"mfma-gfx9", "gfx942:sramecc+:xnack-"},
                               {"mma-sm80", "sm_80"},
                               {"mma-sm80", "sm_90a"},
                               {"wgmma-sm90", "sm_90a"},
                               {"decode-split", "gfx1151"},
                               {"decode-split", "gfx942:sramecc+:xnack-"},
                               {"decode-split", "sm_80"},
                               {"decode-mma", "sm_80"},
                               {"decode-mma", "sm_90a"}};

}  // namespace

TEST_CASE("window, soft-cap and sinks compile in every family for every arch it serves, without spills") {
    std::printf("model features: %d variants compiled, each checked for spills\n",
                compile_targets(every_target, featured_specs, 1, Spills::fail));
}

namespace {

struct ValueDims {
    int head_dim, head_dim_v;
    DType dtype;
    KvCase layout = {KvLayout::dense, 0};
    Features features = {false, false, false};
};

// DeepSeek's MLA prefill in both dtypes, V wider than Q and K, and both padded; a d past
// 192 with a dv of 128, where wgmma-sm90's two stages of 128 keys no longer fit beside Q;
// ragged K/V with dv != d, where wgmma-sm90's producer spilled at 48 registers (d=64,
// dv=128), and ragged MLA with a window and a soft-cap, where it needs those 48 (at 56 its
// consumers spilled). Over one-key pages and ragged K/V, three pairs whose wmma-gfx11 key
// step spilled 5-9 VGPRs before each measured pair took a step of its own: d=96 in
// registers with dv=128 plain and dv=64 with every feature, and d=128 staged with dv=200.
// With FAJIT_TEST_EXHAUSTIVE=1 each pair in both dtypes and causal modes, and every pair in
// each batched layout, plain and with every feature.
std::vector<KernelSpec> value_dim_specs(const std::string& family, const std::string& arch) {
    constexpr KvCase ragged = {KvLayout::ragged, 0}, paged = {KvLayout::paged, 16},
                     single_key_pages = {KvLayout::paged, 1};
    constexpr Features plain = {false, false, false};
    const ValueDims sample[] = {{192, 128, DType::f16},
                                {192, 128, DType::bf16},
                                {64, 256, DType::bf16},
                                {40, 24, DType::f16},
                                {200, 128, DType::bf16},
                                {64, 128, DType::f16, ragged},
                                {192, 128, DType::bf16, ragged, all_features},
                                {96, 128, DType::bf16, single_key_pages},
                                {96, 64, DType::f16, ragged, all_features},
                                {128, 200, DType::bf16, single_key_pages}};
    const ValueDims more[] = {{128, 192, DType::f16}, {256, 64, DType::bf16}, {96, 200, DType::f16},
                              {24, 64, DType::f16},   {160, 256, DType::f16}};
    std::vector<ValueDims> pairs(std::begin(sample), std::end(sample));
    if (exhaustive_sweeps()) {
        pairs.insert(pairs.end(), std::begin(more), std::end(more));
        const std::vector<ValueDims> sampled = pairs;
        for (const ValueDims& pair : sampled)
            for (const KvCase& layout : {ragged, paged})
                for (const Features& features : {plain, all_features})
                    pairs.push_back({pair.head_dim, pair.head_dim_v, pair.dtype, layout, features});
    }
    std::vector<KernelSpec> specs;
    for (const ValueDims& pair : pairs)
        for (const CausalMode causal : {CausalMode::bottom_right, CausalMode::none}) {
            if (causal == CausalMode::none && !exhaustive_sweeps()) continue;
            for (const DType dtype : {DType::f16, DType::bf16}) {
                if (dtype != pair.dtype && !exhaustive_sweeps()) continue;
                const KernelSpec spec = featured_spec(family, arch, pair.head_dim, dtype, causal, pair.features,
                                                      pair.layout, pair.head_dim_v);
                REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
                specs.push_back(spec);
            }
        }
    return specs;
}

}  // namespace

TEST_CASE("a V head dim of its own compiles in every family for every arch it serves, without spills") {
    std::printf("V head dims: %d variants compiled, each checked for spills\n",
                compile_targets(every_target, value_dim_specs, 1, Spills::fail));
}

namespace {

// Every power-of-two page size to 256 at d=128 in bf16, with all three features (the most
// registers beside the page walk); 16-key pages are in the features' sample above.
std::vector<KernelSpec> page_size_specs(const std::string& family, const std::string& arch) {
    std::vector<KernelSpec> specs;
    for (int page_size = 1; page_size <= 256; page_size *= 2) {
        if (page_size == 16) continue;
        const KernelSpec spec = featured_spec(family, arch, 128, DType::bf16, CausalMode::bottom_right, all_features,
                                              {KvLayout::paged, page_size});
        REQUIRE_MESSAGE(validate(spec).empty(), to_string(spec), ": ", validate(spec));
        specs.push_back(spec);
    }
    return specs;
}

}  // namespace

TEST_CASE("paged K/V compiles at every power-of-two page size in every family for every arch, without spills") {
    std::printf("page sizes: %d variants compiled, each checked for spills\n",
                compile_targets(every_target, page_size_specs, 8, Spills::fail));
}
