// Batched calls (ragged and paged K/V) against the f64 reference of each sequence, for
// every family that lists the layout and runs on this device (wmma-gfx11 and mfma-gfx9 through
// their emulations on NVIDIA). Skips, saying why, where no device is present.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <stdexcept>

#include "families/registry.hpp"
#include "support/batched_sample.hpp"
#include "support/gpu_test_setup.hpp"
#include "support/sequence_batch_case.hpp"
#include "support/test_device.hpp"

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

// A batch of sequences with these (query rows, keys) lengths; the rest as BatchShape's defaults.
BatchShape batch_of(const std::vector<std::pair<int, int>>& lengths) {
    BatchShape shape;
    for (const auto& [len_q, len_k] : lengths) {
        shape.len_q.push_back(len_q);
        shape.len_k.push_back(len_k);
    }
    return shape;
}

// The family's spec for a batched shape with its default tiles, or nothing where the family
// does not take it: its layout, a head dim or dtype it lacks, or a shape it leaves to
// others (decode families take decode shapes only).
std::optional<KernelSpec> batched_spec(const FamilyDescriptor& family, const std::string& arch,
                                       const BatchShape& shape) {
    if (!takes(family, shape.kv_layout)) return std::nullopt;
    const int page_size = shape.kv_layout == KvLayout::paged ? shape.page_size : 0;
    const KernelSpec spec = default_spec(std::string(family.name), arch, shape.head_dim, shape.dtype, shape.causal,
                                         shape.kv_layout, page_size, with_features({}, shape.sequence(0)));
    if (!validate(spec).empty()) return std::nullopt;
    const ShapeClass call = {
        .head_dim = shape.head_dim,
        .dtype = shape.dtype,
        .causal = shape.causal,
        .kv_layout = shape.kv_layout,
        .page_size = page_size,
        .decode_rows = classify_decode_rows(*std::max_element(shape.len_q.begin(), shape.len_q.end()),
                                            shape.heads_q, shape.heads_kv),
        .head_dim_v = shape.head_dim_v};
    if (family.refuses_shape && !family.refuses_shape(spec, call).empty()) return std::nullopt;
    return spec;
}

// Runs each case (its kernels compiled first, in parallel) against the f64 reference of
// each sequence; prints a line under `label` and returns how many cases failed.
int run_cases(const std::vector<Case>& cases, const std::string& label) {
    std::vector<KernelSpec> specs;
    std::set<std::string> seen;
    for (const Case& c : cases)
        if (seen.insert(to_string(c.spec)).second) specs.push_back(c.spec);
    std::printf("preparing %zu kernels for %zu %s cases\n", specs.size(), cases.size(), label.c_str());
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
            FAIL_CHECK(to_string(c.spec) << " " << c.shape.describe() << ": " << result.bad_elements << " bad, first "
                                         << result.first_bad);
        }
    }
    std::string names;
    for (const auto& name : families) names += " " + name;
    std::printf("%s: %zu cases over%s, %d failed; max abs error %.3g, max lse error %.3g\n", label.c_str(),
                cases.size(), names.c_str(), failures, worst, worst_lse);
    return failures;
}

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
                        BatchShape shape = batch_of(length_sets[index % 3]);
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
                        if (const auto spec = batched_spec(family, arch, shape)) cases.push_back({shape, *spec});
                    }
        }
    }
    CHECK(run_cases(cases, "batched sweep") == 0);
}

TEST_CASE("every family that takes paged K/V matches the f64 reference at every page size from 1 to 256") {
    if (skip_without_device()) return;
    const std::string arch = gpu_test_arch();
    std::vector<Case> cases;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        if (!family.compiles_for(arch)) continue;
        // The other powers of two, 1, 16 and 64, are swept above with every head dim and group.
        for (const int page_size : {2, 4, 8, 32, 128, 256})
            for (const auto& lengths : length_sets) {
                BatchShape shape = batch_of(lengths);
                shape.heads_kv = 2;
                shape.heads_q = 8;
                shape.head_dim = 128;
                shape.dtype = DType::bf16;
                shape.causal = CausalMode::bottom_right;
                shape.scale = 4.0f / std::sqrt(128.0f);
                shape.kv_layout = KvLayout::paged;
                shape.page_size = page_size;
                shape.heads_first = cases.size() % 2 == 1;
                if (const auto spec = batched_spec(family, arch, shape)) cases.push_back({shape, *spec});
            }
    }
    CHECK(run_cases(cases, "every page size") == 0);
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

