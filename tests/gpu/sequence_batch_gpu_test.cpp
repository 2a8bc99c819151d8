// Batched calls (ragged and paged K/V) against the f64 reference of each sequence, for
// every family that lists the layout and runs on this device (wmma-gfx11 and mfma-gfx9 through
// their emulations on NVIDIA). Skips, saying why, where no device is present.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "families/registry.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/sequence_batch_case.hpp"

using namespace fajit;
using namespace fajit::testing;

namespace {

struct Case {
    BatchShape shape;
    KernelSpec spec;
};

bool takes(const FamilyDescriptor& family, KvLayout layout) {
    for (const KvLayout listed : family.kv_layouts)
        if (listed == layout) return true;
    return false;
}

// Lengths per sequence (query rows x keys): empty sequences, sequences shorter than a
// page, more queries than keys, and a few long enough to cross many blocks and pages.
const std::vector<std::pair<int, int>> length_sets[] = {
    {{5, 40}, {0, 17}, {3, 0}, {1, 1}, {130, 300}, {7, 3}},
    {{64, 1000}, {1, 513}, {200, 200}},
    // Decode: a few query rows per sequence, for the decode family too.
    {{1, 1000}, {2, 37}, {0, 5}, {1, 0}, {2, 1}, {1, 4100}},
};

}  // namespace

TEST_CASE("every family that takes a batched layout matches the f64 reference per sequence") {
    if (skip_without_device()) return;
    const std::string arch = gpu_test_arch();
    std::vector<Case> cases;
    int index = 0;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        if (!family.compiles_for(arch)) continue;
        for (const auto& [layout, page_size] :
             {std::pair{KvLayout::ragged, 0}, {KvLayout::paged, 1}, {KvLayout::paged, 16}, {KvLayout::paged, 64}}) {
            if (!takes(family, layout)) continue;
            for (const DType dtype : {DType::f16, DType::bf16})
                for (const int head_dim : {64, 128, 256})
                    for (const int group : {1, 4, 8}) {
                        const auto& lengths = length_sets[index % 3];
                        BatchShape shape;
                        for (const auto& [len_q, len_k] : lengths) {
                            shape.len_q.push_back(len_q);
                            shape.len_k.push_back(len_k);
                        }
                        shape.heads_kv = 2;
                        shape.heads_q = 2 * group;
                        shape.head_dim = head_dim;
                        shape.dtype = dtype;
                        shape.causal = index % 3 == 2 ? CausalMode::none : CausalMode::bottom_right;
                        shape.scale = 4.0f / std::sqrt(static_cast<float>(head_dim));
                        shape.kv_layout = layout;
                        shape.page_size = page_size;
                        shape.heads_first = index % 2 == 1;
                        shape.with_lse = index % 4 != 3;
                        ++index;
                        KernelSpec spec;
                        spec.family = std::string(family.name);
                        spec.arch = arch;
                        spec.head_dim = head_dim;
                        spec.dtype = dtype;
                        spec.causal = shape.causal;
                        spec.kv_layout = layout;
                        spec.page_size = page_size;
                        spec.rescale_margin = 10.0f;
                        spec = with_family_defaults(spec);
                        if (!validate(spec).empty()) continue;  // e.g. a head dim the family lacks
                        const ShapeClass call = {
                            head_dim,
                            dtype,
                            shape.causal,
                            QueryLength::large,
                            layout,
                            page_size,
                            classify_decode_rows(*std::max_element(shape.len_q.begin(), shape.len_q.end()),
                                                 shape.heads_q, shape.heads_kv)};
                        if (family.refuses_shape && !family.refuses_shape(spec, call).empty()) continue;
                        cases.push_back({shape, spec});
                    }
        }
    }
    std::vector<KernelSpec> specs;
    std::set<std::string> seen;
    for (const Case& c : cases)
        if (seen.insert(to_string(c.spec)).second) specs.push_back(c.spec);
    std::printf("preparing %zu kernels for %zu batched cases\n", specs.size(), cases.size());
    REQUIRE(prepare_all(gpu_test_runtime(), specs) == 0);

    int failures = 0;
    std::set<std::string> families;
    double worst = 0.0, worst_lse = 0.0;
    std::uint64_t seed = 500;
    for (const Case& c : cases) {
        const auto inputs = random_batch_inputs(c.shape, seed);
        const auto got = run_batch_on_device(gpu_test_runtime(), &c.spec, c.shape, inputs, seed++);
        const bool scalar = c.spec.family == fallback_family().name;
        const auto result = compare_batch(c.shape, inputs, got, scalar ? 0.0 : unit_roundoff(c.shape.dtype));
        families.insert(c.spec.family);
        worst = std::max(worst, result.max_error);
        worst_lse = std::max(worst_lse, result.max_lse_error);
        if (result.bad_elements) {
            ++failures;
            FAIL_CHECK(c.spec.family << " " << c.shape.describe() << ": " << result.bad_elements << " bad, first "
                                     << result.first_bad);
        }
    }
    std::string names;
    for (const auto& name : families) names += " " + name;
    std::printf("batched sweep: %zu cases over%s, %d failed; max abs error %.3g, max lse error %.3g\n", cases.size(),
                names.c_str(), failures, worst, worst_lse);
    CHECK(failures == 0);
}

TEST_CASE("the dispatcher runs a decode-shaped paged call through whichever family it selects") {
    if (skip_without_device()) return;
    BatchShape shape;
    shape.len_q = {1, 1, 4};
    shape.len_k = {700, 33, 90};
    shape.heads_q = 8;
    shape.heads_kv = 2;
    shape.head_dim = 128;
    shape.dtype = DType::bf16;
    shape.causal = CausalMode::bottom_right;
    shape.kv_layout = KvLayout::paged;
    shape.page_size = 16;
    const auto inputs = random_batch_inputs(shape, 3);
    const auto got = run_batch_on_device(gpu_test_runtime(), nullptr, shape, inputs, 3);
    const auto result = compare_batch(shape, inputs, got, unit_roundoff(shape.dtype));
    CHECK_MESSAGE(result.bad_elements == 0, result.first_bad);
}
