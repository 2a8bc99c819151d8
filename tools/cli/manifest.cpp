#include "manifest.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <limits>

#include "exit_codes.hpp"
#include "variant_sweep.hpp"

namespace fajit::cli {
namespace {

using nlohmann::json;

// A text field's value: a string, or an integer taken as its text.
std::string text_value(const json& value, const std::string& field) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_integer()) return value.dump();
    throw UsageError(field + ": expected a string, an integer or an array of them");
}

// Whole numbers only: a fraction would be truncated and a number past int's range wrap.
int integer_value(const json& value, const std::string& field) {
    if (!value.is_number_integer()) throw UsageError(field + ": expected an integer, not " + value.dump());
    const bool fits = value.is_number_unsigned()
                          ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                          : value.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                value.get<std::int64_t>() <= std::numeric_limits<int>::max();
    if (!fits) throw UsageError(field + ": " + value.dump() + " is out of range");
    return value.get<int>();
}

float number_value(const json& value, const std::string& field) {
    if (!value.is_number()) throw UsageError(field + ": expected a number");
    return value.get<float>();
}

// A sweep field may be one value or a non-empty array of them.
template <class Value>
std::vector<Value> each_value(const json& value, const std::string& field,
                              Value (*one)(const json&, const std::string&)) {
    if (!value.is_array()) return {one(value, field)};
    // An empty array would silently stand for the field's default.
    if (value.empty())
        throw UsageError(field + ": an empty array names no value (leave the field out for its default)");
    std::vector<Value> values;
    for (const json& item : value) values.push_back(one(item, field));
    return values;
}

std::vector<std::string> text_values(const json& value, const std::string& field) {
    return each_value(value, field, text_value);
}

// A field that takes one value, alone or as an array of one.
std::string single_text_value(const json& value, const std::string& field) {
    const std::vector<std::string> values = text_values(value, field);
    if (values.size() != 1) throw UsageError(field + ": expected one value, not " + std::to_string(values.size()));
    return values.front();
}

std::vector<KernelSpec> specs_from_text(const std::string& text, const std::vector<std::string>& default_archs) {
    std::vector<std::string> texts;
    if (text.find("arch=") != std::string::npos)
        texts.push_back(text);
    else
        for (const std::string& arch : default_archs) texts.push_back(text + ",arch=" + arch);
    if (texts.empty()) throw UsageError("arch: missing, and there is no --arch or local device to supply it");
    std::vector<KernelSpec> specs;
    for (const std::string& full : texts) {
        auto parsed = parse_spec(full);
        if (!parsed.spec) throw UsageError(parsed.error);
        specs.push_back(*parsed.spec);
    }
    return specs;
}

std::vector<KernelSpec> specs_from_sweep(const json& sweep, const std::vector<std::string>& default_archs) {
    SweepRequest request;
    request.archs = default_archs;
    for (const auto& [field, value] : sweep.items()) {
        if (field == "arch")
            request.archs = text_values(value, field);
        else if (field == "preset")
            request.preset = single_text_value(value, field);
        else if (field == "family")
            request.families = text_values(value, field);
        else if (field == "head_dim")
            request.head_dims = text_values(value, field);
        else if (field == "dtype")
            request.dtypes = text_values(value, field);
        else if (field == "out_dtype")
            request.out_dtype = single_text_value(value, field);
        else if (field == "causal")
            request.causal_modes = text_values(value, field);
        else if (field == "page_size")
            request.page_sizes = each_value(value, field, integer_value);
        else if (field == "decode" || field == "window" || field == "softcap" || field == "sinks") {
            if (!value.is_boolean()) throw UsageError(field + ": expected true or false");
            bool& flag = field == "decode"    ? request.decode
                         : field == "window"  ? request.window
                         : field == "softcap" ? request.softcap
                                              : request.sinks;
            flag = value.get<bool>();
        } else if (field == "gqa_group")
            request.gqa_group = integer_value(value, field);
        else if (field == "head_dim_v")
            request.head_dim_v = integer_value(value, field);
        else if (field == "margin")
            request.margin = number_value(value, field);
        else if (field == "block_q")
            request.block_q = integer_value(value, field);
        else if (field == "block_k")
            request.block_k = integer_value(value, field);
        else if (field == "waves")
            request.waves = integer_value(value, field);
        else
            throw UsageError(field +
                             ": unknown field (known: arch, preset, family, head_dim, head_dim_v, dtype, out_dtype, "
                             "causal, page_size, decode, gqa_group, window, softcap, sinks, margin, block_q, block_k, "
                             "waves)");
    }
    return expand_sweep(request);
}

}  // namespace

std::vector<KernelSpec> read_manifest(const std::filesystem::path& path,
                                      const std::vector<std::string>& default_archs) {
    const std::string name = path.string();
    std::ifstream file(path);
    if (!file) throw UsageError(name + ": cannot open");
    const json manifest = json::parse(file, nullptr, false);
    if (manifest.is_discarded()) throw UsageError(name + ": not valid JSON");
    if (!manifest.is_object() || !manifest.contains("variants") || !manifest["variants"].is_array())
        throw UsageError(name + ": expected an object with a \"variants\" array");

    const json& variants = manifest["variants"];
    // As warm with nothing to warm on its command line: an empty list is a mistake, not a success.
    if (variants.empty()) throw UsageError(name + ": \"variants\" is empty: nothing to warm");
    std::vector<KernelSpec> specs;
    for (std::size_t index = 0; index < variants.size(); ++index) {
        const json& variant = variants[index];
        try {
            std::vector<KernelSpec> found;
            if (variant.is_string())
                found = specs_from_text(variant.get<std::string>(), default_archs);
            else if (variant.is_object())
                found = specs_from_sweep(variant, default_archs);
            else
                throw UsageError("expected a spec string or a sweep object");
            specs.insert(specs.end(), found.begin(), found.end());
        } catch (const UsageError& error) {
            throw UsageError(name + ": variants[" + std::to_string(index) + "]: " + error.what());
        }
    }
    return specs;
}

}  // namespace fajit::cli
