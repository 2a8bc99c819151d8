// fa-jit pack FILE: the cache (or the part of it an image needs) as one archive, for an image
// build to copy in and unpack.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cache/cache_archive.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "families/registry.hpp"
#include "human_units.hpp"

namespace fajit::cli {
namespace {

struct PackOptions {
    CommonOptions common;
    std::string file;
    std::string arch;
    std::string family;
};

int run_pack(const PackOptions& options) {
    if (!options.family.empty() && !find_family(options.family))
        throw UsageError("--family=" + options.family + ": expected one of " + family_names());
    const auto disk_cache = open_existing_disk_cache(resolve_options(options.common));
    cache::PackFilter filter;
    if (!options.arch.empty()) filter.arch = options.arch;
    // Every entry the library writes names its family in its metadata.
    if (!options.family.empty()) filter.metadata["family"] = options.family;
    cache::PackResult result;
    try {
        result = cache::pack_cache(*disk_cache, options.file, filter);
    } catch (const cache::ArchiveError& error) {
        std::cerr << "fa-jit: pack: " << error.what() << "\n";
        return exit_failed;
    }
    if (options.common.json)
        std::cout << nlohmann::json{{"archive", options.file},
                                    {"entries", result.entries},
                                    {"bytes", result.bytes},
                                    {"skipped_damaged", result.skipped_damaged}}
                         .dump(2)
                  << "\n";
    else
        std::cout << "packed " << result.entries << " entries (" << format_bytes(result.bytes) << ") into "
                  << options.file << "\n";
    if (result.skipped_damaged)
        std::cerr << "fa-jit: pack: left out " << result.skipped_damaged
                  << " damaged entries (fa-jit verify --fix removes them)\n";
    return result.skipped_damaged ? exit_failed : exit_success;
}

}  // namespace

Command add_pack_command(CLI::App& app) {
    auto options = std::make_shared<PackOptions>();
    auto* pack = app.add_subcommand("pack", "write the cache's entries into one archive (zstd tar with a manifest)");
    pack->add_option("FILE", options->file, "the archive to write")->required();
    pack->add_option("--arch", options->arch, "only this arch's entries (full name)");
    pack->add_option("--family", options->family, "only this kernel family's entries: " + family_names(", "));
    add_common_options(*pack, options->common);
    return {pack, [options] { return run_pack(*options); }};
}

}  // namespace fajit::cli
