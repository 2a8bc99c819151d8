// fa-jit clear: empties the cache (or one arch of it) of entries and failure records; the
// counters survive, as in ccache -C.
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
    const auto disk_cache = open_existing_disk_cache(resolve_options(common));
    const cache::PruneResult result =
        disk_cache->clear(options.arch.empty() ? std::nullopt : std::optional<std::string>(options.arch));
    if (common.json)
        std::cout << nlohmann::json{{"removed_entries", result.removed_entries},
                                    {"removed_bytes", result.removed_bytes},
                                    {"removed_failure_records", result.removed_failure_records}}
                         .dump(2)
                  << "\n";
    else
        std::cout << "removed " << result.removed_entries << " entries (" << format_bytes(result.removed_bytes)
                  << ") and " << result.removed_failure_records
                  << (result.removed_failure_records == 1 ? " failure record\n" : " failure records\n");
    return exit_success;
}

}  // namespace

Command add_clear_command(CLI::App& app) {
    auto options = std::make_shared<ClearOptions>();
    auto* clear = app.add_subcommand("clear", "remove every cached kernel and failure record (counters are kept)");
    clear->add_option("--arch", options->arch, "only this arch's entries and failure records (full name)");
    add_common_options(*clear, options->common);
    return {clear, [options] { return run_clear(*options, options->common); }};
}

}  // namespace fajit::cli
