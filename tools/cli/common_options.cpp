#include "common_options.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <filesystem>

#include "exit_codes.hpp"
#include "runtime/disk_cache_config.hpp"

namespace fajit::cli {
namespace {

// -v, -vv, -vvv and -q, -qq, as levels Options::log_level understands.
std::string log_level_for(const CommonOptions& common, const std::string& configured) {
    if (common.verbosity >= 3) return "trace";
    if (common.verbosity == 2) return "debug";
    if (common.verbosity == 1) return "info";
    if (common.quietness >= 2) return "off";
    if (common.quietness == 1) return "error";
    return configured;
}

}  // namespace

void add_common_options(CLI::App& command, CommonOptions& common) {
    command.add_option("--cache-dir", common.cache_dir,
                       "cache directory (default: FAJIT_CACHE_DIR, else $XDG_CACHE_HOME/fa-jit, else ~/.cache/fa-jit)");
    command.add_flag("--json", common.json, "print the result as JSON on stdout");
    command.add_flag("-v,--verbose", common.verbosity,
                     "log more: -v info, -vv debug, -vvv trace (default: FAJIT_LOG_LEVEL, else warn)");
    command.add_flag("-q,--quiet", common.quietness, "no progress output; -q logs errors only, -qq nothing");
}

fajit::Options resolve_options(const CommonOptions& common) {
    fajit::Options options;
    try {
        options = fajit::Options::from_environment();
    } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
    }
    if (!common.cache_dir.empty()) options.cache_dir = common.cache_dir;
    options.log_level = log_level_for(common, options.log_level);
    spdlog::set_level(spdlog::level::from_str(options.log_level));
    return options;
}

void route_logging_to_stderr() {
    auto logger = spdlog::stderr_color_mt("fa-jit");
    logger->set_pattern("fa-jit: %^%l%$: %v");
    spdlog::set_default_logger(std::move(logger));
}

std::unique_ptr<cache::DiskCache> open_disk_cache(const fajit::Options& options) {
    if (options.cache_dir.empty())
        throw UsageError(
            "no cache directory: pass --cache-dir or set FAJIT_CACHE_DIR (neither XDG_CACHE_HOME nor "
            "HOME is set)");
    cache::DiskCacheConfig config = disk_cache_config(options);
    config.enabled = true;
    return std::make_unique<cache::DiskCache>(std::move(config));
}

std::unique_ptr<cache::DiskCache> open_existing_disk_cache(const fajit::Options& options) {
    if (!options.cache_dir.empty()) {
        std::error_code error;
        const auto status = std::filesystem::status(options.cache_dir, error);
        const std::string where = "cache directory " + options.cache_dir.string();
        if (error && error != std::errc::no_such_file_or_directory) throw UsageError(where + ": " + error.message());
        if (!std::filesystem::exists(status))
            throw UsageError(where + " does not exist: check --cache-dir or FAJIT_CACHE_DIR");
        if (!std::filesystem::is_directory(status)) throw UsageError(where + " is not a directory");
    }
    return open_disk_cache(options);
}

}  // namespace fajit::cli
