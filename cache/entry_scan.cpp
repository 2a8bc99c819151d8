#include "cache/entry_scan.hpp"

#include <string_view>
#include <system_error>

namespace fajit::cache {

namespace {

namespace fs = std::filesystem;

bool is_lowercase_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_shard_name(std::string_view name) {
    return name.size() == 2 && is_lowercase_hex(name[0]) && is_lowercase_hex(name[1]);
}

bool is_leftover_name(std::string_view name) { return is_temp_file_name(name) || name.ends_with(".lock"); }

// Calls visit(arch, arch directory) for each arch directory of the wanted arch(es).
template <typename Visitor>
void for_each_arch(const Layout& layout, const std::optional<std::string>& arch, Visitor&& visit) {
    std::error_code error;
    for (const auto& arch_directory : fs::directory_iterator(layout.versioned_root(), error)) {
        if (!arch_directory.is_directory(error)) continue;
        const auto arch_name = unescape_arch(arch_directory.path().filename().string());
        if (!arch_name || (arch && *arch != *arch_name)) continue;
        visit(*arch_name, arch_directory.path());
    }
}

// Calls visit(arch, shard directory) for each shard directory of the wanted arch(es).
template <typename Visitor>
void for_each_shard(const Layout& layout, const std::optional<std::string>& arch, Visitor&& visit) {
    for_each_arch(layout, arch, [&](const std::string& arch_name, const fs::path& arch_directory) {
        std::error_code error;
        for (const auto& shard : fs::directory_iterator(arch_directory, error)) {
            if (shard.is_directory(error) && is_shard_name(shard.path().filename().string())) {
                visit(arch_name, shard.path());
            }
        }
    });
}

// Adds the regular files of `directory` named exactly as Key::hex() names a key, and (for
// shards) starting with `required_prefix`.
void add_keyed_files(const std::string& arch_name, const fs::path& directory, std::string_view required_prefix,
                     std::vector<StoredEntry>& found) {
    std::error_code error;
    for (const auto& file : fs::directory_iterator(directory, error)) {
        const std::string name = file.path().filename().string();
        const auto key = Key::from_hex(name);
        // Lowercase only: the exact name hex() gives.
        if (!key || key->hex() != name || !name.starts_with(required_prefix)) continue;
        std::error_code stat_error;
        if (!file.is_regular_file(stat_error)) continue;
        const auto size = file.file_size(stat_error);
        const auto modified = file.last_write_time(stat_error);
        if (stat_error) continue;  // removed meanwhile
        found.push_back(StoredEntry{arch_name, *key, file.path(), size, modified});
    }
}

}  // namespace

std::vector<StoredEntry> scan_entries(const Layout& layout, const std::optional<std::string>& arch) {
    std::vector<StoredEntry> entries;
    for_each_shard(layout, arch, [&](const std::string& arch_name, const fs::path& shard) {
        // An entry lives in the shard its key's first two digits name.
        add_keyed_files(arch_name, shard, shard.filename().string(), entries);
    });
    return entries;
}

std::vector<StoredEntry> scan_failure_records(const Layout& layout, const std::optional<std::string>& arch) {
    std::vector<StoredEntry> records;
    for_each_arch(layout, arch, [&](const std::string& arch_name, const fs::path&) {
        add_keyed_files(arch_name, layout.failures_directory(arch_name), "", records);
    });
    return records;
}

std::vector<fs::path> scan_leftovers_in(const fs::path& directory, fs::file_time_type cutoff) {
    std::vector<fs::path> leftovers;
    std::error_code error;
    for (const auto& file : fs::directory_iterator(directory, error)) {
        if (!is_leftover_name(file.path().filename().string())) continue;
        std::error_code stat_error;
        // Files only: the versioned root also holds arch directories, whose names may end in ".lock".
        if (!file.is_regular_file(stat_error)) continue;
        const auto modified = file.last_write_time(stat_error);
        if (!stat_error && modified < cutoff) leftovers.push_back(file.path());
    }
    return leftovers;
}

std::vector<fs::path> scan_leftovers(const Layout& layout, fs::file_time_type cutoff) {
    std::vector<fs::path> leftovers;
    const auto add_from = [&](const fs::path& directory) {
        auto found = scan_leftovers_in(directory, cutoff);
        leftovers.insert(leftovers.end(), found.begin(), found.end());
    };
    // The root's own: the stats file's and the memo's temp files, and the stats file's lock.
    add_from(layout.versioned_root());
    for_each_shard(layout, std::nullopt, [&](const std::string&, const fs::path& shard) { add_from(shard); });
    for_each_arch(layout, std::nullopt, [&](const std::string& arch_name, const fs::path&) {
        add_from(layout.failures_directory(arch_name));
    });
    return leftovers;
}

}  // namespace fajit::cache
