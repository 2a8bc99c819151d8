// DiskCache's counters: counting, and flushing them to the stats file from a background
// thread about once a second while there are unflushed counts, when the cache is destroyed,
// and when the process exits normally with the cache still alive. A killed process thus
// loses at most about a second of counts.
#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>

#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "cache/stats_file.hpp"

namespace fajit::cache {

namespace {

// Long enough to gather a burst of events into one write, short enough that little is lost.
constexpr std::chrono::seconds flush_interval{1};

// The caches alive in this process, for the exit handler. Never destroyed: a cache may itself
// be a static object, destroyed after any other static would be.
struct LiveCaches {
    std::mutex mutex;
    std::set<DiskCache*> caches;
};

LiveCaches& live_caches() {
    static LiveCaches* const live = new LiveCaches;
    return *live;
}

}  // namespace

void DiskCache::flush_at_exit(DiskCache* cache) {
    static std::once_flag handler_registered;
    std::call_once(handler_registered, [] {
        std::atexit(+[] {
            LiveCaches& live = live_caches();
            std::lock_guard lock(live.mutex);
            for (DiskCache* cache : live.caches) cache->stop_flushing();
        });
    });
    LiveCaches& live = live_caches();
    std::lock_guard lock(live.mutex);
    live.caches.insert(cache);
}

void DiskCache::forget_at_exit(DiskCache* cache) {
    LiveCaches& live = live_caches();
    std::lock_guard lock(live.mutex);
    live.caches.erase(cache);
}

CacheStats DiskCache::session_stats() const {
    std::lock_guard lock(stats_mutex_);
    return session_;
}

CacheStats DiskCache::stats() const {
    CacheStats total = config_.enabled ? read_stats_file(layout_.stats_path()) : CacheStats{};
    std::lock_guard lock(stats_mutex_);
    total += unflushed_;
    return total;
}

void DiskCache::flush_stats() {
    if (!config_.enabled) return;
    // One flusher at a time, so deltas reach the file in the order they were taken.
    std::lock_guard flushing(flush_mutex_);
    CacheStats delta;
    {
        std::lock_guard lock(stats_mutex_);
        if (unflushed_ == CacheStats{}) return;
        delta = std::exchange(unflushed_, CacheStats{});
    }
    const bool written = update_stats_file(layout_.stats_path(), [&](CacheStats total) {
        total += delta;
        return total;
    });
    if (!written) {
        std::lock_guard lock(stats_mutex_);
        unflushed_ += delta;
    }
}

void DiskCache::zero_stats() {
    {
        std::lock_guard lock(stats_mutex_);
        session_ = {};
        unflushed_ = {};
    }
    if (config_.enabled) update_stats_file(layout_.stats_path(), [](CacheStats) { return CacheStats{}; });
}

void DiskCache::count(const std::function<void(CacheStats&)>& event) {
    {
        std::lock_guard lock(stats_mutex_);
        event(session_);
        event(unflushed_);
    }
    if (!config_.enabled) return;
    // Started by the first event, so caches that count nothing (the CLI's listings) have no thread.
    std::call_once(flusher_started_,
                   [this] { flusher_ = std::jthread([this](std::stop_token stop) { flush_periodically(stop); }); });
    counted_.notify_one();
}

void DiskCache::flush_periodically(std::stop_token stop) {
    std::unique_lock lock(stats_mutex_);
    for (;;) {
        // Either wait ends early once stopped; stop_flushing() writes what is left.
        if (!counted_.wait(lock, stop, [&] { return !(unflushed_ == CacheStats{}); }) || stop.stop_requested()) return;
        if (counted_.wait_for(lock, stop, flush_interval, [&] { return stop.stop_requested(); })) return;
        lock.unlock();
        flush_stats();  // keeps the counts for the next round if the file is busy or unwritable
        lock.lock();
    }
}

void DiskCache::stop_flushing() {
    if (::getpid() != creator_pid_) {
        // A forked child has a copy of its parent's cache but not its thread, and the counts
        // are the parent's to flush. Detaching lets the handle go without waiting for a thread
        // that does not exist here.
        if (flusher_.joinable()) flusher_.detach();
        return;
    }
    flusher_.request_stop();
    if (flusher_.joinable()) flusher_.join();
    flush_stats();
}

}  // namespace fajit::cache
