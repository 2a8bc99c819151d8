#include "cache/disk_cache.hpp"

#include <exception>
#include <span>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "cache/atomic_file.hpp"
#include "cache/file_reading.hpp"
#include "cache/lock_file.hpp"
#include "cache/lru.hpp"

namespace fajit::cache {

namespace {

namespace fs = std::filesystem;

constexpr std::chrono::hours leftover_age{1};

// What went wrong in a failed publish, as an error code callers can classify.
std::error_code error_code_of(const std::exception& error) {
    if (const auto* system = dynamic_cast<const std::system_error*>(&error)) return system->code();
    if (dynamic_cast<const std::length_error*>(&error)) return std::make_error_code(std::errc::file_too_large);
    return std::make_error_code(std::errc::invalid_argument);  // anything else, such as running out of memory
}

void mark_recently_used(const fs::path& path) {
    // Best effort: a read-only cache still serves hits, it just cannot keep LRU order.
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

}  // namespace

DiskCache::DiskCache(DiskCacheConfig config)
    : config_(std::move(config)),
      layout_(config_.root),
      logger_(config_.logger ? config_.logger : spdlog::default_logger()),
      creator_pid_(::getpid()) {
    if (config_.remote && config_.enabled)
        remote_ = std::make_unique<RemoteTier>(*config_.remote, logger_,
                                               [this](const std::function<void(CacheStats&)>& event) { count(event); });
    flush_at_exit(this);
}

DiskCache::~DiskCache() {
    forget_at_exit(this);
    stop_flushing();
}

fs::path DiskCache::entry_path(std::string_view arch, const Key& key) const { return layout_.entry_path(arch, key); }

std::optional<Entry> DiskCache::load(std::string_view arch, const Key& key) {
    if (!config_.enabled) return std::nullopt;
    std::optional<Entry> entry;
    if (read_entry(arch, key, entry) == Lookup::found) {
        count([](CacheStats& stats) { ++stats.hits; });
    } else {
        count([](CacheStats& stats) { ++stats.misses; });
    }
    return entry;
}

std::optional<std::vector<std::byte>> DiskCache::read_stored(const fs::path& path, std::string_view what) {
    std::error_code error;
    auto bytes = read_file(path, error, config_.max_bytes);
    if (error == FileRefusal::too_large) {
        discard_corrupt(path, what, "larger than max_bytes (" + std::to_string(config_.max_bytes) + ")");
    } else if (!bytes && error != std::errc::no_such_file_or_directory && error != std::errc::not_a_directory) {
        logger_->debug("fa-jit cache: cannot read {}: {}", path.string(), error.message());
    }
    return bytes;
}

void DiskCache::discard_corrupt(const fs::path& path, std::string_view what, const std::string& why) {
    logger_->warn("fa-jit cache: removing corrupt {} {}: {}", what, path.string(), why);
    std::error_code ignored;
    fs::remove(path, ignored);
    count([](CacheStats& stats) { ++stats.corrupt_entries; });
}

DiskCache::Lookup DiskCache::read_entry(std::string_view arch, const Key& key, std::optional<Entry>& entry) {
    const fs::path path = layout_.entry_path(arch, key);
    const auto bytes = read_stored(path, "entry");
    if (!bytes) return Lookup::absent;
    DecodeResult decoded = decode_entry(*bytes);
    if (!decoded.entry) {
        discard_corrupt(path, "entry", decoded.error);
        return Lookup::corrupt;
    }
    mark_recently_used(path);
    entry = std::move(decoded.entry);
    return Lookup::found;
}

bool DiskCache::publish(std::string_view arch, const Key& key, const Entry& entry) {
    if (!config_.enabled) return false;
    const fs::path path = layout_.entry_path(arch, key);
    try {
        const std::vector<std::byte> bytes = encode_entry(entry);
        if (bytes.size() > config_.max_bytes) {
            throw std::length_error("entry of " + std::to_string(bytes.size()) + " bytes exceeds max_bytes " +
                                    std::to_string(config_.max_bytes));
        }
        fs::create_directories(path.parent_path());
        for (const auto& leftover :
             scan_leftovers_in(path.parent_path(), fs::file_time_type::clock::now() - leftover_age)) {
            std::error_code ignored;
            fs::remove(leftover, ignored);
        }
        {
            std::lock_guard room(room_mutex_);
            make_room(bytes.size(), path);
            AtomicFile file(path);
            file.write(bytes);
            file.commit();
        }
        std::lock_guard lock(store_errors_mutex_);
        store_errors_.erase(flight_id(arch, key));
        return true;
    } catch (const std::exception& error) {
        {
            std::lock_guard lock(store_errors_mutex_);
            store_errors_[flight_id(arch, key)] = error_code_of(error);
        }
        count([](CacheStats& stats) { ++stats.publish_failures; });
        warn_storage_problem_once("cannot store " + path.string() + ": " + error.what());
        return false;
    }
}

std::error_code DiskCache::store_error(std::string_view arch, const Key& key) const {
    std::lock_guard lock(store_errors_mutex_);
    const auto found = store_errors_.find(flight_id(arch, key));
    return found == store_errors_.end() ? std::error_code{} : found->second;
}

bool DiskCache::holds(std::string_view arch, const Key& key) const {
    if (!config_.enabled) return false;
    std::error_code error;
    const auto bytes = read_file(layout_.entry_path(arch, key), error, config_.max_bytes);
    return bytes && decode_entry(*bytes).entry.has_value();
}

void DiskCache::make_room(std::uint64_t incoming_bytes, const fs::path& replaced) {
    std::vector<StoredEntry> others = scan_entries(layout_);
    std::erase_if(others, [&](const StoredEntry& entry) { return entry.path == replaced; });
    evict_entries(least_recently_used_beyond(std::move(others), config_.max_bytes - incoming_bytes));
}

PruneResult DiskCache::evict_entries(const std::vector<StoredEntry>& victims) {
    PruneResult removed;
    for (const auto& victim : victims) {
        std::error_code error;
        // Another process may have removed it first; only count our own removals.
        if (!fs::remove(victim.path, error)) continue;
        ++removed.removed_entries;
        removed.removed_bytes += victim.size;
    }
    if (removed.removed_entries > 0) count([&](CacheStats& stats) { stats.evictions += removed.removed_entries; });
    return removed;
}

Entry DiskCache::get_or_create(std::string_view arch, const Key& key, const std::function<Entry()>& produce,
                               const nlohmann::json& required_metadata) {
    if (!config_.enabled) {
        count([](CacheStats& stats) { ++stats.misses; });
        return timed_produce(produce);
    }
    SingleFlight::Result result = in_process_flights_.run(
        flight_id(arch, key), [&] { return produce_through_disk(arch, key, produce, required_metadata); });
    if (result.shared) count([](CacheStats& stats) { ++stats.hits; });
    return std::move(result.entry);
}

std::string DiskCache::flight_id(std::string_view arch, const Key& key) {
    std::string id(arch);
    id += '\n';
    id += key.hex();
    return id;
}

Entry DiskCache::produce_through_disk(std::string_view arch, const Key& key, const std::function<Entry()>& produce,
                                      const nlohmann::json& required_metadata) {
    std::optional<Entry> stored;
    if (read_entry(arch, key, stored) == Lookup::found) {
        count([](CacheStats& stats) { ++stats.hits; });
        return std::move(*stored);
    }

    const fs::path lock_path = layout_.lock_path(arch, key);
    std::error_code ignored;
    fs::create_directories(lock_path.parent_path(), ignored);
    LockFile lock(lock_path, config_.lock_timeout);
    const auto outcome = lock.acquire(config_.lock_wait_limit);
    if (outcome == LockFile::Outcome::acquired_after_waiting || outcome == LockFile::Outcome::timed_out) {
        count([&](CacheStats& stats) {
            ++stats.lock_waits;
            if (outcome == LockFile::Outcome::timed_out) ++stats.lock_timeouts;
        });
    }
    if (outcome == LockFile::Outcome::timed_out) {
        logger_->warn("fa-jit cache: gave up waiting for {} after {} s; compiling here too", lock_path.string(),
                      std::chrono::duration<double>(config_.lock_wait_limit).count());
    }
    // Whoever held the lock (or finished just before we took it) has probably published.
    if (outcome != LockFile::Outcome::unavailable && read_entry(arch, key, stored) == Lookup::found) {
        count([](CacheStats& stats) { ++stats.hits; });
        return std::move(*stored);
    }

    count([](CacheStats& stats) { ++stats.misses; });
    // Only one process per machine gets here for a key (the lock above), so the store sees
    // one request per machine.
    const auto compile = [&] { return timed_produce(produce); };
    Entry entry;
    if (!remote_) {
        entry = compile();
    } else if (was_evicted(arch, key)) {
        // The store's copy may be the entry that was unusable: produce, and replace it.
        entry = compile();
        remote_->push(arch, key, entry);
    } else {
        entry = remote_->fetch_or_produce(arch, key, required_metadata, compile);
    }
    publish(arch, key, entry);
    return entry;
}

bool DiskCache::push_to_remote(std::string_view arch, const Key& key) {
    if (!remote_) return false;
    std::optional<Entry> stored;
    if (read_entry(arch, key, stored) != Lookup::found) return false;
    return remote_->push(arch, key, *stored);
}

Entry DiskCache::timed_produce(const std::function<Entry()>& produce) {
    const auto start = std::chrono::steady_clock::now();
    Entry entry = produce();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    count([&](CacheStats& stats) {
        ++stats.compiles;
        stats.compile_seconds += took.count();
    });
    return entry;
}

bool DiskCache::was_evicted(std::string_view arch, const Key& key) {
    std::lock_guard lock(evicted_mutex_);
    return evicted_.erase(flight_id(arch, key)) > 0;
}

void DiskCache::evict(std::string_view arch, const Key& key) {
    if (!config_.enabled) return;
    if (remote_) {
        std::lock_guard lock(evicted_mutex_);
        evicted_.insert(flight_id(arch, key));
    }
    const fs::path path = layout_.entry_path(arch, key);
    std::error_code error;
    if (fs::remove(path, error)) {
        logger_->info("fa-jit cache: evicted rejected entry {}", path.string());
        count([](CacheStats& stats) { ++stats.rejected_entries; });
    }
}

void DiskCache::warn_storage_problem_once(const std::string& message) {
    if (storage_problem_reported_.exchange(true)) {
        logger_->debug("fa-jit cache: {}", message);
    } else {
        logger_->warn(
            "fa-jit cache: {}; compiled kernels are kept in memory only (further problems are logged at debug level)",
            message);
    }
}

}  // namespace fajit::cache
