#include "cache/remote_tier.hpp"

#include <condition_variable>
#include <exception>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "cache/remote_value.hpp"

namespace fajit::cache {

namespace {

std::string names_prefix() { return "fajit:v" + std::to_string(entry_format_version) + ":"; }

// Marks a lock as this holder's: host, process and a random part, unique across the fleet.
std::string lock_token() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::random_device random;
    return std::string(host) + ":" + std::to_string(::getpid()) + ":" + std::to_string(random()) +
           std::to_string(random());
}

// Refreshes a held lock every third of its TTL until destroyed, however long the work takes.
// A refresh that fails (the store slow or away for a moment) is tried again at the next; only
// one that finds the lock gone or another's ends it.
class LockKeepAlive {
public:
    LockKeepAlive(RemoteStorage& storage, std::string name, std::string token, std::chrono::milliseconds ttl,
                  spdlog::logger& logger)
        : thread_([&storage, name = std::move(name), token = std::move(token), ttl, &logger,
                   this](std::stop_token stop) {
              std::mutex mutex;
              std::unique_lock lock(mutex);
              while (!wake_.wait_for(lock, stop, ttl / 3, [&stop] { return stop.stop_requested(); })) {
                  try {
                      if (!storage.refresh_lock(name, token, ttl)) {
                          logger.info("fa-jit remote cache: lost the lock {}; another machine may compile too", name);
                          return;
                      }
                  } catch (const RemoteError& error) {
                      logger.debug("fa-jit remote cache: cannot refresh {} (trying again): {}", name, error.what());
                  }
              }
          }) {}

private:
    std::condition_variable_any wake_;
    std::jthread thread_;  // last: it uses wake_
};

}  // namespace

std::string remote_entry_prefix() { return names_prefix() + "entry:"; }

std::string remote_entry_name(std::string_view arch, const Key& key) {
    return remote_entry_prefix() + std::string(arch) + ":" + key.hex();
}

std::string remote_lock_name(std::string_view arch, const Key& key) {
    return names_prefix() + "lock:" + std::string(arch) + ":" + key.hex();
}

std::optional<std::pair<std::string, Key>> parse_remote_entry_name(std::string_view name) {
    const std::string prefix = remote_entry_prefix();
    if (!name.starts_with(prefix)) return std::nullopt;
    name.remove_prefix(prefix.size());
    // The key is last and has no ':'; an arch may ("gfx90a:sramecc+:xnack-").
    const auto colon = name.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto key = Key::from_hex(name.substr(colon + 1));
    if (!key) return std::nullopt;
    return std::pair{std::string(name.substr(0, colon)), *key};
}

RemoteTier::RemoteTier(RemoteTierConfig config, std::shared_ptr<spdlog::logger> logger, Count count)
    : config_(std::move(config)), logger_(std::move(logger)), count_(std::move(count)), lock_token_(lock_token()) {}

bool RemoteTier::usable() {
    std::lock_guard lock(health_mutex_);
    if (!switched_off_until_) return true;
    if (std::chrono::steady_clock::now() < *switched_off_until_) return false;
    // Back-off over: the next operation tries the store again; one more failure switches it off again.
    switched_off_until_.reset();
    consecutive_failures_ = config_.failures_before_backoff - 1;
    retrying_ = true;
    return true;
}

void RemoteTier::succeeded() {
    std::lock_guard lock(health_mutex_);
    if (retrying_) logger_->info("fa-jit remote cache: the store answers again");
    retrying_ = false;
    consecutive_failures_ = 0;
}

void RemoteTier::failed(const std::string& what, const RemoteError& error) {
    count_([](CacheStats& stats) { ++stats.remote_errors; });
    std::lock_guard lock(health_mutex_);
    if (++consecutive_failures_ < config_.failures_before_backoff) {
        logger_->debug("fa-jit remote cache: {} failed: {}", what, error.what());
        return;
    }
    switched_off_until_ = std::chrono::steady_clock::now() + config_.backoff;
    retrying_ = false;
    const auto seconds = std::chrono::duration<double>(config_.backoff).count();
    if (!warned_) {
        warned_ = true;
        logger_->warn("fa-jit remote cache: {} failed: {}; switched off for {} s, the local cache carries on", what,
                      error.what(), seconds);
    } else {
        logger_->info("fa-jit remote cache: {} failed: {}; switched off for {} s again", what, error.what(), seconds);
    }
}

std::optional<std::string> RemoteTier::rejection(std::string_view name, std::span<const std::byte> value,
                                                 const nlohmann::json& required_metadata,
                                                 std::optional<Entry>& entry) const {
    UnsealedValue unsealed = unseal_remote_value(name, value, config_.signing_key);
    if (!unsealed.entry_bytes) return unsealed.error;
    DecodeResult decoded = decode_entry(*unsealed.entry_bytes);
    if (!decoded.entry) return decoded.error;
    for (const auto& [field, wanted] : required_metadata.items()) {
        const auto found = decoded.entry->metadata.find(field);
        if (found == decoded.entry->metadata.end()) return "its metadata has no " + field;
        // Compared as an entry stores it: a required value with invalid UTF-8 (a compiler path
        // with a stray byte) is stored with U+FFFD in its place.
        const nlohmann::json stored_wanted = nlohmann::json::parse(metadata_text(wanted));
        if (*found != stored_wanted)
            return field + " is " + metadata_text(*found) + ", expected " + metadata_text(stored_wanted);
    }
    entry = std::move(decoded.entry);
    return std::nullopt;
}

