#include "support/batched_sample.hpp"

#include "families/registry.hpp"
#include "spec/shape_class.hpp"

namespace fajit::testing {

std::vector<KvCase> batched_kv_cases() {
    return {{KvLayout::ragged, 0},
            {KvLayout::paged, 1},
            {KvLayout::paged, 16},
            {KvLayout::paged, 64},
            {KvLayout::paged, 256}};
}

std::vector<KernelSpec> batched_sample(const std::string& family, const std::vector<std::string>& archs,
                                       const std::vector<int>& head_dims) {
    std::vector<KernelSpec> specs;
    const std::vector<KvCase> cases = batched_kv_cases();
    for (std::size_t i = 0; i < cases.size(); ++i)
        for (std::size_t j = 0; j < 2; ++j) {
            const std::size_t n = 2 * i + j;
            specs.push_back(default_spec(family, archs[n % archs.size()], head_dims[n % head_dims.size()],
                                         (i + j) % 2 == 0 ? DType::f16 : DType::bf16,
                                         j == 0 ? CausalMode::bottom_right : CausalMode::none, cases[i].layout,
                                         cases[i].page_size));
        }
    return specs;
}

KernelSpec default_spec(const std::string& family, const std::string& arch, int head_dim, DType dtype,
                        CausalMode causal, KvLayout layout, int page_size, const KernelSpec& features) {
    KernelSpec spec;
    spec.family = family;
    spec.arch = arch;
    spec.head_dim = head_dim;
    spec.dtype = dtype;
    spec.causal = causal;
    spec.kv_layout = layout;
    spec.page_size = page_size;
    spec.rescale_margin = 10.0f;
    // Before the tiles, which a family may choose by them.
    spec.window = features.window;
    spec.softcap = features.softcap;
    spec.sinks = features.sinks;
    spec.head_dim_v = features.head_dim_v;
    return with_family_defaults(spec);
}

KernelSpec decode_spec(const std::string& family, const std::string& arch, int rows, int head_dim, DType dtype,
                       CausalMode causal, KvLayout layout, int page_size) {
    KernelSpec spec = default_spec(family, arch, head_dim, dtype, causal, layout, page_size);
    // The tile the family chooses for those rows, as the dispatcher asks for it.
    ShapeClass shape;
    shape.decode_rows = classify_decode_rows(rows, 1, 1);
    spec.block_q = family_of(spec).choose_tile(shape, arch).block_q;
    return spec;
}

std::vector<KernelSpec> decode_tile_specs(const std::string& family, const std::string& arch, bool every_axis) {
    const KernelSpec chosen =
        decode_spec(family, arch, 4, 128, DType::bf16, CausalMode::bottom_right, KvLayout::paged, 16);
    const std::vector<int> block_ks = every_axis ? std::vector<int>{16, 32, 64} : std::vector<int>{chosen.block_k};
    const std::vector<int> block_qs = every_axis ? std::vector<int>{16, 32} : std::vector<int>{chosen.block_q};
    std::vector<KernelSpec> specs;
    for (const int waves : {1, 2, 4, 8})
        for (const int block_k : block_ks)
            for (const int block_q : block_qs) {
                KernelSpec spec = chosen;
                spec.waves = waves;
                spec.block_k = block_k;
                spec.block_q = block_q;
                if (validate(spec).empty()) specs.push_back(spec);
            }
    return specs;
}

}  // namespace fajit::testing
