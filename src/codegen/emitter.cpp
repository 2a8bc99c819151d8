#include "codegen/emitter.hpp"

#include <charconv>

#include "families/registry.hpp"

namespace fajit {
namespace {

std::string_view element_type(DType dtype) {
    switch (dtype) {
        case DType::f16:
            return "fa_f16";
        case DType::bf16:
            return "fa_bf16";
        case DType::f32:
            return "float";
        case DType::e4m3:
            return "fa_e4m3";
    }
    return "";
}

std::string_view kv_layout_constant(KvLayout layout) {
    switch (layout) {
        case KvLayout::dense:
            return "FA_KV_DENSE";
        case KvLayout::ragged:
            return "FA_KV_RAGGED";
        case KvLayout::paged:
            return "FA_KV_PAGED";
    }
    return "";
}

std::string_view causal_constant(CausalMode causal) {
    switch (causal) {
        case CausalMode::none:
            return "FA_CAUSAL_NONE";
        case CausalMode::top_left:
            return "FA_CAUSAL_TOP_LEFT";
        case CausalMode::bottom_right:
            return "FA_CAUSAL_BOTTOM_RIGHT";
    }
    return "";
}

// Shortest text that reads back as the same float, as a C++ float literal.
std::string float_literal(float value) {
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    std::string text(buffer, end);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text + "f";
}

// The spec as constants, with the layout the host reserves shared memory for: the
// template derives its buffers from these and checks them against shared_bytes.
std::string specialization(const KernelSpec& spec, const SharedLayout& layout) {
    std::string text;
    text += "struct fajit_spec {\n";
    text += "    using element = " + std::string(element_type(spec.dtype)) + ";\n";
    text += "    using out_element = " + std::string(element_type(output_dtype(spec))) + ";  // of O\n";
    text += "    static constexpr int head_dim = " + std::to_string(spec.head_dim) + ";\n";
    text += "    static constexpr int head_dim_v = " + std::to_string(value_head_dim(spec)) + ";\n";
    text += "    static constexpr int block_q = " + std::to_string(spec.block_q) + ";\n";
    text += "    static constexpr int block_k = " + std::to_string(spec.block_k) + ";\n";
    text += "    static constexpr int waves = " + std::to_string(spec.waves) + ";\n";
    text += "    static constexpr float rescale_margin = " + float_literal(spec.rescale_margin) + ";\n";
    text += "    static constexpr int causal = " + std::string(causal_constant(spec.causal)) + ";\n";
    text += "    static constexpr int kv_layout = " + std::string(kv_layout_constant(spec.kv_layout)) + ";\n";
    text += "    static constexpr int page_size = " + std::to_string(spec.page_size) + ";\n";
    text += "    static constexpr bool window = " + std::string(spec.window ? "true" : "false") + ";\n";
    text += "    static constexpr bool softcap = " + std::string(spec.softcap ? "true" : "false") + ";\n";
    text += "    static constexpr bool sinks = " + std::string(spec.sinks ? "true" : "false") + ";\n";
    text += "    static constexpr int shared_bytes = " + std::to_string(layout.shared_bytes) + ";\n";
    for (const LayoutConstant& constant : layout.constants)
        if (!constant.name.empty())
            text += "    static constexpr int " + std::string(constant.name) + " = " + std::to_string(constant.value) +
                    ";\n";
    text += "};\n";
    return text;
}

}  // namespace

EmittedKernel emit(const KernelSpec& spec, const TemplateStore& templates) {
    const FamilyDescriptor& family = family_of(spec);
    EmittedKernel emitted;
    emitted.source = "// fa-jit generated kernel source\n// spec: " + to_string(spec) + "\n\n";
    for (const std::string_view file : family.prelude_parts) {
        const std::string part = templates.text(file);
        emitted.template_bytes += part;
        emitted.source += "// ---- " + std::string(file) + " ----\n" + part + "\n";
    }
    const std::string kernel = templates.text(family.template_file);
    emitted.template_bytes += kernel;
    emitted.source += "// ---- " + std::string(family.template_file) + " ----\n" + kernel + "\n";
    emitted.source += "// ---- specialization ----\n" + specialization(spec, family.shared_layout(spec));
    emitted.name_expression = std::string(family.kernel) + "<fajit_spec>";
    return emitted;
}

}  // namespace fajit
