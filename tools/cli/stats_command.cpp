// fa-jit stats: the cache's counters over every process that used it, in the manner of ccache -s.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "human_units.hpp"
#include "text_table.hpp"

namespace fajit::cli {
namespace {

struct StatsOptions {
    CommonOptions common;
    bool zero = false;
};

struct ArchUsage {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    std::uint64_t failure_records = 0;
};

std::string percent(std::uint64_t part, std::uint64_t whole) {
    if (whole == 0) return "";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return text;
}

int run_stats(const StatsOptions& options, const CommonOptions& common) {
    const auto disk_cache = open_existing_disk_cache(resolve_options(common));
    if (options.zero) disk_cache->zero_stats();
    const cache::CacheStats counters = disk_cache->stats();
    std::map<std::string, ArchUsage> per_arch;
    ArchUsage total;
    for (const auto& entry : disk_cache->list()) {
        auto& usage = per_arch[entry.arch];
        ++usage.entries;
        usage.bytes += entry.size;
        ++total.entries;
        total.bytes += entry.size;
    }
    for (const auto& failure : disk_cache->list_failures()) {
        ++per_arch[failure.arch].failure_records;
        ++total.failure_records;
    }
    const std::uint64_t max_bytes = disk_cache->config().max_bytes;

    if (common.json) {
        nlohmann::json archs = nlohmann::json::object();
        for (const auto& [arch, usage] : per_arch)
            archs[arch] = {
                {"entries", usage.entries}, {"bytes", usage.bytes}, {"failure_records", usage.failure_records}};
        std::cout << nlohmann::json{{"cache_dir", disk_cache->config().root.string()},
                                    {"counters", cache::to_json(counters)},
                                    {"entries", total.entries},
                                    {"bytes", total.bytes},
                                    {"max_bytes", max_bytes},
                                    {"failure_records", total.failure_records},
                                    {"per_arch", std::move(archs)}}
                         .dump(2)
                  << "\n";
        return exit_success;
    }
    using Align = TextTable::Align;
    const std::uint64_t requests = counters.hits + counters.misses;
    std::cout << "cache directory  " << disk_cache->config().root.string() << "\n";
    TextTable table({Align::left, Align::right, Align::left});
    table.add_row({"hits", std::to_string(counters.hits), percent(counters.hits, requests)});
    table.add_row({"misses", std::to_string(counters.misses), percent(counters.misses, requests)});
    table.add_row({"compiles", std::to_string(counters.compiles), ""});
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s", counters.compile_seconds);
    table.add_row({"compile time", seconds, ""});
    table.add_row({"corrupt entries removed", std::to_string(counters.corrupt_entries), ""});
    table.add_row({"rejected by the loader", std::to_string(counters.rejected_entries), ""});
    table.add_row({"evictions", std::to_string(counters.evictions), ""});
    table.add_row({"lock waits", std::to_string(counters.lock_waits), ""});
    table.add_row({"lock timeouts", std::to_string(counters.lock_timeouts), ""});
    table.add_row({"failed publishes", std::to_string(counters.publish_failures), ""});
    const std::uint64_t remote_requests = counters.remote_hits + counters.remote_misses;
    table.add_row(
        {"remote hits", std::to_string(counters.remote_hits), percent(counters.remote_hits, remote_requests)});
    table.add_row(
        {"remote misses", std::to_string(counters.remote_misses), percent(counters.remote_misses, remote_requests)});
    table.add_row({"remote errors", std::to_string(counters.remote_errors), "failed or timed out"});
    table.add_row({"remote entries rejected", std::to_string(counters.remote_rejected),
                   "damaged, unsigned, wrongly signed or not for the key"});
    table.add_row({"remote read", format_bytes(counters.remote_bytes_read), ""});
    table.add_row({"remote written", format_bytes(counters.remote_bytes_written), ""});
    table.add_row({"remote lock waits", std::to_string(counters.remote_lock_waits), ""});
    table.add_row({"remote lock timeouts", std::to_string(counters.remote_lock_timeouts), ""});
    table.add_row({"entries", std::to_string(total.entries), ""});
    table.add_row(
        {"size", format_bytes(total.bytes) + " / " + format_bytes(max_bytes), percent(total.bytes, max_bytes)});
    table.add_row({"failure records", std::to_string(total.failure_records), "variants the library skips"});
    for (const auto& [arch, usage] : per_arch)
        table.add_row({"  " + arch, std::to_string(usage.entries),
                       format_bytes(usage.bytes) +
                           (usage.failure_records ? ", " + std::to_string(usage.failure_records) + " failed" : "")});
    table.print(std::cout);
    return exit_success;
}

}  // namespace

Command add_stats_command(CLI::App& app) {
    auto options = std::make_shared<StatsOptions>();
    auto* stats = app.add_subcommand(
        "stats", "show the cache's counters, size against its limit, entries per arch and failure records");
    stats->add_flag("-z,--zero", options->zero, "zero the counters first (entries are kept)");
    add_common_options(*stats, options->common);
    return {stats, [options] { return run_stats(*options, options->common); }};
}

}  // namespace fajit::cli
