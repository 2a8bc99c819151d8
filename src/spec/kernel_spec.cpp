// The text form of a KernelSpec: names of its enums, the canonical spec line, and
// reading the fields of one. What the fields may hold is the family rules' business.
#include <algorithm>
#include <charconv>
#include <map>
#include <string>

#include "fajit/kernel_spec.hpp"
#include "spec/comma_list.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

template <class Enum, std::size_t N>
std::optional<Enum> lookup(const std::pair<Enum, std::string_view> (&table)[N], std::string_view text) {
    for (const auto& [value, name] : table)
        if (name == text) return value;
    return std::nullopt;
}

template <class Enum, std::size_t N>
std::string_view name_of(const std::pair<Enum, std::string_view> (&table)[N], Enum value) {
    for (const auto& [candidate, name] : table)
        if (candidate == value) return name;
    return "?";
}

constexpr std::pair<DType, std::string_view> dtype_names[] = {
    {DType::f16, "f16"}, {DType::bf16, "bf16"}, {DType::f32, "f32"}, {DType::e4m3, "e4m3"}};
constexpr std::pair<CausalMode, std::string_view> causal_names[] = {
    {CausalMode::none, "none"}, {CausalMode::top_left, "top-left"}, {CausalMode::bottom_right, "bottom-right"}};
constexpr std::pair<KvLayout, std::string_view> kv_layout_names[] = {
    {KvLayout::dense, "dense"}, {KvLayout::ragged, "ragged"}, {KvLayout::paged, "paged"}};

template <class Number>
bool read_number(const std::string& text, Number& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

}  // namespace

std::string_view to_string(DType value) { return name_of(dtype_names, value); }
std::string_view to_string(CausalMode value) { return name_of(causal_names, value); }
std::optional<DType> parse_dtype(std::string_view text) { return lookup(dtype_names, text); }
std::optional<CausalMode> parse_causal(std::string_view text) { return lookup(causal_names, text); }
std::string_view to_string(KvLayout value) { return name_of(kv_layout_names, value); }
std::optional<KvLayout> parse_kv_layout(std::string_view text) { return lookup(kv_layout_names, text); }

std::string format_float(float value) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, end);
}

std::string field_error(std::string_view field, const std::string& value, std::string_view rule) {
    return std::string(field) + "=" + value + ": " + std::string(rule);
}

std::string to_string(const KernelSpec& spec) {
    std::string text;
    text += "family=" + spec.family;
    text += ",d=" + std::to_string(spec.head_dim);
    if (spec.head_dim_v) text += ",dv=" + std::to_string(spec.head_dim_v);
    text += ",dtype=" + std::string(to_string(spec.dtype));
    if (spec.out_dtype) text += ",out=" + std::string(to_string(*spec.out_dtype));
    text += ",bq=" + std::to_string(spec.block_q);
    text += ",bk=" + std::to_string(spec.block_k);
    text += ",waves=" + std::to_string(spec.waves);
    text += ",margin=" + format_float(spec.rescale_margin);
    text += ",causal=" + std::string(to_string(spec.causal));
    if (spec.kv_layout != KvLayout::dense) text += ",kv=" + std::string(to_string(spec.kv_layout));
    if (spec.kv_layout == KvLayout::paged) text += ",page=" + std::to_string(spec.page_size);
    if (spec.window) text += ",window=1";
    if (spec.softcap) text += ",softcap=1";
    if (spec.sinks) text += ",sinks=1";
    text += ",arch=" + spec.arch;
    return text;
}

SpecFields read_spec_fields(std::string_view text) {
    SpecFields result;
    const auto fail = [&](std::string error) {
        result.error = std::move(error);
        return result;
    };
    std::map<std::string, std::string, std::less<>> fields;
    for (const std::string_view item : comma_list_items(text)) {
        const auto eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0)
            return fail("spec: expected name=value, got '" + std::string(item) + "'");
        auto [it, inserted] = fields.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
        if (!inserted) return fail(it->first + ": given twice");
    }
    for (const auto& [name, value] : fields)
        if (std::ranges::find(spec_field_names, name) == std::end(spec_field_names))
            return fail(field_error(name, value, "unknown field"));
    for (std::string_view required : required_spec_fields)
        if (!fields.contains(required)) {
            std::string names;
            for (std::string_view name : required_spec_fields) names += (names.empty() ? "" : ", ") + std::string(name);
            return fail(std::string(required) + ": missing (required fields: " + names + ")");
        }

    KernelSpec& spec = result.spec;
    spec.family = fields["family"];
    spec.arch = fields["arch"];
    if (!read_number(fields["d"], spec.head_dim)) return fail(field_error("d", fields["d"], "expected an integer"));
    // dv equal to d is the same kernel as no dv: read it as none, the one canonical form.
    if (auto it = fields.find("dv"); it != fields.end()) {
        if (!read_number(it->second, spec.head_dim_v))
            return fail(field_error("dv", it->second, "expected an integer"));
        if (spec.head_dim_v == spec.head_dim) spec.head_dim_v = 0;
    }
    const auto dtype = parse_dtype(fields["dtype"]);
    if (!dtype) return fail(field_error("dtype", fields["dtype"], "expected f16, bf16, f32 or e4m3"));
    spec.dtype = *dtype;
    if (auto it = fields.find("out"); it != fields.end()) {
        const auto out = parse_dtype(it->second);
        if (!out) return fail(field_error("out", it->second, "expected f16 or bf16"));
        spec.out_dtype = *out;
    }
    for (auto [name, target] : {std::pair<std::string_view, std::optional<int>*>{"bq", &result.tiles.block_q},
                                {"bk", &result.tiles.block_k},
                                {"waves", &result.tiles.waves}})
        if (auto it = fields.find(name); it != fields.end()) {
            int value = 0;
            if (!read_number(it->second, value)) return fail(field_error(name, it->second, "expected an integer"));
            *target = value;
        }
    if (auto it = fields.find("causal"); it != fields.end()) {
        const auto causal = parse_causal(it->second);
        if (!causal) return fail(field_error("causal", it->second, "expected none, top-left or bottom-right"));
        spec.causal = *causal;
    }
    if (auto it = fields.find("kv"); it != fields.end()) {
        const auto layout = parse_kv_layout(it->second);
        if (!layout) return fail(field_error("kv", it->second, "expected dense, ragged or paged"));
        spec.kv_layout = *layout;
    }
    if (auto it = fields.find("page"); it != fields.end() && !read_number(it->second, spec.page_size))
        return fail(field_error("page", it->second, "expected an integer"));
    if (auto it = fields.find("margin"); it != fields.end() && !read_number(it->second, spec.rescale_margin))
        return fail(field_error("margin", it->second, "expected a number"));
    for (auto [name, target] : {std::pair<std::string_view, bool*>{"window", &spec.window},
                                {"softcap", &spec.softcap},
                                {"sinks", &spec.sinks}})
        if (auto it = fields.find(name); it != fields.end()) {
            if (it->second != "0" && it->second != "1") return fail(field_error(name, it->second, "expected 0 or 1"));
            *target = it->second == "1";
        }
    return result;
}

}  // namespace fajit