TEST_CASE("every family that takes a batched layout matches the f64 reference with a V head dim of its own") {
    if (skip_without_device()) return;
    const std::string arch = gpu_test_arch();
    struct ValueDimCase {
        int head_dim, head_dim_v;
        DType dtype;
        KvLayout layout;
        int page_size;
        bool features;  // a window, a soft-cap and sinks
    };
    // MLA's 192/128 over ragged K/V with every feature and over pages; dv != d at small head
    // dims, a d past 192 with dv=128 (wgmma-sm90's 64-key steps), and V wider than Q and K
    // past 128 with a window over ragged K/V (its one warpgroup), over each layout.
    const ValueDimCase value_dim_cases[] = {
        {192, 128, DType::bf16, KvLayout::ragged, 0, true}, {192, 128, DType::f16, KvLayout::paged, 16, false},
        {64, 128, DType::f16, KvLayout::ragged, 0, false},  {64, 128, DType::bf16, KvLayout::paged, 16, true},
        {40, 24, DType::bf16, KvLayout::paged, 1, false},   {200, 128, DType::bf16, KvLayout::paged, 64, false},
        {256, 96, DType::f16, KvLayout::ragged, 0, false},  {64, 256, DType::f16, KvLayout::ragged, 0, true}};
    std::vector<Case> cases;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        if (!family.compiles_for(arch)) continue;
        for (const ValueDimCase& c : value_dim_cases) {
            BatchShape shape = batch_of(length_sets[cases.size() % 2]);
            shape.heads_kv = 2;
            shape.heads_q = 8;
            shape.head_dim = c.head_dim;
            shape.head_dim_v = c.head_dim_v;
            shape.dtype = c.dtype;
            shape.causal = CausalMode::bottom_right;
            shape.scale = 4.0f / std::sqrt(static_cast<float>(c.head_dim));
            shape.kv_layout = c.layout;
            shape.page_size = c.page_size;
            if (c.features) {
                shape.window = SlidingWindow{150, 0};
                shape.softcap = 20.0f;
                shape.sinks = {-1.0f, 0.5f, 2.0f, -3.0f, 0.0f, 1.0f, -0.5f, 3.0f};
            }
            if (const auto spec = batched_spec(family, arch, shape)) cases.push_back({shape, *spec});
        }
    }
    CHECK(run_cases(cases, "batched with dv != d") == 0);
}

