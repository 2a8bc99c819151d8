#pragma once
// The options every subcommand takes (--cache-dir, --json, -v, -q) and what they resolve to.
#include <memory>
#include <string>

#include "cache/disk_cache.hpp"
#include "fajit/options.hpp"

namespace CLI {
class App;
}

namespace fajit::cli {

struct CommonOptions {
    std::string cache_dir;
    bool json = false;
    int verbosity = 0;  // how many -v
    int quietness = 0;  // how many -q
};

void add_common_options(CLI::App& command, CommonOptions& common);

// Options::from_environment() with the command line on top; also sets the log level, so
// Options::log_level stays the one place it is decided. Throws UsageError for a malformed
// FAJIT_* variable.
fajit::Options resolve_options(const CommonOptions& common);

// Sends every log line to stderr, keeping stdout for results (and --json parseable).
void route_logging_to_stderr();

// The disk cache the library would use with these options, for the maintenance commands.
// It acts on the directory even when FAJIT_CACHE_DISABLE is set: an operator cleaning a
// cache means it. Throws UsageError when no directory is known.
std::unique_ptr<cache::DiskCache> open_disk_cache(const fajit::Options& options);

// The same for a command that reads, cleans or packs the cache: its directory must already
// exist, since a missing one is most likely a mistyped path, which would otherwise read as
// an empty cache (and pack into an empty archive). Throws UsageError when it does not
// exist or is not a directory.
std::unique_ptr<cache::DiskCache> open_existing_disk_cache(const fajit::Options& options);

}  // namespace fajit::cli
