// fa-jit emit: the exact source the library would compile for a spec, for reading or
// compiling by hand.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"
#include "spec_argument.hpp"

namespace fajit::cli {
namespace {

struct EmitOptions {
    CommonOptions common;
    std::string spec;
    std::string arch;
};

int run_emit(const EmitOptions& options, const CommonOptions& common) {
    const KernelSpec spec = parse_spec_argument(options.spec, options.arch);
    const Runtime runtime(resolve_options(common));
    const std::string source = runtime.emit(spec);
    if (common.json)
        std::cout << nlohmann::json{{"spec", to_string(spec)}, {"source", source}}.dump(2) << "\n";
    else
        std::cout << source;
    return exit_success;
}

}  // namespace

Command add_emit_command(CLI::App& app) {
    auto options = std::make_shared<EmitOptions>();
    auto* emit = app.add_subcommand("emit", "print the exact source the library compiles for SPEC");
    emit->add_option("spec", options->spec, spec_argument_help())->required();
    emit->add_option("--arch", options->arch, "target to use instead of the spec's arch");
    add_common_options(*emit, options->common);
    return {emit, [options] { return run_emit(*options, options->common); }};
}

}  // namespace fajit::cli
