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

// Calls visit(arch, shard directory) for each shard directory of the wanted arch(es).
template <typename Visitor>
void for_each_shard(const Layout& layout, const std::optional<std::string>& arch, Visitor&& visit) {
    std::error_code error;
    for (const auto& arch_directory : fs::directory_iterator(layout.versioned_root(), error)) {
        if (!arch_directory.is_directory(error)) continue;
        const auto arch_name = unescape_arch(arch_directory.path().filename().string());
        if (!arch_name || (arch && *arch != *arch_name)) continue;
        std::error_code shard_error;
        for (const auto& shard : fs::directory_iterator(arch_directory.path(), shard_error)) {
            if (shard.is_directory(shard_error) && is_shard_name(shard.path().filename().string())) {
                visit(*arch_name, shard.path());
            }
        }
    }
}

}  // namespace

std::vector<StoredEntry> scan_entries(const Layout& layout, const std::optional<std::string>& arch) {
    std::vector<StoredEntry> entries;
    for_each_shard(layout, arch, [&](const std::string& arch_name, const fs::path& shard) {
        std::error_code error;
        for (const auto& file : fs::directory_iterator(shard, error)) {
            const std::string name = file.path().filename().string();
            const auto key = Key::from_hex(name);
            // Lowercase only: the exact name hex() gives, and in the shard it belongs to.
            if (!key || key->hex() != name || !name.starts_with(shard.filename().string())) continue;
            std::error_code stat_error;
            if (!file.is_regular_file(stat_error)) continue;
            const auto size = file.file_size(stat_error);
            const auto modified = file.last_write_time(stat_error);
            if (stat_error) continue;  // removed meanwhile
            entries.push_back(StoredEntry{arch_name, *key, file.path(), size, modified});
        }
    });
    return entries;
}

std::vector<fs::path> scan_leftovers_in(const fs::path& shard_directory, fs::file_time_type cutoff) {
    std::vector<fs::path> leftovers;
    std::error_code error;
    for (const auto& file : fs::directory_iterator(shard_directory, error)) {
        if (!is_leftover_name(file.path().filename().string())) continue;
        std::error_code stat_error;
        const auto modified = file.last_write_time(stat_error);
        if (!stat_error && modified < cutoff) leftovers.push_back(file.path());
    }
    return leftovers;
}

std::vector<fs::path> scan_leftovers(const Layout& layout, fs::file_time_type cutoff) {
    std::vector<fs::path> leftovers;
    for_each_shard(layout, std::nullopt, [&](const std::string&, const fs::path& shard) {
        auto found = scan_leftovers_in(shard, cutoff);
        leftovers.insert(leftovers.end(), found.begin(), found.end());
    });
    return leftovers;
}

}  // namespace fajit::cache
