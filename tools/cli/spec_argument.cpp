#include "spec_argument.hpp"

#include <algorithm>

#include "exit_codes.hpp"
#include "families/registry.hpp"
#include "spec/comma_list.hpp"
#include "spec/spec_fields.hpp"

namespace fajit::cli {

KernelSpec parse_spec_argument(const std::string& text, const std::string& arch) {
    std::string retargeted = text;
    if (!arch.empty()) {
        retargeted.clear();
        for (const std::string_view field : comma_list_items(text))
            if (!field.starts_with("arch=")) retargeted += std::string(field) + ",";
        retargeted += "arch=" + arch;
    }
    auto parsed = parse_spec(retargeted);
    if (!parsed.spec) throw UsageError("bad spec: " + parsed.error);
    return *parsed.spec;
}

std::string spec_argument_help() {
    std::string required, optional;
    for (std::string_view name : spec_field_names) {
        std::string& list =
            std::ranges::find(required_spec_fields, name) != std::end(required_spec_fields) ? required : optional;
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return "spec, e.g. family=" + std::string(fallback_family().name) +
           ",d=128,dtype=f16,causal=bottom-right,arch=gfx1151; required: " + required + "; optional: " + optional +
           " (README: Kernel specs)";
}

}  // namespace fajit::cli
