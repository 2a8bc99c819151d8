#include "variant_sweep.hpp"

#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>
#include <set>

#include "dispatch/variant_table.hpp"
#include "exit_codes.hpp"
#include "families/registry.hpp"
#include "presets.hpp"

namespace fajit::cli {
namespace {

constexpr int default_head_dim_step = 8;

struct HeadDim {
    int value;
    bool named_alone;  // typed as such rather than produced by a range
};

struct Candidate {
    KernelSpec spec;
    std::string error;  // empty when valid
};

std::optional<int> parse_int(std::string_view text) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::vector<HeadDim> parse_head_dims(const std::vector<std::string>& items) {
    std::vector<HeadDim> dims;
    for (const std::string& item : items) {
        if (auto single = parse_int(item)) {
            dims.push_back({*single, true});
            continue;
        }
        const auto dash = item.find('-');
        const auto colon = item.find(':');
        const auto first = parse_int(std::string_view(item).substr(0, dash));
        const auto last = parse_int(
            std::string_view(item).substr(dash + 1, colon == std::string::npos ? std::string::npos : colon - dash - 1));
        const auto step = colon == std::string::npos ? std::optional<int>(default_head_dim_step)
                                                     : parse_int(std::string_view(item).substr(colon + 1));
        if (dash == std::string::npos || !first || !last || !step || *step <= 0 || *first > *last)
            throw UsageError("d=" + item +
                             ": expected a head dim, a list (64,128) or a range FIRST-LAST[:STEP] "
                             "(64-128:8)");
        for (int dim = *first; dim <= *last; dim += *step) dims.push_back({dim, false});
    }
    return dims;
}

template <class Value>
std::vector<Value> parse_names(const std::vector<std::string>& names, std::optional<Value> (*parse)(std::string_view),
                               std::string_view field, std::string_view expected, std::vector<Value> defaults) {
    if (names.empty()) return defaults;
    std::vector<Value> values;
    for (const std::string& name : names) {
        const auto value = parse(name);
        if (!value) throw UsageError(std::string(field) + "=" + name + ": expected " + std::string(expected));
        values.push_back(*value);
    }
    return values;
}

std::optional<Preset> preset_of(const SweepRequest& request) {
    if (request.preset.empty()) return std::nullopt;
    const auto preset = find_preset(request.preset);
    if (!preset) throw UsageError("preset=" + request.preset + ": unknown (fa-jit warm --list-presets lists them)");
    return preset;
}

std::vector<HeadDim> head_dims_of(const SweepRequest& request) {
    if (!request.head_dims.empty()) return parse_head_dims(request.head_dims);
    const auto preset = preset_of(request);
    if (!preset) throw UsageError("no head dim: give --head-dim or --preset");
    return {{preset->head_dim, false}};
}

// A value the user named on its own must give at least one variant; otherwise its
// validation message (which names the field) is the error.
void require_variants_for(const std::vector<Candidate>& candidates, const std::set<std::string>& named_values,
                          const std::function<std::string(const KernelSpec&)>& value_of) {
    for (const std::string& value : named_values) {
        const Candidate* first_rejected = nullptr;
        bool any_valid = false;
        for (const Candidate& candidate : candidates) {
            if (value_of(candidate.spec) != value) continue;
            if (candidate.error.empty())
                any_valid = true;
            else if (!first_rejected)
                first_rejected = &candidate;
        }
        if (!any_valid && first_rejected) throw UsageError(first_rejected->error);
    }
}

std::optional<std::string> parse_family_name(std::string_view name) {
    if (!find_family(name)) return std::nullopt;
    return std::string(name);
}

std::vector<std::string> every_family() {
    std::vector<std::string> names;
    for (const VariantRow& row : variant_table()) names.emplace_back(row.family->name);
    return names;
}

std::string_view name_of(const std::string& family) { return family; }
std::string_view name_of(DType dtype) { return to_string(dtype); }
std::string_view name_of(CausalMode causal) { return to_string(causal); }

// The canonical names of values given explicitly; none when the list was left to its default.
template <class Value>
std::set<std::string> explicitly_named(const std::vector<std::string>& given, const std::vector<Value>& parsed) {
    std::set<std::string> names;
    if (!given.empty())
        for (const Value& value : parsed) names.insert(std::string(name_of(value)));
    return names;
}

}  // namespace

std::vector<KernelSpec> expand_sweep(const SweepRequest& request) {
    if (request.archs.empty()) throw UsageError("no arch: give --arch (no local device was found)");
    const auto head_dims = head_dims_of(request);
    const auto families =
        parse_names<std::string>(request.families, parse_family_name, "family", family_names(), every_family());
    const auto dtypes =
        parse_names<DType>(request.dtypes, parse_dtype, "dtype", "f16, bf16, f32 or e4m3", {DType::f16, DType::bf16});
    const auto out_dtype =
        request.out_dtype.empty() ? std::optional<DType>(DType::bf16) : parse_dtype(request.out_dtype);
    if (!out_dtype || (*out_dtype != DType::f16 && *out_dtype != DType::bf16))
        throw UsageError("out-dtype=" + request.out_dtype + ": expected f16 or bf16 (O's dtype for e4m3 inputs)");
    const auto causal_modes =
        parse_names<CausalMode>(request.causal_modes, parse_causal, "causal", "none, top-left or bottom-right",
                                {CausalMode::none, CausalMode::bottom_right});

    // The shapes: each K/V layout, prefill and (asked for) decode of one token per sequence.
    const auto preset = preset_of(request);
    const int group = request.gqa_group.value_or(preset ? preset->gqa_group : 1);
    if (group < 1) throw UsageError("gqa-group=" + std::to_string(group) + ": must be at least 1");
    std::vector<ShapeClass> shapes;
    std::vector<std::pair<KvLayout, int>> layouts = {{KvLayout::dense, 0}};
    for (const int page_size : request.page_sizes) layouts.push_back({KvLayout::paged, page_size});
    for (const auto& [layout, page_size] : layouts) {
        ShapeClass prefill;
        prefill.kv_layout = layout;
        prefill.page_size = page_size;
        shapes.push_back(prefill);
        if (!request.decode) continue;
        ShapeClass decode = prefill;
        decode.query_length = QueryLength::decode;
        decode.decode_rows = classify_decode_rows(1, group, 1);
        shapes.push_back(decode);
    }
    const int value_dim = request.head_dim_v.value_or(preset ? preset->head_dim_v : 0);
    if (value_dim != 0 && !supported_head_dim(value_dim))
        throw UsageError("head-dim-v=" + std::to_string(value_dim) + ": must be 16..256 in steps of 8");
    const bool softcap = request.softcap || (preset && preset->softcap);
    const bool sinks = request.sinks || (preset && preset->sinks);
    for (ShapeClass& shape : shapes) {
        shape.softcap = softcap;
        shape.sinks = sinks;
    }
    if (request.window || (preset && preset->window_layers)) {
        const std::size_t plain = shapes.size();
        for (std::size_t i = 0; i < plain; ++i) {
            ShapeClass windowed = shapes[i];
            windowed.window = true;
            shapes.push_back(windowed);
        }
    }

    // Without --family, a shape gets the family the dispatcher would run for it on that
    // arch, and for prefill the fallback; not every family that compiles there (an
    // emulation is for tests, and a row only takes what the rows before it cannot). A
    // decode shape that falls back compiles its fallback on first use.
    const auto dispatched = [](const std::string& family, const std::string& arch, const ShapeClass& shape) {
        if (family == fallback_family().name) return shape.query_length == QueryLength::large;
        return select_variant(arch, shape, Options{}).spec.family == family;
    };

    std::vector<Candidate> candidates;
    for (const std::string& arch : request.archs)
        for (const std::string& family : families)
            for (const HeadDim& dim : head_dims)
                for (const DType dtype : dtypes)
                    for (const CausalMode causal : causal_modes)
                        for (ShapeClass shape : shapes) {
                            shape.head_dim = dim.value;
                            shape.head_dim_v = value_dim == dim.value ? 0 : value_dim;
                            shape.dtype = dtype;
                            shape.out_dtype = dtype == DType::e4m3 ? out_dtype : std::nullopt;
                            shape.causal = causal;
                            if (request.families.empty() && !dispatched(family, arch, shape)) continue;
                            KernelSpec spec = variant_spec(*find_family(family), shape, arch);
                            // variant_spec gives the margin the runtime selects.
                            if (request.margin) spec.rescale_margin = *request.margin;
                            if (request.block_q) spec.block_q = *request.block_q;
                            if (request.block_k) spec.block_k = *request.block_k;
                            if (request.waves) spec.waves = *request.waves;
                            std::string error = validate(spec);
                            if (!error.empty()) spdlog::debug("skipping {}: {}", to_string(spec), error);
                            candidates.push_back({std::move(spec), std::move(error)});
                        }

    // Archs and every list given explicitly are checked; defaults and ranges may skip.
    require_variants_for(candidates, {request.archs.begin(), request.archs.end()},
                         [](const KernelSpec& spec) { return spec.arch; });
    std::set<std::string> named_dims;
    for (const HeadDim& dim : head_dims)
        if (dim.named_alone) named_dims.insert(std::to_string(dim.value));
    require_variants_for(candidates, named_dims, [](const KernelSpec& spec) { return std::to_string(spec.head_dim); });
    require_variants_for(candidates, explicitly_named(request.families, families),
                         [](const KernelSpec& spec) { return spec.family; });
    require_variants_for(candidates, explicitly_named(request.dtypes, dtypes),
                         [](const KernelSpec& spec) { return std::string(to_string(spec.dtype)); });
    std::set<std::string> named_pages;
    for (const int page_size : request.page_sizes) named_pages.insert(std::to_string(page_size));
    require_variants_for(candidates, named_pages,
                         [](const KernelSpec& spec) { return std::to_string(spec.page_size); });
    require_variants_for(candidates, explicitly_named(request.causal_modes, causal_modes),
                         [](const KernelSpec& spec) { return std::string(to_string(spec.causal)); });

    std::vector<KernelSpec> specs;
    for (Candidate& candidate : candidates)
        if (candidate.error.empty()) specs.push_back(std::move(candidate.spec));
    if (specs.empty()) throw UsageError(candidates.front().error);
    return specs;
}

}  // namespace fajit::cli