// Last in the file: a kernel that did read or write outside its tensors would leave the
// device unusable for the cases after it.
TEST_CASE("unchecked calls with out-of-range offsets, lengths and pages stay inside their tensors") {
    if (skip_without_device()) return;
    const std::string arch = gpu_test_arch();
    Options options = gpu_test_options(false);
    options.check_indices = false;  // the kernels see the bad indices as given
    Runtime runtime(options);

    constexpr int batch = 3, heads_kv = 2, heads_q = 4, head_dim = 64, page_size = 16, num_pages = 4;
    constexpr int guard_rows = 8;  // o's and lse's, before and after the tensor
    constexpr unsigned char guard_byte = 0x7b;
    constexpr int huge = 1 << 30;
    // Offsets past the end, negative, and running backwards; lengths past the pages and
    // negative; pages past the cache and negative.
    const std::vector<int> cu_seqlens_q = {0, huge, -7, 15};
    const std::vector<int> cu_seqlens_k = {0, -4, huge, 40};
    const std::vector<int> kv_lens = {huge, -5, 20};
    const std::vector<int> block_table = {-3, huge, 2, 7, 1, 0};  // [batch, 2]
    const int total_q = cu_seqlens_q.back(), total_k = cu_seqlens_k.back();
    const std::size_t element = element_bytes(DType::f16);
    const std::size_t o_row = static_cast<std::size_t>(heads_q) * head_dim * element;
    const std::size_t kv_rows = std::max<std::size_t>(total_k, static_cast<std::size_t>(num_pages) * page_size);

    int runs = 0;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        if (!family.compiles_for(arch)) continue;
        for (const KvLayout layout : {KvLayout::ragged, KvLayout::paged})
            for (const int longest_q : {1, 8}) {  // decode and prefill shapes
                if (!takes(family, layout)) continue;
                KernelSpec spec;
                spec.family = std::string(family.name);
                spec.arch = arch;
                spec.head_dim = head_dim;
                spec.dtype = DType::f16;
                spec.causal = CausalMode::bottom_right;
                spec.kv_layout = layout;
                spec.page_size = layout == KvLayout::paged ? page_size : 0;
                spec.rescale_margin = 10.0f;
                spec = with_family_defaults(spec);
                if (!validate(spec).empty()) continue;
                ShapeClass call;
                call.head_dim = head_dim;
                call.causal = spec.causal;
                call.kv_layout = layout;
                call.page_size = spec.page_size;
                call.decode_rows = classify_decode_rows(longest_q, heads_q, heads_kv);
                if (family.refuses_shape && !family.refuses_shape(spec, call).empty()) continue;

                DeviceBuffer q = device_buffer(total_q * o_row), k = device_buffer(kv_rows * o_row),
                             v = device_buffer(kv_rows * o_row), o = device_buffer((total_q + 2 * guard_rows) * o_row),
                             lse = device_buffer((static_cast<std::size_t>(heads_q) * total_q + 2 * guard_rows) *
                                                 sizeof(float)),
                             cu_q = device_buffer(sizeof(int) * cu_seqlens_q.size()),
                             cu_k = device_buffer(sizeof(int) * cu_seqlens_k.size()),
                             lens = device_buffer(sizeof(int) * kv_lens.size()),
                             table = device_buffer(sizeof(int) * block_table.size());
                q.fill(0);
                k.fill(0);
                v.fill(0);
                o.fill(guard_byte);
                lse.fill(guard_byte);
                cu_q.upload(cu_seqlens_q);
                cu_k.upload(cu_seqlens_k);
                lens.upload(kv_lens);
                table.upload(block_table);

                AttentionArgs args;
                args.kv_layout = layout;
                args.dtype = DType::f16;
                args.batch = batch;
                args.heads_q = heads_q;
                args.heads_kv = heads_kv;
                args.len_q = longest_q;
                // The bound on a sequence's keys, checked on the host even unchecked: the
                // ragged offsets' last, and what a paged sequence's two pages hold.
                args.len_k = layout == KvLayout::paged ? 2 * page_size : total_k;
                args.head_dim = head_dim;
                args.scale = 0.125f;
                args.causal = spec.causal;
                args.q = q.get();
                args.k = k.get();
                args.v = v.get();
                args.o = static_cast<unsigned char*>(o.get()) + guard_rows * o_row;
                args.lse = static_cast<float*>(lse.get()) + guard_rows;
                args.lse_shape = {1, heads_q, total_q};
                args.q_strides = args.o_strides = {0, head_dim, static_cast<std::int64_t>(heads_q) * head_dim};
                args.sequences.cu_seqlens_q = static_cast<const int*>(cu_q.get());
                args.sequences.total_q = total_q;
                if (layout == KvLayout::ragged) {
                    args.k_strides = args.v_strides = {0, head_dim, static_cast<std::int64_t>(heads_kv) * head_dim};
                    args.sequences.cu_seqlens_k = static_cast<const int*>(cu_k.get());
                    args.sequences.total_k = total_k;
                } else {
                    const std::int64_t page = static_cast<std::int64_t>(page_size) * heads_kv * head_dim;
                    args.k_strides = args.v_strides = {page, head_dim, static_cast<std::int64_t>(heads_kv) * head_dim};
                    args.sequences.block_table = static_cast<const int*>(table.get());
                    args.sequences.kv_lens = static_cast<const int*>(lens.get());
                    args.sequences.max_pages_per_seq = 2;
                    args.sequences.num_pages = num_pages;
                    args.sequences.page_size = page_size;
                }
                const std::string what =
                    spec.family + " " + std::string(to_string(layout)) + " len_q=" + std::to_string(longest_q);
                REQUIRE_NOTHROW_MESSAGE(runtime.run(spec, args, nullptr), what);
                REQUIRE_NOTHROW_MESSAGE(synchronize_test_device(), what);
                ++runs;

                const auto o_bytes = o.download<unsigned char>();
                const std::size_t o_tensor = total_q * o_row;
                int o_guards_written = 0;
                for (std::size_t i = 0; i < guard_rows * o_row; ++i)
                    o_guards_written +=
                        (o_bytes[i] != guard_byte) + (o_bytes[guard_rows * o_row + o_tensor + i] != guard_byte);
                CHECK_MESSAGE(o_guards_written == 0, what, ": bytes written outside o");
                const auto lse_floats = lse.download<unsigned char>();
                const std::size_t lse_guard = guard_rows * sizeof(float);
                int lse_guards_written = 0;
                for (std::size_t i = 0; i < lse_guard; ++i)
                    lse_guards_written +=
                        (lse_floats[i] != guard_byte) + (lse_floats[lse_floats.size() - lse_guard + i] != guard_byte);
                CHECK_MESSAGE(lse_guards_written == 0, what, ": bytes written outside lse");
            }
    }
    std::printf("unchecked out-of-range indices: %d calls, none outside its tensors\n", runs);
    CHECK(runs > 0);
}
