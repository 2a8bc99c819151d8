#include "families/family_rules.hpp"

#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {

std::string waves_error(const KernelSpec& spec) {
    if (spec.waves != 1 && spec.waves != 2 && spec.waves != 4 && spec.waves != 8)
        return field_error("waves", std::to_string(spec.waves), "must be 1, 2, 4 or 8");
    return {};
}

std::string rounded_probability_margin_error(const KernelSpec& spec) {
    if (spec.dtype == DType::f16 && spec.rescale_margin > 11.0f)
        return field_error("margin", format_float(spec.rescale_margin),
                           "with dtype f16 the margin must be at most 11 so exp(margin) fits in f16");
    return {};
}

// CUDA programming guide, compute capabilities: the data-center parts (8.0, 8.7, 9.0,
// 10.x) have far more than the consumer ones.
unsigned nvidia_shared_limit(std::string_view arch) {
    const int sm = sm_version(arch);
    if (sm == 80 || sm == 87) return 163u * 1024u;
    if (sm >= 90 && sm < 120) return 227u * 1024u;
    return 99u * 1024u;
}

LaunchShape tiled_launch(const KernelSpec& spec, const AttentionArgs& args, const SharedLayout& layout, int, int) {
    LaunchShape shape;
    shape.grid[0] = static_cast<unsigned>((args.len_q + spec.block_q - 1) / spec.block_q);
    shape.grid[1] = static_cast<unsigned>(args.heads_q);
    shape.grid[2] = static_cast<unsigned>(args.batch);
    shape.block[0] = static_cast<unsigned>(spec.waves * wave_size(spec.arch));
    if (layout.dynamic) shape.shared_bytes = layout.shared_bytes;
    return shape;
}

}  // namespace fajit
