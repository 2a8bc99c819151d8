#pragma once
// The subcommands. Each add_*_command registers its CLI11 subcommand (options, help) and
// returns what runs it; running returns the process exit status (see exit_codes.hpp).
#include <functional>

namespace CLI {
class App;
}

namespace fajit::cli {

struct Command {
    CLI::App* subcommand;
    std::function<int()> run;
};

Command add_warm_command(CLI::App& app);
Command add_ls_command(CLI::App& app);
Command add_stats_command(CLI::App& app);
Command add_verify_command(CLI::App& app);
Command add_prune_command(CLI::App& app);
Command add_clear_command(CLI::App& app);
Command add_emit_command(CLI::App& app);
Command add_compile_command(CLI::App& app);
Command add_devices_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_remote_command(CLI::App& app);
Command add_pack_command(CLI::App& app);
Command add_unpack_command(CLI::App& app);

}  // namespace fajit::cli
