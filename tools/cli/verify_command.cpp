// fa-jit verify: decodes every entry and checks its checksum, like a filesystem fsck.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"

namespace fajit::cli {
namespace {

struct VerifyOptions {
    CommonOptions common;
    bool fix = false;
};

int run_verify(const VerifyOptions& options, const CommonOptions& common) {
    const auto disk_cache = open_disk_cache(resolve_options(common));
    const std::size_t checked = disk_cache->list().size();
    const auto bad_entries = disk_cache->verify(options.fix);
    // Corruption that was removed is repaired; corruption left in place is a failure to report.
    const int status = bad_entries.empty() || options.fix ? exit_success : exit_failed;

    if (common.json) {
        nlohmann::json bad = nlohmann::json::array();
        for (const auto& entry : bad_entries)
            bad.push_back({{"arch", entry.arch},
                           {"key", entry.key.hex()},
                           {"path", entry.path.string()},
                           {"error", entry.error}});
        std::cout << nlohmann::json{{"checked", checked}, {"bad", std::move(bad)}, {"removed", options.fix}}.dump(2)
                  << "\n";
        return status;
    }
    for (const auto& entry : bad_entries)
        std::cout << (options.fix ? "removed " : "corrupt ") << entry.path.string() << ": " << entry.error << "\n";
    std::cout << checked << " entries checked, " << bad_entries.size() << " corrupt";
    if (!bad_entries.empty()) std::cout << (options.fix ? ", removed" : " (fa-jit verify --fix removes them)");
    std::cout << "\n";
    return status;
}

}  // namespace

Command add_verify_command(CLI::App& app) {
    auto options = std::make_shared<VerifyOptions>();
    auto* verify = app.add_subcommand("verify", "check every cache entry's integrity");
    verify->footer("Exit status: 0 all sound (or bad ones removed with --fix), 2 corruption found.");
    verify->add_flag("--fix", options->fix, "remove corrupt entries (the library recompiles them on demand)");
    add_common_options(*verify, options->common);
    return {verify, [options] { return run_verify(*options, options->common); }};
}

}  // namespace fajit::cli
