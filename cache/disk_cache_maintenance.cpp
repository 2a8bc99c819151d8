// DiskCache's listing and maintenance operations (what the CLI's ls, verify, prune and clear
// run); the request path lives in disk_cache.cpp and disk_cache_failures.cpp.
#include <system_error>

#include "cache/disk_cache.hpp"
#include "cache/failure_record.hpp"
#include "cache/file_reading.hpp"
#include "cache/lru.hpp"

namespace fajit::cache {

namespace {

namespace fs = std::filesystem;

nlohmann::json read_metadata(const fs::path& path) {
    std::error_code error;
    const auto preamble = read_file_prefix(path, error, entry_preamble_size);
    if (!preamble) return nullptr;
    const auto prefix_size = metadata_prefix_size(*preamble);
    if (!prefix_size) return nullptr;
    const auto prefix = read_file_prefix(path, error, *prefix_size);
    if (!prefix) return nullptr;
    return peek_metadata(*prefix).value_or(nullptr);
}

std::vector<EntryInfo> infos_of(std::vector<StoredEntry> stored_files) {
    std::vector<EntryInfo> infos;
    for (auto& stored : stored_files) {
        nlohmann::json metadata = read_metadata(stored.path);
        infos.push_back(EntryInfo{std::move(stored.arch), stored.key, std::move(stored.path), stored.size,
                                  stored.modified, std::move(metadata)});
    }
    return infos;
}

}  // namespace

std::vector<EntryInfo> DiskCache::list() const {
    if (!config_.enabled) return {};
    return infos_of(scan_entries(layout_));
}

std::vector<EntryInfo> DiskCache::list_failures() const {
    if (!config_.enabled) return {};
    return infos_of(scan_failure_records(layout_));
}

std::vector<BadEntry> DiskCache::verify(bool remove_bad) {
    if (!config_.enabled) return {};
    return verify_files(scan_entries(layout_), remove_bad,
                        [](std::span<const std::byte> bytes) { return decode_entry(bytes).error; });
}

std::vector<BadEntry> DiskCache::verify_failures(bool remove_bad) {
    if (!config_.enabled) return {};
    return verify_files(scan_failure_records(layout_), remove_bad,
                        [](std::span<const std::byte> bytes) { return decode_failure_record(bytes).error; });
}

std::vector<BadEntry> DiskCache::verify_files(std::vector<StoredEntry> stored_files, bool remove_bad,
                                              const std::function<std::string(std::span<const std::byte>)>& check) {
    std::vector<BadEntry> bad;
    for (auto& stored : stored_files) {
        std::error_code error;
        const auto bytes = read_file(stored.path, error, config_.max_bytes);
        if (!bytes && error == std::errc::no_such_file_or_directory) continue;  // removed meanwhile
        std::string problem = bytes ? check(*bytes) : "cannot read: " + error.message();
        if (problem.empty()) continue;
        if (remove_bad && fs::remove(stored.path, error)) count([](CacheStats& stats) { ++stats.corrupt_entries; });
        bad.push_back(BadEntry{std::move(stored.arch), stored.key, std::move(stored.path), std::move(problem)});
    }
    return bad;
}

PruneResult DiskCache::prune(const PruneOptions& options) {
    if (!config_.enabled) return {};
    remove_leftovers();

    std::vector<StoredEntry> candidates = scan_entries(layout_, options.arch);
    std::vector<StoredEntry> victims;
    if (!options.older_than && !options.max_bytes) {
        victims = std::move(candidates);
    }
    if (options.older_than) {
        const auto cutoff = fs::file_time_type::clock::now() - *options.older_than;
        std::erase_if(candidates, [&](StoredEntry& entry) {
            if (entry.modified >= cutoff) return false;
            victims.push_back(std::move(entry));
            return true;
        });
    }
    if (options.max_bytes) {
        for (auto& entry : least_recently_used_beyond(std::move(candidates), *options.max_bytes)) {
            victims.push_back(std::move(entry));
        }
    }
    return evict_entries(victims);
}

PruneResult DiskCache::clear(const std::optional<std::string>& arch) {
    PruneResult result;
    if (!config_.enabled) return result;
    for (const auto& stored : scan_entries(layout_, arch)) {
        ++result.removed_entries;
        result.removed_bytes += stored.size;
    }
    result.removed_failure_records = scan_failure_records(layout_, arch).size();
    if (arch) {
        std::error_code error;
        fs::remove_all(layout_.arch_directory(*arch), error);
        return result;
    }
    std::error_code error;
    for (const auto& child : fs::directory_iterator(layout_.versioned_root(), error)) {
        // Arch directories only: the stats file (and its lock) live beside them and survive a clear.
        if (child.is_directory(error)) fs::remove_all(child.path(), error);
    }
    return result;
}

std::size_t DiskCache::remove_leftovers(std::chrono::seconds older_than) {
    if (!config_.enabled) return 0;
    std::size_t removed = 0;
    for (const auto& leftover : scan_leftovers(layout_, fs::file_time_type::clock::now() - older_than)) {
        std::error_code error;
        if (fs::remove(leftover, error)) ++removed;
    }
    return removed;
}

}  // namespace fajit::cache
