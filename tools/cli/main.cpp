// fa-jit: the operator's tool for run-time compiled flash-attention kernels and their cache.
// Exit codes: 0 success, 1 usage error, 2 the operation ran but failed (exit_codes.hpp).
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "fajit/runtime.hpp"

namespace {

using namespace fajit::cli;

int run_reporting_errors(const Command& command) {
    try {
        return command.run();
    } catch (const UsageError& error) {
        std::cerr << "fa-jit: " << error.what() << "\n";
        return exit_usage;
    } catch (const fajit::CompileError& error) {
        std::cerr << "fa-jit: " << error.what() << "\n" << error.log() << "\n";
        return exit_failed;
    } catch (const std::invalid_argument& error) {
        // The library's way of saying a spec or setting is wrong; its message names the field.
        std::cerr << "fa-jit: " << error.what() << "\n";
        return exit_usage;
    } catch (const std::exception& error) {
        std::cerr << "fa-jit: " << error.what() << "\n";
        return exit_failed;
    }
}

// CLI11 checks for a missing command before it reports the words it could not place, so
// "fa-jit frob" or "fa-jit --frob" would read "A subcommand is required". When no command
// was parsed, the first such word is what to name instead.
std::optional<std::string> first_unplaced_word(const CLI::App& app) {
    if (!app.get_subcommands().empty()) return std::nullopt;
    const std::vector<std::string> unplaced = app.remaining();
    if (unplaced.empty()) return std::nullopt;
    return unplaced.front();
}

}  // namespace

int main(int argc, char** argv) {
    route_logging_to_stderr();
    CLI::App app{"fa-jit: run-time compiled flash-attention kernels; warm, inspect and maintain their cache"};
    app.footer(
        "Exit status: 0 success, 1 bad usage (arguments, spec, environment), 2 the operation failed.\n"
        "Environment: FAJIT_CACHE_DIR, FAJIT_CACHE_MAX_SIZE, FAJIT_CACHE_DISABLE, FAJIT_LOG_LEVEL, "
        "FAJIT_TEMPLATE_DIR, FAJIT_REMOTE_CACHE (and FAJIT_REMOTE_CACHE_*).\n"
        "Run fa-jit COMMAND --help for a command's options.");
    app.set_version_flag("--version", FAJIT_VERSION);
    app.require_subcommand(1);

    const Command commands[] = {
        add_warm_command(app),    add_ls_command(app),    add_stats_command(app),  add_verify_command(app),
        add_prune_command(app),   add_clear_command(app), add_emit_command(app),   add_compile_command(app),
        add_devices_command(app), add_bench_command(app), add_remote_command(app), add_pack_command(app),
        add_unpack_command(app),
    };
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        if (const auto unknown = first_unplaced_word(app)) {
            std::string names;
            for (const Command& command : commands)
                names += (names.empty() ? "" : ", ") + command.subcommand->get_name();
            std::cerr << "fa-jit: unknown " << (unknown->starts_with('-') ? "option" : "command") << " '" << *unknown
                      << "'; the commands are " << names << "\n";
            return exit_usage;
        }
        // --help and --version come this way too, with status 0.
        return app.exit(error) == 0 ? exit_success : exit_usage;
    }
    for (const Command& command : commands)
        if (command.subcommand->parsed()) return run_reporting_errors(command);
    return exit_usage;
}
