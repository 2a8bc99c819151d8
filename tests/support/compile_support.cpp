#include "support/compile_support.hpp"

#include <cstdio>
#include <memory>

#include "codegen/emitter.hpp"

namespace fajit::testing {

const Backend* compiler_for(const std::string& arch) {
    static const auto backends = make_backends();
    for (const auto& backend : backends)
        if (backend->targets(arch)) {
            if (auto reason = backend->compiler_unavailable_reason(); !reason.empty()) {
                std::printf("skipped %s: %s\n", arch.c_str(), reason.c_str());
                return nullptr;
            }
            return backend.get();
        }
    std::printf("skipped %s: no backend for it in this build\n", arch.c_str());
    return nullptr;
}

CompileResult compile_directly(const KernelSpec& spec, const Backend& backend, std::vector<std::string> options) {
    const auto emitted = emit(spec, TemplateStore());
    CompileRequest request;
    request.source = emitted.source;
    request.program_name = "fa_" + spec.family + ".cu";
    request.name_expressions = {emitted.name_expression};
    request.options = std::move(options);
    request.arch = spec.arch;
    return backend.compile(request);
}

}  // namespace fajit::testing