RemoteTier::Fetched RemoteTier::try_fetch(Request& request, std::optional<Entry>& entry) {
    const std::string name = remote_entry_name(request.arch, request.key);
    std::optional<std::vector<std::byte>> value;
    try {
        value = config_.storage->get(name);
        succeeded();
    } catch (const RemoteError& error) {
        failed("reading " + name, error);
        return Fetched::failed;
    }
    if (!value) return Fetched::absent;
    if (const auto why = rejection(name, *value, request.required_metadata, entry)) {
        // A waiter sees the bad value on every poll until it is replaced; it counts once.
        if (!request.rejected) {
            logger_->warn("fa-jit remote cache: rejected {}: {}; compiling it here", name, *why);
            count_([](CacheStats& stats) { ++stats.remote_rejected; });
        }
        request.rejected = true;
        return Fetched::absent;
    }
    count_([&](CacheStats& stats) {
        ++stats.remote_hits;
        stats.remote_bytes_read += value->size();
    });
    return Fetched::found;
}

bool RemoteTier::push(std::string_view arch, const Key& key, const Entry& entry) {
    return push_entry(arch, key, entry) == Pushed::stored;
}

RemoteTier::Pushed RemoteTier::push_entry(std::string_view arch, const Key& key, const Entry& entry) {
    if (!usable()) return Pushed::store_unavailable;
    const std::string name = remote_entry_name(arch, key);
    std::vector<std::byte> value;
    try {
        value = seal_remote_value(name, encode_entry(entry), config_.signing_key);
    } catch (const std::exception& error) {
        // The entry is at fault, not the store: counted, but no step towards switching the store off.
        count_([](CacheStats& stats) { ++stats.remote_errors; });
        logger_->warn("fa-jit remote cache: cannot store {}: {}", name, error.what());
        return Pushed::unencodable;
    }
    try {
        config_.storage->put(name, value);
        succeeded();
    } catch (const RemoteError& error) {
        failed("storing " + name, error);
        return Pushed::store_unavailable;
    }
    count_([&](CacheStats& stats) { stats.remote_bytes_written += value.size(); });
    return Pushed::stored;
}

Entry RemoteTier::fetch_or_produce(std::string_view arch, const Key& key, const nlohmann::json& required_metadata,
                                   const std::function<Entry()>& produce) {
    if (!usable()) return produce();
    Request request{arch, key, required_metadata};
    std::optional<Entry> entry;
    const auto fetched = try_fetch(request, entry);
    if (fetched == Fetched::found) return std::move(*entry);
    // One failure per request at most: a slow store costs one timeout, not one per step.
    if (fetched == Fetched::failed) return produce();
    count_([](CacheStats& stats) { ++stats.remote_misses; });

    const std::string lock_name = remote_lock_name(arch, key);
    const auto give_up_at = std::chrono::steady_clock::now() + config_.lock_wait_limit;
    bool waited = false;
    for (;;) {
        if (!usable()) return produce();
        try {
            const bool locked = config_.storage->try_lock(lock_name, lock_token_, config_.lock_ttl);
            succeeded();
            if (locked) break;
        } catch (const RemoteError& error) {
            failed("locking " + lock_name, error);
            return produce();
        }
        if (!waited) count_([](CacheStats& stats) { ++stats.remote_lock_waits; });
        waited = true;
        // Another machine produces it; its value appears when it is done, or its lock lapses.
        std::this_thread::sleep_for(config_.poll_interval);
        switch (try_fetch(request, entry)) {
            case Fetched::found:
                return std::move(*entry);
            case Fetched::failed:
                return produce();
            case Fetched::absent:
                break;
        }
        if (std::chrono::steady_clock::now() >= give_up_at) {
            count_([](CacheStats& stats) { ++stats.remote_lock_timeouts; });
            logger_->warn("fa-jit remote cache: gave up waiting for {} after {} s; compiling here too", lock_name,
                          std::chrono::duration<double>(config_.lock_wait_limit).count());
            return produce();
        }
    }
    return produce_under_lock(request, lock_name, produce);
}

Entry RemoteTier::produce_under_lock(Request& request, const std::string& lock_name,
                                     const std::function<Entry()>& produce) {
    const auto release = [&] {
        try {
            config_.storage->unlock(lock_name, lock_token_);
        } catch (const RemoteError& error) {
            failed("unlocking " + lock_name, error);  // it lapses by its TTL
        }
    };
    // The previous holder may have stored it just before its lock went. A store that has just
    // failed is not asked again in this request (its lock then lapses by its TTL), so a failing
    // store costs the request one timeout.
    std::optional<Entry> entry;
    switch (try_fetch(request, entry)) {
        case Fetched::found:
            release();
            return std::move(*entry);
        case Fetched::failed:
            return produce();
        case Fetched::absent:
            break;
    }
    Entry produced;
    Pushed pushed;
    {
        LockKeepAlive keep_alive(*config_.storage, lock_name, lock_token_, config_.lock_ttl, *logger_);
        try {
            produced = produce();
        } catch (...) {
            release();
            throw;
        }
        pushed = push_entry(request.arch, request.key, produced);
    }
    if (pushed != Pushed::store_unavailable) release();
    return produced;
}

}  // namespace fajit::cache
