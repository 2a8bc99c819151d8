#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <nlohmann/json.hpp>

#include "cache/entry.hpp"
#include "cache/entry_scan.hpp"
#include "cache/key.hpp"
#include "cache/layout.hpp"
#include "cache/remote_tier.hpp"
#include "cache/single_flight.hpp"
#include "cache/stats.hpp"

namespace spdlog {
class logger;
}

namespace fajit::cache {

struct DiskCacheConfig {
    std::filesystem::path root;
    std::uint64_t max_bytes = 2ull << 30;  // total size of entries, enforced on publish
    bool enabled = true;                   // false: nothing touches disk, get_or_create just produces
    // A producer's lock is refreshed every few seconds while it works, however long; one not
    // refreshed for lock_timeout (its owner hangs as a whole, or vanished on another host) is
    // broken by a waiter, as is at once the lock of a dead process on this host.
    std::chrono::milliseconds lock_timeout{std::chrono::seconds(60)};
    // How long a waiter waits for a live producer before producing for itself (a compiler
    // that hangs in a process that still refreshes its lock).
    std::chrono::milliseconds lock_wait_limit{std::chrono::minutes(10)};
    std::shared_ptr<spdlog::logger> logger{};  // null: spdlog's default logger
    // The tier behind this one that machines share (remote_tier.hpp); none: this disk only.
    std::optional<RemoteTierConfig> remote{};
};

// What list() reports about one entry, and list_failures() about one failure record.
struct EntryInfo {
    std::string arch;
    Key key;
    std::filesystem::path path;
    std::uint64_t size = 0;
    std::filesystem::file_time_type modified;  // last publish or hit
    nlohmann::json metadata;                   // null if the entry is too damaged to show it
};

// What verify() found wrong with one entry, or verify_failures() with one failure record.
struct BadEntry {
    std::string arch;
    Key key;
    std::filesystem::path path;
    std::string error;
};

// Selects entries to remove: those of `arch` (all archs if unset), then of those the ones
// older than `older_than`, then least recently used ones until the rest fit in `max_bytes`.
// With neither bound set, every selected entry goes.
struct PruneOptions {
    std::optional<std::uint64_t> max_bytes{};
    std::optional<std::chrono::seconds> older_than{};
    std::optional<std::string> arch{};
};

struct PruneResult {
    std::uint64_t removed_entries = 0;
    std::uint64_t removed_bytes = 0;
    std::uint64_t removed_failure_records = 0;  // only clear() removes them
};

// The on-disk content-addressed store of compiled code objects, shared by threads and
// processes. Safe to call from several threads. Storage problems never throw out of it:
// they are logged once and the cache degrades to producing every time.
class DiskCache {
public:
    explicit DiskCache(DiskCacheConfig config);
    ~DiskCache();  // flushes stats
    DiskCache(const DiskCache&) = delete;
    DiskCache& operator=(const DiskCache&) = delete;

    // A damaged entry is logged, removed, counted and reported as a miss; it is never returned.
    // A hit marks the entry as recently used.
    std::optional<Entry> load(std::string_view arch, const Key& key);
    // Atomic: readers see the whole entry or none. Evicts least recently used entries to stay
    // within max_bytes. False (warned once) if the entry cannot be stored; store_error says why.
    bool publish(std::string_view arch, const Key& key, const Entry& entry);
    // The stored entry, or produce()'s result, stored for next time. Concurrent requests for one
    // key, from threads or processes, run produce once; a process that waits longer than
    // lock_wait_limit produces for itself. Exceptions from produce propagate (to all waiting threads).
    // With a remote tier, a local miss asks it before producing, and what is produced is stored
    // there too; a fetched entry is used only if its metadata has every field of
    // required_metadata with the same value (its producer's compiler, arch, ...).
    Entry get_or_create(std::string_view arch, const Key& key, const std::function<Entry()>& produce,
                        const nlohmann::json& required_metadata = nlohmann::json::object());
    // Copies a stored entry to the remote tier; false if there is no sound local entry, no
    // remote tier, or the store failed.
    bool push_to_remote(std::string_view arch, const Key& key);
    // Removes an entry that turned out unusable, e.g. a code object the GPU loader refused.
    // With a remote tier, this instance's next request for key produces afresh instead of
    // fetching the store's copy (where the unusable entry may have come from), and what it
    // produces replaces that copy.
    void evict(std::string_view arch, const Key& key);

    // Why this instance's last attempt to store key failed (no space, read-only, not a
    // directory, std::errc::file_too_large for an entry beyond max_bytes, ...); empty if it
    // has not failed, or was stored since. For callers that must account for what they stored.
    std::error_code store_error(std::string_view arch, const Key& key) const;
    // True if a sound entry for key is stored. Reads and checks it, but counts no hit and does
    // not mark it used: a check, not a request.
    bool holds(std::string_view arch, const Key& key) const;

    // Failure records (see failure_record.hpp): what a caller learned cannot be produced, kept
    // so later processes skip it. A damaged record is logged, removed, counted as a corrupt
    // entry and reported as absent.
    std::optional<nlohmann::json> find_failure(std::string_view arch, const Key& key);
    // Written as atomically and durably as an entry, but outside max_bytes: records are tiny
    // and few. False if it cannot be stored, warned once together with failed publishes.
    bool record_failure(std::string_view arch, const Key& key, const nlohmann::json& details);

