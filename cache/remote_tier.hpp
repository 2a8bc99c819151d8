#pragma once
// The remote tier behind the local disk cache: read-through on a local miss, write-back of
// what is produced, and one producer per key across every machine sharing the store (a lock
// with a TTL in the store, kept alive while producing). A store that fails or is slow never
// costs a caller more than one connect plus one operation timeout: the request goes on
// locally, and after repeated failures the tier is switched off for a back-off period.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cache/entry.hpp"
#include "cache/key.hpp"
#include "cache/remote_storage.hpp"
#include "cache/stats.hpp"

namespace spdlog {
class logger;
}

namespace fajit::cache {

struct RemoteTierConfig {
    std::shared_ptr<RemoteStorage> storage;
    // Non-empty: values are signed with it (HMAC-SHA256) and unsigned or wrongly signed ones refused.
    std::string signing_key;
    // A producer's lock lives this long unless refreshed; it is refreshed every third of it.
    std::chrono::milliseconds lock_ttl{std::chrono::seconds(30)};
    // How long a request waits for another machine's producer before producing for itself.
    std::chrono::milliseconds lock_wait_limit{std::chrono::minutes(10)};
    std::chrono::milliseconds poll_interval{50};  // how often a waiter looks for the value
    int failures_before_backoff = 3;              // consecutive failed operations
    std::chrono::milliseconds backoff{std::chrono::seconds(30)};
};

// The store's names: "fajit:v<format>:entry:<arch>:<key>" and "fajit:v<format>:lock:<arch>:<key>".
std::string remote_entry_name(std::string_view arch, const Key& key);
std::string remote_lock_name(std::string_view arch, const Key& key);
std::string remote_entry_prefix();
// (arch, key) of an entry name; nullopt for a name remote_entry_name cannot produce.
std::optional<std::pair<std::string, Key>> parse_remote_entry_name(std::string_view name);

class RemoteTier {
public:
    // How the tier adds to its owner's counters.
    using Count = std::function<void(const std::function<void(CacheStats&)>&)>;

    RemoteTier(RemoteTierConfig config, std::shared_ptr<spdlog::logger> logger, Count count);

    // The store's entry for key if it passes every check: the entry format's (checksum,
    // version, ...), the signature when a key is set, and every field of required_metadata
    // equal in its metadata. Otherwise produce()'s result, which is then stored. Requests for
    // one key from machines sharing the store run produce once; one that waits past
    // lock_wait_limit, or whose store fails, runs it itself. Exceptions from produce propagate.
    Entry fetch_or_produce(std::string_view arch, const Key& key, const nlohmann::json& required_metadata,
                           const std::function<Entry()>& produce);
    // Stores entry (signed when a key is set); false if the store failed or is switched off, or
    // the entry cannot be encoded (logged and counted in remote_errors; nothing is thrown).
    bool push(std::string_view arch, const Key& key, const Entry& entry);

private:
    // False while switched off after repeated failures.
    bool usable();
    enum class Fetched { found, absent, failed };  // absent: none, or none that passed the checks
    // One caller's request, across the steps of fetch_or_produce.
    struct Request {
        std::string_view arch;
        const Key& key;
        const nlohmann::json& required_metadata;
        bool rejected = false;  // a value was rejected already (counted and warned once)
    };
    Fetched try_fetch(Request& request, std::optional<Entry>& entry);
    std::optional<std::string> rejection(std::string_view name, std::span<const std::byte> value,
                                         const nlohmann::json& required_metadata, std::optional<Entry>& entry) const;
    // How a push ended. Its lock is released unless the store failed: a failing store is not
    // asked again in the request, and the lock lapses by its TTL.
    enum class Pushed { stored, unencodable, store_unavailable };
    Pushed push_entry(std::string_view arch, const Key& key, const Entry& entry);
    Entry produce_under_lock(Request& request, const std::string& lock_name, const std::function<Entry()>& produce);
    void succeeded();
    void failed(const std::string& what, const RemoteError& error);

    RemoteTierConfig config_;
    std::shared_ptr<spdlog::logger> logger_;
    Count count_;
    const std::string lock_token_;  // this tier's mark on the locks it takes

    std::mutex health_mutex_;
    int consecutive_failures_ = 0;
    std::optional<std::chrono::steady_clock::time_point> switched_off_until_;
    bool retrying_ = false;  // a back-off just ended; the next success is worth saying
    bool warned_ = false;
};

}  // namespace fajit::cache
