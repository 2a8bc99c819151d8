// fa-jit remote ls | stats | clear: the fleet's store (FAJIT_REMOTE_CACHE), as the local
// ls, stats and clear show the disk cache.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <memory>

#include "cache/remote_storage.hpp"
#include "cache/remote_tier.hpp"
#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "human_units.hpp"
#include "text_table.hpp"

namespace fajit::cli {
namespace {

struct RemoteOptions {
    CommonOptions ls, stats, clear;
    std::string arch;  // clear's
};

struct RemoteEntry {
    std::string arch;
    std::string key;
    std::uint64_t bytes = 0;
};

struct Store {
    std::string address;
    std::unique_ptr<cache::RemoteStorage> storage;
};

Store open_store(const fajit::Options& options) {
    if (options.remote_cache.empty())
        throw UsageError("no remote cache: set FAJIT_REMOTE_CACHE=redis://host:port/db (or unix:///path)");
    return {options.remote_cache,
            cache::connect_remote_storage(cache::parse_remote_address(options.remote_cache),
                                          {options.remote_connect_timeout, options.remote_operation_timeout})};
}

// The store's entries; values under fa-jit's prefix with a name it cannot produce are left out.
std::vector<RemoteEntry> list_entries(cache::RemoteStorage& storage) {
    std::vector<RemoteEntry> entries;
    for (const cache::RemoteValueInfo& value : storage.list(cache::remote_entry_prefix()))
        if (const auto parsed = cache::parse_remote_entry_name(value.name))
            entries.push_back({parsed->first, parsed->second.hex(), value.size});
    std::sort(entries.begin(), entries.end(), [](const RemoteEntry& a, const RemoteEntry& b) {
        return std::tie(a.arch, a.key) < std::tie(b.arch, b.key);
    });
    return entries;
}

int run_ls(const CommonOptions& common) {
    const Store store = open_store(resolve_options(common));
    const auto entries = list_entries(*store.storage);
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const RemoteEntry& entry : entries)
            list.push_back({{"arch", entry.arch}, {"key", entry.key}, {"bytes", entry.bytes}});
        std::cout << nlohmann::json{{"remote_cache", store.address}, {"entries", std::move(list)}}.dump(2) << "\n";
        return exit_success;
    }
    TextTable table({TextTable::Align::left, TextTable::Align::left, TextTable::Align::right});
    table.add_row({"ARCH", "KEY", "SIZE"});
    for (const RemoteEntry& entry : entries) table.add_row({entry.arch, entry.key, format_bytes(entry.bytes)});
    table.print(std::cout);
    return exit_success;
}

int run_stats(const CommonOptions& common) {
    const fajit::Options options = resolve_options(common);
    const Store store = open_store(options);
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> per_arch;  // entries, bytes
    std::uint64_t entries = 0, bytes = 0;
    for (const RemoteEntry& entry : list_entries(*store.storage)) {
        ++per_arch[entry.arch].first;
        per_arch[entry.arch].second += entry.bytes;
        ++entries;
        bytes += entry.bytes;
    }
    // What this machine's processes did with the store, from the local counters.
    const cache::CacheStats counters = open_disk_cache(options)->stats();
    if (common.json) {
        nlohmann::json archs = nlohmann::json::object();
        for (const auto& [arch, usage] : per_arch) archs[arch] = {{"entries", usage.first}, {"bytes", usage.second}};
        const nlohmann::json all = cache::to_json(counters);
        nlohmann::json remote_counters = nlohmann::json::object();
        for (const auto& [name, value] : all.items())
            if (name.starts_with("remote_")) remote_counters[name] = value;
        std::cout << nlohmann::json{{"remote_cache", store.address},
                                    {"entries", entries},
                                    {"bytes", bytes},
                                    {"per_arch", std::move(archs)},
                                    {"counters", std::move(remote_counters)}}
                         .dump(2)
                  << "\n";
        return exit_success;
    }
    std::cout << "remote cache  " << store.address << "\n";
    TextTable table({TextTable::Align::left, TextTable::Align::right, TextTable::Align::left});
    table.add_row({"entries", std::to_string(entries), format_bytes(bytes)});
    for (const auto& [arch, usage] : per_arch)
        table.add_row({"  " + arch, std::to_string(usage.first), format_bytes(usage.second)});
    table.print(std::cout);
    return exit_success;
}

int run_clear(const CommonOptions& common, const std::string& arch) {
    const Store store = open_store(resolve_options(common));
    std::vector<std::string> names;
    std::uint64_t bytes = 0;
    for (const RemoteEntry& entry : list_entries(*store.storage)) {
        if (!arch.empty() && entry.arch != arch) continue;
        names.push_back(cache::remote_entry_name(entry.arch, *cache::Key::from_hex(entry.key)));
        bytes += entry.bytes;
    }
    const std::uint64_t removed = store.storage->remove(names);
    if (common.json)
        std::cout << nlohmann::json{{"removed_entries", removed}}.dump(2) << "\n";
    else
        std::cout << "removed " << removed << " entries (" << format_bytes(bytes) << ") from " << store.address << "\n";
    return exit_success;
}

// The store failing is the operation failing (exit 2), not a usage error.
int reporting_store_errors(const std::function<int()>& run) {
    try {
        return run();
    } catch (const cache::RemoteError& error) {
        std::cerr << "fa-jit: remote cache: " << error.what() << "\n";
        return exit_failed;
    }
}

}  // namespace

Command add_remote_command(CLI::App& app) {
    auto options = std::make_shared<RemoteOptions>();
    auto* remote = app.add_subcommand("remote", "the fleet's remote cache (FAJIT_REMOTE_CACHE): ls, stats, clear");
    remote->require_subcommand(1);
    auto* ls = remote->add_subcommand("ls", "list the store's entries");
    add_common_options(*ls, options->ls);
    auto* stats =
        remote->add_subcommand("stats", "the store's entries and bytes per arch, and this machine's counters");
    add_common_options(*stats, options->stats);
    auto* clear = remote->add_subcommand("clear", "remove the store's entries");
    clear->add_option("--arch", options->arch, "only this arch's entries (full name)");
    add_common_options(*clear, options->clear);
    return {remote, [options, ls, stats, clear] {
                return reporting_store_errors([&] {
                    if (ls->parsed()) return run_ls(options->ls);
                    if (stats->parsed()) return run_stats(options->stats);
                    if (clear->parsed()) return run_clear(options->clear, options->arch);
                    return exit_usage;
                });
            }};
}

}  // namespace fajit::cli
