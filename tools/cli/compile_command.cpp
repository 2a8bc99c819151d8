// fa-jit compile: compiles one variant into the cache and shows what the compiler said
// and, for AMD targets, what the code costs in registers, LDS and instructions.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "codegen/isa_report.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"
#include "isa_json.hpp"
#include "spec/arch.hpp"
#include "spec_argument.hpp"

namespace fajit::cli {
namespace {

struct CompileOptions {
    CommonOptions common;
    std::string spec;
    std::string arch;
    bool isa = false;
};

int run_compile(const CompileOptions& options, const CommonOptions& common) {
    const KernelSpec spec = parse_spec_argument(options.spec, options.arch);
    if (options.isa && vendor_of(spec.arch) != Vendor::amd)
        throw UsageError("--isa: ISA reports are for AMD (gfx*) targets, not arch=" + spec.arch);
    Runtime runtime(resolve_options(common));
    const CompiledKernel kernel = runtime.prepare(spec);

    std::optional<IsaReport> isa;
    std::string isa_error;
    if (options.isa) isa = isa_report(kernel.code, spec.arch, &isa_error);

    if (common.json) {
        nlohmann::json result = {{"spec", to_string(kernel.spec)},
                                 {"key", kernel.key},
                                 {"bytes", kernel.code.size()},
                                 {"kernel", kernel.lowered_name},
                                 {"compiled_now", kernel.compiled_now},
                                 {"compile_seconds", kernel.compile_seconds},
                                 {"log", kernel.log}};
        if (isa) result["isa"] = to_json(*isa);
        if (!isa_error.empty()) result["isa_error"] = isa_error;
        std::cout << result.dump(2) << "\n";
    } else {
        std::cout << to_string(kernel.spec) << "\n  key " << kernel.key << "\n  " << kernel.code.size()
                  << " bytes, kernel " << kernel.lowered_name << ", "
                  << (kernel.compiled_now ? "compiled" : "from cache") << " (compile took " << kernel.compile_seconds
                  << " s)\n";
        if (!kernel.log.empty()) std::cout << kernel.log << "\n";
        if (isa) std::cout << format_isa_report(*isa);
    }
    if (!isa_error.empty()) {
        std::cerr << "fa-jit: no ISA report: " << isa_error << "\n";
        return exit_failed;
    }
    return exit_success;
}

}  // namespace

Command add_compile_command(CLI::App& app) {
    auto options = std::make_shared<CompileOptions>();
    auto* compile = app.add_subcommand("compile", "compile one variant into the cache and print its log");
    compile->footer("Exit status: 0 compiled, 1 bad spec, 2 the compiler rejected it (its log follows).");
    compile->add_option("spec", options->spec, spec_argument_help())->required();
    compile->add_option("--arch", options->arch, "target to use instead of the spec's arch");
    compile->add_flag("--isa", options->isa,
                      "also report VGPRs, SGPRs, LDS, scratch, spills and instruction counts (AMD targets; needs "
                      "llvm-readelf and llvm-objdump)");
    add_common_options(*compile, options->common);
    return {compile, [options] { return run_compile(*options, options->common); }};
}

}  // namespace fajit::cli
