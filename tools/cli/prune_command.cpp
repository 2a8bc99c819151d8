// fa-jit prune: removes old or least recently used entries, like ccache --cleanup.
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

struct PruneOptions {
    CommonOptions common;
    std::string max_size;
    std::string older_than;
    std::string arch;
};

cache::PruneOptions library_prune_options(const PruneOptions& options, std::uint64_t configured_max_bytes) {
    cache::PruneOptions prune;
    if (!options.max_size.empty()) {
        prune.max_bytes = parse_byte_size(options.max_size);
        if (!prune.max_bytes) throw UsageError("--max-size=" + options.max_size + ": expected bytes, e.g. 2G or 512M");
    }
    if (!options.older_than.empty()) {
        prune.older_than = parse_duration(options.older_than);
        if (!prune.older_than)
            throw UsageError("--older-than=" + options.older_than + ": expected a number and a unit, e.g. 12h or 7d");
    }
    // The library removes everything selected when given no bound; pruning never should.
    if (!prune.max_bytes && !prune.older_than) prune.max_bytes = configured_max_bytes;
    if (!options.arch.empty()) prune.arch = options.arch;
    return prune;
}

int run_prune(const PruneOptions& options, const CommonOptions& common) {
    const fajit::Options library_options = resolve_options(common);
    const cache::PruneOptions prune = library_prune_options(options, library_options.cache_max_bytes);
    const auto disk_cache = open_existing_disk_cache(library_options);
    const cache::PruneResult result = disk_cache->prune(prune);
    std::uint64_t remaining_bytes = 0;
    std::size_t remaining_entries = 0;
    for (const auto& entry : disk_cache->list()) {
        remaining_bytes += entry.size;
        ++remaining_entries;
    }
    if (common.json) {
        std::cout << nlohmann::json{{"removed_entries", result.removed_entries},
                                    {"removed_bytes", result.removed_bytes},
                                    {"entries", remaining_entries},
                                    {"bytes", remaining_bytes}}
                         .dump(2)
                  << "\n";
    } else {
        std::cout << "removed " << result.removed_entries << " entries (" << format_bytes(result.removed_bytes) << "); "
                  << remaining_entries << " entries (" << format_bytes(remaining_bytes) << ") remain\n";
    }
    return exit_success;
}

}  // namespace

Command add_prune_command(CLI::App& app) {
    auto options = std::make_shared<PruneOptions>();
    auto* prune = app.add_subcommand("prune", "remove old or least recently used entries");
    prune->footer(
        "Entries older than --older-than go first, then least recently used ones until the rest fit in\n"
        "--max-size. Without either bound, prunes to the configured limit (FAJIT_CACHE_MAX_SIZE).");
    prune->add_option("--max-size", options->max_size, "keep at most this much, e.g. 512M or 2G");
    prune->add_option("--older-than", options->older_than, "remove entries unused for this long, e.g. 12h or 7d");
    prune->add_option("--arch", options->arch, "only consider this arch's entries (full name)");
    add_common_options(*prune, options->common);
    return {prune, [options] { return run_prune(*options, options->common); }};
}

}  // namespace fajit::cli
