#include "support/compile_support.hpp"

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

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

PtxasCompile compile_with_ptxas_report(const KernelSpec& spec, const Backend& backend) {
    const CompileResult result = compile_directly(spec, backend);
    PtxasCompile compile;
    compile.ok = result.ok;
    compile.log = result.log;
    if (auto report = ptxas_report_from_log(result.log)) compile.report = *report;
    return compile;
}

void on_every_core(std::size_t count, const std::function<void(std::size_t)>& work) {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
        workers.emplace_back([&] {
            for (std::size_t i = next++; i < count; i = next++) work(i);
        });
    for (auto& worker : workers) worker.join();
}

}  // namespace fajit::testing
