// The rules every spec is held to, and the public spec functions that apply them: the
// checks all families share, then the family's own (FamilyDescriptor::check).
#include <algorithm>
#include <cmath>

#include "families/registry.hpp"
#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

// f32 holds exp(88); the running sum adds up to 2^24 keys (e^16.6) on top of exp(margin).
constexpr float max_margin_f32_accumulation = 64.0f;
constexpr int max_page_size = 256;

// "64, 80, 96, 128, 256", or "16..256 in steps of 8" for a long even run.
std::string describe_head_dims(std::span<const int> dims) {
    const bool even_steps = dims.size() > 5 && std::adjacent_find(dims.begin(), dims.end(), [&](int a, int b) {
                                                   return b - a != dims[1] - dims[0];
                                               }) == dims.end();
    if (even_steps)
        return std::to_string(dims.front()) + ".." + std::to_string(dims.back()) + " in steps of " +
               std::to_string(dims[1] - dims[0]);
    std::string text;
    for (const int dim : dims) text += (text.empty() ? "" : ", ") + std::to_string(dim);
    return text;
}

std::string describe_dtypes(std::span<const DType> dtypes) {
    std::string text;
    for (std::size_t i = 0; i < dtypes.size(); ++i)
        text += std::string(i == 0 ? "" : i + 1 == dtypes.size() ? " and " : ", ") + std::string(to_string(dtypes[i]));
    return text;
}

std::string sequence_layout_error(const KernelSpec& spec, const FamilyDescriptor& family) {
    if (std::find(family.kv_layouts.begin(), family.kv_layouts.end(), spec.kv_layout) == family.kv_layouts.end()) {
        std::string layouts;
        for (const KvLayout layout : family.kv_layouts)
            layouts += (layouts.empty() ? "" : ", ") + std::string(to_string(layout));
        return field_error("kv", std::string(to_string(spec.kv_layout)),
                           "family " + std::string(family.name) + " supports kv layouts " + layouts);
    }
    const bool power_of_two = spec.page_size > 0 && (spec.page_size & (spec.page_size - 1)) == 0;
    if (spec.kv_layout == KvLayout::paged && (!power_of_two || spec.page_size > max_page_size))
        return field_error("page", std::to_string(spec.page_size),
                           "kv=paged needs a page size that is a power of two from 1 to 256");
    if (spec.kv_layout != KvLayout::paged && spec.page_size != 0)
        return field_error("page", std::to_string(spec.page_size), "a page size is given only with kv=paged");
    return {};
}

std::string shared_memory_error(const KernelSpec& spec, const FamilyDescriptor& family) {
    const unsigned bytes = family.shared_layout(spec).shared_bytes, limit = family.shared_limit(spec.arch);
    if (bytes <= limit) return {};
    const std::string_view memory = vendor_of(spec.arch) == Vendor::amd ? "LDS" : "shared memory";
    return field_error("bk", std::to_string(spec.block_k),
                       "family " + std::string(family.name) + " needs " + std::to_string(bytes) + " bytes of " +
                           std::string(memory) + " at d=" + std::to_string(spec.head_dim) + " (" + spec.arch +
                           " allows " + std::to_string(limit) + "): choose a smaller bq or bk, or fewer waves");
}

KernelSpec with_tile(KernelSpec spec, const Tile& tile) {
    spec.block_q = tile.block_q;
    spec.block_k = tile.block_k;
    spec.waves = tile.waves;
    return spec;
}

}  // namespace

std::string validate(const KernelSpec& spec) {
    const FamilyDescriptor* family = find_family(spec.family);
    if (!family) return field_error("family", spec.family, "expected " + family_names());
    if (auto rule = target_name_error(spec.arch); !rule.empty()) return field_error("arch", spec.arch, rule);
    if (!std::isfinite(spec.rescale_margin) || spec.rescale_margin < 0.0f ||
        spec.rescale_margin > max_margin_f32_accumulation)
        return field_error("margin", format_float(spec.rescale_margin), "must be finite and within 0..64");
    const std::string name(family->name);
    if (!family->compiles_for(spec.arch))
        return field_error("arch", spec.arch, "family " + name + " runs on " + std::string(family->targets));
    if (std::find(family->head_dims.begin(), family->head_dims.end(), spec.head_dim) == family->head_dims.end())
        return field_error("d", std::to_string(spec.head_dim),
                           "family " + name + " supports head dims " + describe_head_dims(family->head_dims));
    if (spec.head_dim_v != 0) {
        if (!supported_head_dim(spec.head_dim_v))
            return field_error("dv", std::to_string(spec.head_dim_v), "must be 16..256 in steps of 8");
        if (spec.head_dim_v == spec.head_dim)
            return field_error("dv", std::to_string(spec.head_dim_v), "equals d: leave dv out (0)");
    }
    if (spec.dtype == DType::e4m3 &&
        (!spec.out_dtype || (*spec.out_dtype != DType::f16 && *spec.out_dtype != DType::bf16)))
        return field_error("out", spec.out_dtype ? std::string(to_string(*spec.out_dtype)) : "none",
                           "dtype e4m3 needs out=f16 or out=bf16, the dtype of O");
    if (spec.dtype != DType::e4m3 && spec.out_dtype)
        return field_error("out", std::string(to_string(*spec.out_dtype)),
                           "only dtype e4m3 takes an out dtype (O has the inputs' dtype)");
    if (std::find(family->dtypes.begin(), family->dtypes.end(), spec.dtype) == family->dtypes.end())
        return field_error("dtype", std::string(to_string(spec.dtype)),
                           "family " + name + " supports " + describe_dtypes(family->dtypes));
    if (auto error = sequence_layout_error(spec, *family); !error.empty()) return error;
    if (auto error = family->check(spec); !error.empty()) return error;
    return shared_memory_error(spec, *family);
}

KernelSpec with_family_defaults(KernelSpec spec) {
    const ShapeClass shape = {.head_dim = spec.head_dim,
                              .dtype = spec.dtype,
                              .causal = spec.causal,
                              .kv_layout = spec.kv_layout,
                              .page_size = spec.page_size,
                              .window = spec.window,
                              .softcap = spec.softcap,
                              .sinks = spec.sinks,
                              .head_dim_v = spec.head_dim_v,
                              .out_dtype = spec.out_dtype};
    return with_tile(spec, family_of(spec).choose_tile(shape, spec.arch));
}

SpecParseResult parse_spec(std::string_view text) {
    SpecFields fields = read_spec_fields(text);
    if (!fields.error.empty()) return {std::nullopt, fields.error};
    if (!find_family(fields.spec.family))
        return {std::nullopt, field_error("family", fields.spec.family, "expected " + family_names())};
    KernelSpec spec = with_family_defaults(fields.spec);
    if (fields.tiles.block_q) spec.block_q = *fields.tiles.block_q;
    if (fields.tiles.block_k) spec.block_k = *fields.tiles.block_k;
    if (fields.tiles.waves) spec.waves = *fields.tiles.waves;
    if (auto error = validate(spec); !error.empty()) return {std::nullopt, error};
    return {spec, {}};
}

}  // namespace fajit
