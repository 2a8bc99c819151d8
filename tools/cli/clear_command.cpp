// fa-jit clear: empties the cache (or one arch of it); the counters survive, as in ccache -C.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "human_units.hpp"

namespace fajit::cli {
namespace {

struct ClearOptions {
    CommonOptions common;
    std::string arch;
};

int run_clear(const ClearOptions& options, const CommonOptions& common) {
    const auto disk_cache = open_disk_cache(resolve_options(common));
    cache::PruneResult result;
    if (options.arch.empty()) {
        result = disk_cache->clear();
    } else {
        // A prune with an arch and no bound removes every entry of that arch.
        cache::PruneOptions only_arch;
        only_arch.arch = options.arch;
        result = disk_cache->prune(only_arch);
    }
    if (common.json)
        std::cout << nlohmann::json{{"removed_entries", result.removed_entries},
                                    {"removed_bytes", result.removed_bytes}}
                         .dump(2)
                  << "\n";
    else
        std::cout << "removed " << result.removed_entries << " entries (" << format_bytes(result.removed_bytes)
                  << ")\n";
    return exit_success;
}

}  // namespace

Command add_clear_command(CLI::App& app) {
    auto options = std::make_shared<ClearOptions>();
    auto* clear = app.add_subcommand("clear", "remove every cached kernel (counters are kept)");
    clear->add_option("--arch", options->arch, "only this arch's entries (full name)");
    add_common_options(*clear, options->common);
    return {clear, [options] { return run_clear(*options, options->common); }};
}

}  // namespace fajit::cli
