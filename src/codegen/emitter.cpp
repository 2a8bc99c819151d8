#include "codegen/emitter.hpp"

#include <charconv>

namespace fajit {
namespace {

struct FamilyTemplate {
    const char* file;
    const char* kernel;
};

FamilyTemplate template_of(Family family) {
    switch (family) {
        case Family::scalar:
            return {"fa_scalar.h", "fa_scalar"};
        case Family::wmma_gfx11:
            return {"fa_wmma_gfx11.h", "fa_wmma_gfx11"};
        case Family::mma_sm80:
            return {"fa_mma_sm80.h", "fa_mma_sm80"};
        case Family::wgmma_sm90:
            return {"fa_wgmma_sm90.h", "fa_wgmma_sm90"};
    }
    return {"", ""};
}

std::string_view element_type(DType dtype) {
    switch (dtype) {
        case DType::f16:
            return "fa_f16";
        case DType::bf16:
            return "fa_bf16";
        case DType::f32:
            return "float";
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

std::string specialization(const KernelSpec& spec) {
    std::string text;
    text += "struct fajit_spec {\n";
    text += "    using element = " + std::string(element_type(spec.dtype)) + ";\n";
    text += "    static constexpr int head_dim = " + std::to_string(spec.head_dim) + ";\n";
    text += "    static constexpr int block_q = " + std::to_string(spec.block_q) + ";\n";
    text += "    static constexpr int block_k = " + std::to_string(spec.block_k) + ";\n";
    text += "    static constexpr int waves = " + std::to_string(spec.waves) + ";\n";
    text += "    static constexpr float rescale_margin = " + float_literal(spec.rescale_margin) + ";\n";
    text += "    static constexpr int causal = " + std::string(causal_constant(spec.causal)) + ";\n";
    text += "};\n";
    return text;
}

}  // namespace

EmittedKernel emit(const KernelSpec& spec, const TemplateStore& templates) {
    const FamilyTemplate family = template_of(spec.family);
    const std::string prelude = templates.text("prelude.h");
    const std::string kernel = templates.text(family.file);

    EmittedKernel emitted;
    emitted.template_bytes = prelude + kernel;
    emitted.source = "// fa-jit generated kernel source\n// spec: " + to_string(spec) + "\n\n";
    emitted.source += "// ---- prelude.h ----\n" + prelude + "\n";
    emitted.source += "// ---- " + std::string(family.file) + " ----\n" + kernel + "\n";
    emitted.source += "// ---- specialization ----\n" + specialization(spec);
    emitted.name_expression = std::string(family.kernel) + "<fajit_spec>";
    return emitted;
}

}  // namespace fajit
