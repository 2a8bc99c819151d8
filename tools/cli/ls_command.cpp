// fa-jit ls: what the cache holds, entry by entry, and the variants recorded as failed.
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

// Sorted by arch, then spec, leaving out what --arch and --family do not select.
std::vector<cache::EntryInfo> selected_infos(std::vector<cache::EntryInfo> infos, const LsOptions& options) {
    std::erase_if(infos, [&](const cache::EntryInfo& info) {
        return !selected(options.archs, info.arch) ||
               !selected(options.families, metadata_text(info.metadata, "family"));
    });
    std::sort(infos.begin(), infos.end(), [](const cache::EntryInfo& a, const cache::EntryInfo& b) {
        return std::pair(a.arch, metadata_text(a.metadata, "spec")) <
               std::pair(b.arch, metadata_text(b.metadata, "spec"));
    });
    return infos;
}

std::chrono::seconds age_of(const cache::EntryInfo& info) {
    return std::chrono::duration_cast<std::chrono::seconds>(std::filesystem::file_time_type::clock::now() -
                                                            info.modified);
}

nlohmann::json json_of(const cache::EntryInfo& info, std::string_view kind) {
    const auto used = std::chrono::file_clock::to_sys(info.modified);
    nlohmann::json item = {
        {"kind", kind},
        {"arch", info.arch},
        {"family", metadata_text(info.metadata, "family")},
        {"spec", metadata_text(info.metadata, "spec")},
        {"key", info.key.hex()},
        {"size", info.size},
        {"last_used", std::chrono::duration_cast<std::chrono::seconds>(used.time_since_epoch()).count()},
        {"age_seconds", age_of(info).count()},
        {"path", info.path.string()}};
    if (kind == "failure") item["error"] = metadata_text(info.metadata, "summary");
    return item;
}

void print_entries(const std::vector<cache::EntryInfo>& entries) {
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
}

// Only when there are any: most caches have none, and their listing stays as it was.
void print_failures(const std::vector<cache::EntryInfo>& failures) {
    if (failures.empty()) return;
    using Align = TextTable::Align;
    TextTable table({Align::left, Align::left, Align::right, Align::left});
    table.add_row({"ARCH", "FAMILY", "AGE", "FAILED SPEC"});
    for (const auto& failure : failures)
        table.add_row({failure.arch, metadata_text(failure.metadata, "family"), format_age(age_of(failure)),
                       metadata_text(failure.metadata, "spec")});
    std::cout << "\n";
    table.print(std::cout);
    std::cout << failures.size() << (failures.size() == 1 ? " failure record" : " failure records")
              << ": the library runs the fallback for these until its compiler or version changes "
                 "(fa-jit clear forgets them)\n";
}

int run_ls(const LsOptions& options, const CommonOptions& common) {
    const auto disk_cache = open_existing_disk_cache(resolve_options(common));
    const auto entries = selected_infos(disk_cache->list(), options);
    const auto failures = selected_infos(disk_cache->list_failures(), options);
    if (common.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& entry : entries) list.push_back(json_of(entry, "entry"));
        for (const auto& failure : failures) list.push_back(json_of(failure, "failure"));
        std::cout << list.dump(2) << "\n";
        return exit_success;
    }
    print_entries(entries);
    print_failures(failures);
    return exit_success;
}

}  // namespace

Command add_ls_command(CLI::App& app) {
    auto options = std::make_shared<LsOptions>();
    auto* ls = app.add_subcommand(
        "ls", "list cached kernels: arch, family, size, age (since last use) and spec; then recorded failures");
    ls->add_option("--arch", options->archs, "only these archs (full names; repeatable or comma-separated)")
        ->delimiter(',');
    ls->add_option("--family", options->families, "only these families (repeatable or comma-separated)")
        ->delimiter(',');
    add_common_options(*ls, options->common);
    return {ls, [options] { return run_ls(*options, options->common); }};
}

}  // namespace fajit::cli
