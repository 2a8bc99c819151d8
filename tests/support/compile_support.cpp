#include "support/compile_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>

#include "codegen/emitter.hpp"
#include "codegen/isa_report.hpp"
#include "families/registry.hpp"
#include "spec/arch.hpp"
#include "spec/comma_list.hpp"

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

SpillCheck compile_and_check_spills(const KernelSpec& spec, const Backend& backend) {
    if (vendor_of(spec.arch) == Vendor::nvidia) {
        const PtxasCompile compile = compile_with_ptxas_report(spec, backend);
        if (!compile.ok) return {false, "did not compile: " + compile.log};
        const PtxasReport& report = compile.report;
        if (report.registers <= 0) return {true, "no register count in the log: " + compile.log};
        if (report.spill_store_bytes != 0 || report.spill_load_bytes != 0)
            return {true,
                    "spills " + std::to_string(report.spill_store_bytes) + " bytes stored, " +
                        std::to_string(report.spill_load_bytes) + " loaded, at " + std::to_string(report.registers) +
                        " registers",
                    true};
        return {true, ""};
    }
    const CompileResult result = compile_directly(spec, backend);
    if (!result.ok) return {false, "did not compile: " + result.log};
    std::string why;
    const auto report = isa_report(result.code, spec.arch, &why);
    if (!report) return {true, "no ISA report: " + why};
    if (report->wave_size != wave_size(spec.arch))
        return {true, "wave size " + std::to_string(report->wave_size) + " where " + spec.arch + " runs " +
                          std::to_string(wave_size(spec.arch))};
    if (report->vgpr_spills != 0 || report->sgpr_spills != 0 || report->scratch_bytes != 0)
        return {true,
                "spills " + std::to_string(report->vgpr_spills) + " VGPRs, " + std::to_string(report->sgpr_spills) +
                    " SGPRs, scratch " + std::to_string(report->scratch_bytes) + " bytes",
                true};
    return {true, ""};
}

namespace {

// FAJIT_TEST_FAMILIES=a,b (tools/test.sh --families) limits the sweeps over several
// families to those, so that an exhaustive sweep can cover the families a change touched
// in a fraction of its time. Every name must be a registered family.
std::vector<std::string> swept_families() {
    std::vector<std::string> families;
    const char* list = std::getenv("FAJIT_TEST_FAMILIES");
    for (const std::string_view family : comma_list_items(list ? list : "")) families.emplace_back(family);
    for (const std::string& family : families)
        REQUIRE_MESSAGE(find_family(family) != nullptr, "FAJIT_TEST_FAMILIES names no family '", family, "'");
    return families;
}

}  // namespace

int compile_targets(std::span<const Target> targets, const SpecsOf& specs_of, std::size_t at_least, Spills spills) {
    const std::vector<std::string> families = swept_families();
    int compiled = 0;
    for (const auto& [family, arch] : targets) {
        if (!families.empty() && std::find(families.begin(), families.end(), family) == families.end()) {
            std::printf("skipped %s on %s: not in FAJIT_TEST_FAMILIES\n", family.c_str(), arch.c_str());
            continue;
        }
        const Backend* backend = compiler_for(arch);
        if (!backend) continue;
        const std::vector<KernelSpec> specs = specs_of(family, arch);
        REQUIRE_MESSAGE(specs.size() >= at_least, family, " on ", arch, ": ", specs.size(), " variants");
        std::vector<SpillCheck> checks(specs.size());
        on_every_core(specs.size(), [&](std::size_t i) { checks[i] = compile_and_check_spills(specs[i], *backend); });
        for (std::size_t i = 0; i < specs.size(); ++i) {
            const SpillCheck& check = checks[i];
            INFO(to_string(specs[i]));
            CHECK_MESSAGE(check.compiled, check.problem);
            if (!check.compiled) continue;
            ++compiled;
            if (check.spilled && spills == Spills::are_printed) {
                std::printf("%s: %s\n", check.problem.c_str(), to_string(specs[i]).c_str());
                continue;
            }
            CHECK_MESSAGE(check.problem.empty(), check.problem);
        }
    }
    return compiled;
}

}  // namespace fajit::testing
