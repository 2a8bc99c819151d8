// fa-jit compile: compiles one variant into the cache and shows what the compiler said
// and, with --isa, what the code costs: registers, spills, shared memory (LDS) and, for
// AMD targets, instructions.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"
#include "kernel_cost.hpp"
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
    Runtime runtime(resolve_options(common));
    const CompiledKernel kernel = runtime.prepare(spec);
    const KernelCost cost = options.isa ? kernel_cost(kernel) : KernelCost{};

    if (common.json) {
        nlohmann::json result = {{"spec", to_string(kernel.spec)},
                                 {"key", kernel.key},
                                 {"bytes", kernel.code.size()},
                                 {"kernel", kernel.lowered_name},
                                 {"compiled_now", kernel.compiled_now},
                                 {"compile_seconds", kernel.compile_seconds},
                                 {"log", kernel.log}};
        add_kernel_cost(result, cost);
        std::cout << result.dump(2) << "\n";
    } else {
        std::cout << to_string(kernel.spec) << "\n  key " << kernel.key << "\n  " << kernel.code.size()
                  << " bytes, kernel " << kernel.lowered_name << ", "
                  << (kernel.compiled_now ? "compiled" : "from cache") << " (compile took " << kernel.compile_seconds
                  << " s)\n";
        if (!kernel.log.empty()) std::cout << kernel.log << "\n";
        if (cost.isa) std::cout << format_isa_report(*cost.isa);
        if (cost.ptxas) std::cout << format_ptxas_report(*cost.ptxas);
    }
    if (!cost.error.empty()) {
        std::cerr << "fa-jit: no ISA report: " << cost.error << "\n";
        return exit_failed;
    }
    return exit_success;
}

}  // namespace

Command add_compile_command(CLI::App& app) {
    auto options = std::make_shared<CompileOptions>();
    auto* compile = app.add_subcommand("compile", "compile one variant into the cache and print its log");
    compile->footer("Exit status: 0 compiled, 1 bad spec, 2 the compiler rejected it (its log follows) or --isa found no report.");
    compile->add_option("spec", options->spec, spec_argument_help())->required();
    compile->add_option("--arch", options->arch, "target to use instead of the spec's arch");
    compile->add_flag("--isa", options->isa,
                      "also report what the code costs: for AMD targets VGPRs, SGPRs, LDS, scratch, spills and "
                      "instruction counts (needs llvm-readelf and llvm-objdump); for NVIDIA targets ptxas's registers, "
                      "spills, static shared memory and performance advisories");
    add_common_options(*compile, options->common);
    return {compile, [options] { return run_compile(*options, options->common); }};
}

}  // namespace fajit::cli
