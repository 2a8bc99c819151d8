// fa-jit ls: what the cache holds, entry by entry.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common_options.hpp"
#include "exit_codes.hpp"
#include "human_units.hpp"
#include "text_table.hpp"

namespace fajit::cli {
namespace {

struct LsOptions {
    CommonOptions common;
    std::vector<std::string> archs;
    std::vector<std::string> families;
};

// Metadata is what the library wrote with the entry; a damaged header shows as "?".
std::string metadata_text(const nlohmann::json& metadata, const char* field) {
    if (!metadata.is_object() || !metadata.contains(field) || !metadata[field].is_string()) return "?";
    return metadata[field].get<std::string>();
}

bool selected(const std::vector<std::string>& wanted, const std::string& value) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), value) != wanted.end();
}

int run_ls(const LsOptions& options, const CommonOptions& common) {
    const auto disk_cache = open_disk_cache(resolve_options(common));
    auto entries = disk_cache->list();
    std::erase_if(entries, [&](const cache::EntryInfo& entry) {
        return !selected(options.archs, entry.arch) ||
               !selected(options.families, metadata_text(entry.metadata, "family"));
    });
    std::sort(entries.begin(), entries.end(), [](const cache::EntryInfo& a, const cache::EntryInfo& b) {
        return std::pair(a.arch, metadata_text(a.metadata, "spec")) <
               std::pair(b.arch, metadata_text(b.metadata, "spec"));
    });

    const auto now = std::filesystem::file_time_type::clock::now();
    const auto age_of = [&](const cache::EntryInfo& entry) {
        return std::chrono::duration_cast<std::chrono::seconds>(now - entry.modified);
    };
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& entry : entries) {
            const auto used = std::chrono::file_clock::to_sys(entry.modified);
            list.push_back(
                {{"arch", entry.arch},
                 {"family", metadata_text(entry.metadata, "family")},
                 {"spec", metadata_text(entry.metadata, "spec")},
                 {"key", entry.key.hex()},
                 {"size", entry.size},
                 {"last_used", std::chrono::duration_cast<std::chrono::seconds>(used.time_since_epoch()).count()},
                 {"age_seconds", age_of(entry).count()},
                 {"path", entry.path.string()}});
        }
        std::cout << list.dump(2) << "\n";
        return exit_success;
    }
    using Align = TextTable::Align;
    TextTable table({Align::left, Align::left, Align::right, Align::right, Align::left});
    table.add_row({"ARCH", "FAMILY", "SIZE", "AGE", "SPEC"});
    std::uint64_t total_bytes = 0;
    for (const auto& entry : entries) {
        table.add_row({entry.arch, metadata_text(entry.metadata, "family"), format_bytes(entry.size),
                       format_age(age_of(entry)), metadata_text(entry.metadata, "spec")});
        total_bytes += entry.size;
    }
    table.print(std::cout);
    std::cout << entries.size() << (entries.size() == 1 ? " entry, " : " entries, ") << format_bytes(total_bytes)
              << "\n";
    return exit_success;
}

}  // namespace

Command add_ls_command(CLI::App& app) {
    auto options = std::make_shared<LsOptions>();
    auto* ls = app.add_subcommand("ls", "list cached kernels: arch, family, size, age (since last use) and spec");
    ls->add_option("--arch", options->archs, "only these archs (full names; repeatable or comma-separated)")
        ->delimiter(',');
    ls->add_option("--family", options->families, "only these families (repeatable or comma-separated)")
        ->delimiter(',');
    add_common_options(*ls, options->common);
    return {ls, [options] { return run_ls(*options, options->common); }};
}

}  // namespace fajit::cli
