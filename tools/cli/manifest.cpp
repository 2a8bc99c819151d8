#include "manifest.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "exit_codes.hpp"
#include "variant_sweep.hpp"

namespace fajit::cli {
namespace {

using nlohmann::json;

// A sweep field may be one value or an array; numbers are taken as their text.
std::vector<std::string> text_values(const json& value, const std::string& field) {
    const auto one = [&](const json& item) {
        if (item.is_string()) return item.get<std::string>();
        if (item.is_number_integer()) return std::to_string(item.get<long long>());
        throw UsageError(field + ": expected a string, an integer or an array of them");
    };
    std::vector<std::string> values;
    if (value.is_array())
        for (const json& item : value) values.push_back(one(item));
    else
        values.push_back(one(value));
    return values;
}

template <class Number>
Number number_value(const json& value, const std::string& field) {
    if (!value.is_number()) throw UsageError(field + ": expected a number");
    return value.get<Number>();
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
            request.preset = text_values(value, field).at(0);
        else if (field == "family")
            request.families = text_values(value, field);
        else if (field == "head_dim")
            request.head_dims = text_values(value, field);
        else if (field == "dtype")
            request.dtypes = text_values(value, field);
        else if (field == "out_dtype")
            request.out_dtype = text_values(value, field).at(0);
        else if (field == "causal")
            request.causal_modes = text_values(value, field);
        else if (field == "page_size")
            for (const json& item : value.is_array() ? value : json::array({value}))
                request.page_sizes.push_back(number_value<int>(item, field));
        else if (field == "decode" || field == "window" || field == "softcap" || field == "sinks") {
            if (!value.is_boolean()) throw UsageError(field + ": expected true or false");
            bool& flag = field == "decode"    ? request.decode
                         : field == "window"  ? request.window
                         : field == "softcap" ? request.softcap
                                              : request.sinks;
            flag = value.get<bool>();
        } else if (field == "gqa_group")
            request.gqa_group = number_value<int>(value, field);
        else if (field == "head_dim_v")
            request.head_dim_v = number_value<int>(value, field);
        else if (field == "margin")
            request.margin = number_value<float>(value, field);
        else if (field == "block_q")
            request.block_q = number_value<int>(value, field);
        else if (field == "block_k")
            request.block_k = number_value<int>(value, field);
        else if (field == "waves")
            request.waves = number_value<int>(value, field);
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

    std::vector<KernelSpec> specs;
    const json& variants = manifest["variants"];
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