    std::filesystem::path entry_path(std::string_view arch, const Key& key) const;
    std::filesystem::path failure_path(std::string_view arch, const Key& key) const;
    const DiskCacheConfig& config() const { return config_; }

    // What this instance did since it was created.
    CacheStats session_stats() const;
    // Totals over all processes: the persisted stats plus this instance's not yet flushed counts.
    CacheStats stats() const;
    // Counts are flushed to the stats file by a background thread about a second after they
    // are counted, on destruction, and at normal process exit; this flushes now.
    void flush_stats();
    void zero_stats();

    // Maintenance, for the command-line tool. On a disabled cache these see and change nothing.
    std::vector<EntryInfo> list() const;
    std::vector<EntryInfo> list_failures() const;  // metadata holds the details
    // Decode every entry, or every failure record; return the bad ones, removed (and counted
    // as corrupt) if asked.
    std::vector<BadEntry> verify(bool remove_bad);
    std::vector<BadEntry> verify_failures(bool remove_bad);
    // Also removes leftovers of killed writers (see remove_leftovers). Failure records stay.
    PruneResult prune(const PruneOptions& options);
    // Removes every entry, failure record and leftover of this format version, or of one arch;
    // stats are kept.
    PruneResult clear(const std::optional<std::string>& arch = std::nullopt);
    // Removes temp and lock files not touched for `older_than`, in shards, failures directories and
    // beside the stats file; returns how many.
    std::size_t remove_leftovers(std::chrono::seconds older_than = std::chrono::hours(1));

private:
    enum class Lookup { found, absent, corrupt };
    Lookup read_entry(std::string_view arch, const Key& key, std::optional<Entry>& entry);
    // A stored file's bytes; none when it is absent or unreadable (the latter logged), or larger
    // than max_bytes, which no entry of this cache can be: then it is removed as a corrupt `what`,
    // unread.
    std::optional<std::vector<std::byte>> read_stored(const std::filesystem::path& path, std::string_view what);
    // Removes a file that failed its checks, saying why, and counts it as corrupt.
    void discard_corrupt(const std::filesystem::path& path, std::string_view what, const std::string& why);
    // (arch, key) as one string: the single-flight id, and the key of store_errors_.
    static std::string flight_id(std::string_view arch, const Key& key);
    Entry produce_through_disk(std::string_view arch, const Key& key, const std::function<Entry()>& produce,
                               const nlohmann::json& required_metadata);
    Entry timed_produce(const std::function<Entry()>& produce);
    void make_room(std::uint64_t incoming_bytes, const std::filesystem::path& replaced);
    PruneResult evict_entries(const std::vector<StoredEntry>& victims);
    // check returns what is wrong with a file's bytes, empty if nothing.
    std::vector<BadEntry> verify_files(std::vector<StoredEntry> stored_files, bool remove_bad,
                                       const std::function<std::string(std::span<const std::byte>)>& check);

    // Counts an event in both the session and the unflushed delta, for the flusher thread.
    void count(const std::function<void(CacheStats&)>& event);
    void flush_periodically(std::stop_token stop);  // the flusher thread
    // Stops the flusher thread and flushes what is left: on destruction, and at exit.
    void stop_flushing();
    // Registers with the process's exit handler, which flushes caches that are never destroyed.
    static void flush_at_exit(DiskCache* cache);
    static void forget_at_exit(DiskCache* cache);
    void warn_storage_problem_once(const std::string& message);
    // Whether key was evicted since its last request; clears the mark.
    bool was_evicted(std::string_view arch, const Key& key);

    DiskCacheConfig config_;
    Layout layout_;
    std::shared_ptr<spdlog::logger> logger_;
    SingleFlight in_process_flights_;
    std::unique_ptr<RemoteTier> remote_;  // null without a remote tier

    mutable std::mutex stats_mutex_;
    CacheStats session_;
    CacheStats unflushed_;
    std::condition_variable_any counted_;  // with stats_mutex_: wakes the flusher thread
    std::mutex flush_mutex_;

    // Held by publish from the size scan in make_room until the new entry is renamed in: without
    // it, threads publishing at once each count only the entries already there, all see room
    // and together overshoot max_bytes. Another process can still overshoot by its own entry;
    // the next publish evicts back within the bound.
    std::mutex room_mutex_;

    std::atomic<bool> storage_problem_reported_{false};
    // By flight id; one per key whose publish failed, so it stays as small as the set of
    // variants a process uses.
    mutable std::mutex store_errors_mutex_;
    std::map<std::string, std::error_code> store_errors_;
    // Flight ids evicted as unusable whose next request must not fetch from the remote tier.
    std::mutex evicted_mutex_;
    std::set<std::string> evicted_;

    const pid_t creator_pid_;  // the process whose thread flusher_ is
    // Last, so it is the first member to go; stop_flushing() has joined it by then anyway.
    std::once_flag flusher_started_;
    std::jthread flusher_;
};

}  // namespace fajit::cache
