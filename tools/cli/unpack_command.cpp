// fa-jit unpack FILE: stores an archive written by fa-jit pack into the cache, after checking
// all of it; a damaged archive stores nothing.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cache/cache_archive.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "human_units.hpp"

namespace fajit::cli {
namespace {

struct UnpackOptions {
    CommonOptions common;
    std::string file;
};

int run_unpack(const UnpackOptions& options) {
    const auto disk_cache = open_disk_cache(resolve_options(options.common));
    cache::UnpackResult result;
    try {
        result = cache::unpack_cache(*disk_cache, options.file);
    } catch (const cache::ArchiveError& error) {
        std::cerr << "fa-jit: unpack: refused " << options.file << ": " << error.what() << "; nothing was stored\n";
        return exit_failed;
    }
    if (options.common.json)
        std::cout << nlohmann::json{{"archive", options.file},
                                    {"entries", result.entries},
                                    {"bytes", result.bytes},
                                    {"not_stored", result.not_stored}}
                         .dump(2)
                  << "\n";
    else
        std::cout << "unpacked " << result.entries << " entries (" << format_bytes(result.bytes) << ") into "
                  << disk_cache->config().root.string() << "\n";
    if (result.not_stored)
        std::cerr << "fa-jit: unpack: " << result.not_stored << " entries could not be stored (full or read-only)\n";
    return result.not_stored ? exit_failed : exit_success;
}

}  // namespace

Command add_unpack_command(CLI::App& app) {
    auto options = std::make_shared<UnpackOptions>();
    auto* unpack = app.add_subcommand("unpack", "check an archive from fa-jit pack, then store its entries");
    unpack->add_option("FILE", options->file, "the archive to read")->required()->check(CLI::ExistingFile);
    add_common_options(*unpack, options->common);
    return {unpack, [options] { return run_unpack(*options); }};
}

}  // namespace fajit::cli
