// fa-jit verify: decodes every entry and failure record and checks its checksum, like a
// filesystem fsck.
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
    const auto disk_cache = open_existing_disk_cache(resolve_options(common));
    const std::size_t checked = disk_cache->list().size();
    const std::size_t checked_failures = disk_cache->list_failures().size();
    const auto bad_entries = disk_cache->verify(options.fix);
    const auto bad_failures = disk_cache->verify_failures(options.fix);
    const std::size_t bad_count = bad_entries.size() + bad_failures.size();
    // Corruption that was removed is repaired; corruption left in place is a failure to report.
    const int status = bad_count == 0 || options.fix ? exit_success : exit_failed;

    if (common.json) {
        nlohmann::json bad = nlohmann::json::array();
        const auto add = [&](const cache::BadEntry& item, std::string_view kind) {
            bad.push_back({{"kind", kind},
                           {"arch", item.arch},
                           {"key", item.key.hex()},
                           {"path", item.path.string()},
                           {"error", item.error}});
        };
        for (const auto& entry : bad_entries) add(entry, "entry");
        for (const auto& failure : bad_failures) add(failure, "failure");
        std::cout << nlohmann::json{{"checked", checked},
                                    {"checked_failures", checked_failures},
                                    {"bad", std::move(bad)},
                                    {"removed", options.fix}}
                         .dump(2)
                  << "\n";
        return status;
    }
    for (const auto* group : {&bad_entries, &bad_failures})
        for (const auto& item : *group)
            std::cout << (options.fix ? "removed " : "corrupt ") << item.path.string() << ": " << item.error << "\n";
    std::cout << checked << " entries and " << checked_failures
              << (checked_failures == 1 ? " failure record" : " failure records") << " checked, " << bad_count
              << " corrupt";
    if (bad_count) std::cout << (options.fix ? ", removed" : " (fa-jit verify --fix removes them)");
    std::cout << "\n";
    return status;
}

}  // namespace

Command add_verify_command(CLI::App& app) {
    auto options = std::make_shared<VerifyOptions>();
    auto* verify = app.add_subcommand("verify", "check the integrity of every cache entry and failure record");
    verify->footer("Exit status: 0 all sound (or bad ones removed with --fix), 2 corruption found.");
    verify->add_flag("--fix", options->fix,
                     "remove what is corrupt (the library recompiles entries, and retries failed variants, on demand)");
    add_common_options(*verify, options->common);
    return {verify, [options] { return run_verify(*options, options->common); }};
}

}  // namespace fajit::cli
