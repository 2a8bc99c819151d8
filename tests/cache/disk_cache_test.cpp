#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <latch>
#include <stdexcept>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view arch = "gfx1151";

// A stand-in for the compiler that counts how often it is asked.
struct CountingProducer {
    std::string seed;
    std::size_t payload_bytes = 256;
    std::atomic<int> calls{0};

    std::function<Entry()> callable() {
        return [this] {
            ++calls;
            return entry_for(seed, payload_bytes);
        };
    }
};

void set_age(const fs::path& path, std::chrono::seconds age) {
    fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

}  // namespace

TEST_CASE("get_or_create compiles once, then serves from disk") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    CountingProducer producer{"once"};
    const Key key = key_of("once");

    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("once", 256));
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("once", 256));
    CHECK(producer.calls == 1);
    CHECK(fs::exists(cache.entry_path(arch, key)));

    DiskCache other_instance(config_at(dir.path(), log));
    CHECK(other_instance.get_or_create(arch, key, producer.callable()) == entry_for("once", 256));
    CHECK(producer.calls == 1);

    const CacheStats stats = cache.session_stats();
    CHECK(stats.misses == 1);
    CHECK(stats.hits == 1);
    CHECK(stats.compiles == 1);
    CHECK(stats.compile_seconds >= 0);
}

TEST_CASE("a corrupt entry is logged, removed, counted and recompiled") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    CountingProducer producer{"corrupt"};
    const Key key = key_of("corrupt");
    cache.get_or_create(arch, key, producer.callable());
    const fs::path path = cache.entry_path(arch, key);

    auto bytes = read_bytes(path);
    bytes[bytes.size() / 2] ^= std::byte{0x40};
    write_bytes(path, bytes);

    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("corrupt", 256));
    CHECK(producer.calls == 2);
    CHECK(cache.session_stats().corrupt_entries == 1);
    CHECK(log.lines_at("warning") == 1);
    CHECK(log.text().find("checksum mismatch") != std::string::npos);
    CHECK(decode_entry(read_bytes(path)).entry == entry_for("corrupt", 256));

    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("corrupt", 256));
    CHECK(producer.calls == 2);
}

TEST_CASE("a truncated entry is never returned by load") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("truncated");
    REQUIRE(cache.publish(arch, key, entry_for("truncated", 1000)));
    const fs::path path = cache.entry_path(arch, key);
    fs::resize_file(path, fs::file_size(path) - 1);

    CHECK_FALSE(cache.load(arch, key));
    CHECK_FALSE(fs::exists(path));
    CHECK(cache.session_stats().corrupt_entries == 1);
    CHECK(cache.session_stats().misses == 1);
}

TEST_CASE("a terabyte sparse file at an entry path is removed as corrupt, unread") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    CountingProducer producer{"huge"};
    const Key key = key_of("huge");
    const fs::path path = cache.entry_path(arch, key);
    fs::create_directories(path.parent_path());
    constexpr std::uintmax_t terabyte = 1ull << 40;

    std::ofstream(path).close();
    fs::resize_file(path, terabyte);
    CHECK_FALSE(cache.holds(arch, key));
    const auto bad = cache.verify(false);
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].error.find("larger") != std::string::npos);
    CHECK_FALSE(cache.load(arch, key));
    CHECK_FALSE(fs::exists(path));
    CHECK(cache.session_stats().corrupt_entries == 1);
    CHECK(log.text().find("larger than max_bytes") != std::string::npos);
    std::ofstream(path).close();
    fs::resize_file(path, terabyte);
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("huge", 256));
    CHECK(producer.calls == 1);
    CHECK(cache.holds(arch, key));

    // The stats file is read with a small bound too.
    std::ofstream(Layout(dir.path()).stats_path()).close();
    fs::resize_file(Layout(dir.path()).stats_path(), terabyte);
    CHECK(cache.stats().compiles == cache.session_stats().compiles);
}

TEST_CASE("a FIFO at an entry path is skipped, not waited on, and replaced by the next publish") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    CountingProducer producer{"fifo"};
    const Key key = key_of("fifo");
    const fs::path path = cache.entry_path(arch, key);
    fs::create_directories(path.parent_path());
    REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
    CHECK_FALSE(cache.load(arch, key));
    CHECK_FALSE(cache.holds(arch, key));
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("fifo", 256));
    CHECK(producer.calls == 1);
    CHECK(fs::is_regular_file(path));  // the publish replaced it
}

TEST_CASE("least recently used entries go first and the size bound holds exactly") {
    TempDir dir;
    CapturedLog log;
    const std::uint64_t entry_size = encode_entry(entry_for("e0", 1000)).size();
    DiskCacheConfig config = config_at(dir.path(), log);
    config.max_bytes = 3 * entry_size;  // exactly three entries fit
    DiskCache cache(config);

    std::vector<Key> keys;
    for (int i = 0; i < 5; ++i) keys.push_back(key_of("e" + std::to_string(i)));
    const auto present = [&](int i) { return fs::exists(cache.entry_path(arch, keys[i])); };
    const auto total_size = [&] {
        std::uint64_t total = 0;
        for (const auto& info : cache.list()) total += info.size;
        return total;
    };

    for (int i = 0; i < 3; ++i) {
        REQUIRE(cache.publish(arch, keys[i], entry_for("e" + std::to_string(i), 1000)));
        // File times have coarse resolution; set explicit ages so the order is unambiguous.
        set_age(cache.entry_path(arch, keys[i]), std::chrono::seconds(300 - 100 * i));
    }
    CHECK(total_size() == 3 * entry_size);
    CHECK(cache.session_stats().evictions == 0);

    REQUIRE(cache.load(arch, keys[0]));  // a hit makes e0 the most recently used
    REQUIRE(cache.publish(arch, keys[3], entry_for("e3", 1000)));
    CHECK(present(0));
    CHECK_FALSE(present(1));
    CHECK(present(2));
    CHECK(present(3));
    CHECK(total_size() == 3 * entry_size);

    REQUIRE(cache.publish(arch, keys[4], entry_for("e4", 1000)));
    CHECK_FALSE(present(2));
    CHECK(present(0));
    CHECK(present(3));
    CHECK(present(4));
    CHECK(total_size() == 3 * entry_size);
    CHECK(cache.session_stats().evictions == 2);

    // Republishing an existing key replaces it instead of evicting another entry.
    REQUIRE(cache.publish(arch, keys[0], entry_for("e0", 1000)));
    CHECK(cache.list().size() == 3);
    CHECK(cache.session_stats().evictions == 2);
}

TEST_CASE("threads publishing at once stay within the size bound together") {
    TempDir dir;
    CapturedLog log;
    constexpr int publishers = 8;
    const std::uint64_t entry_size = encode_entry(entry_for("p0", 4096)).size();
    DiskCacheConfig config = config_at(dir.path(), log);
    config.max_bytes = 2 * entry_size;
    DiskCache cache(config);
    std::latch start(publishers);
    std::atomic<int> stored{0};
    {
        std::vector<std::jthread> threads;
        for (int i = 0; i < publishers; ++i)
            threads.emplace_back([&, i] {
                const std::string seed = "p" + std::to_string(i);
                start.arrive_and_wait();  // every publish scans the store at about the same time
                if (cache.publish(arch, key_of(seed), entry_for(seed, 4096))) ++stored;
            });
    }
    CHECK(stored == publishers);
    std::uint64_t total = 0;
    for (const auto& info : cache.list()) total += info.size;
    CHECK(total == 2 * entry_size);
    CHECK(cache.session_stats().evictions == publishers - 2);
}

TEST_CASE("an entry larger than the whole cache is refused, and nothing is evicted for it") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path(), log);
    config.max_bytes = 2000;
    DiskCache cache(config);
    REQUIRE(cache.publish(arch, key_of("small"), entry_for("small", 100)));
    CHECK_FALSE(cache.publish(arch, key_of("big"), entry_for("big", 5000)));
    CHECK(cache.load(arch, key_of("small")));
    CHECK(log.lines_at("warning") == 1);
    CHECK(cache.session_stats().publish_failures == 1);
}

TEST_CASE("a disabled cache never touches disk") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path() / "never-created", log);
    config.enabled = false;
    {
        DiskCache cache(config);
        CountingProducer producer{"disabled"};
        const Key key = key_of("disabled");
        for (int i = 0; i < 3; ++i)
            CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("disabled", 256));
        CHECK(producer.calls == 3);
        CHECK_FALSE(cache.publish(arch, key, entry_for("disabled", 1)));
        CHECK_FALSE(cache.load(arch, key));
        CHECK(cache.list().empty());
        CHECK(cache.verify(true).empty());
        CHECK(cache.session_stats().compiles == 3);
        cache.flush_stats();
    }
    CHECK_FALSE(fs::exists(dir.path() / "never-created"));
    CHECK(log.text().empty());
}

TEST_CASE("threads asking for one key share a single compile") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    std::atomic<int> calls{0};
    const auto slow_producer = [&] {
        ++calls;
        std::this_thread::sleep_for(100ms);
        return entry_for("threads", 512);
    };
    std::vector<std::thread> threads;
    std::atomic<int> correct{0};
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&] {
            if (cache.get_or_create(arch, key_of("threads"), slow_producer) == entry_for("threads", 512)) ++correct;
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(calls == 1);
    CHECK(correct == 8);
    CHECK(cache.session_stats().compiles == 1);
    CHECK(cache.session_stats().hits == 7);
}

TEST_CASE("a failing producer stores nothing, reaches every waiter, and is retried next time") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("throws");
    std::atomic<int> calls{0};
    const auto failing = [&]() -> Entry {
        ++calls;
        std::this_thread::sleep_for(50ms);
        throw std::runtime_error("compile error");
    };
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&] {
            try {
                cache.get_or_create(arch, key, failing);
            } catch (const std::runtime_error&) {
                ++failures;
            }
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(calls == 1);
    CHECK(failures == 4);
    CHECK_FALSE(fs::exists(cache.entry_path(arch, key)));
    CHECK_FALSE(fs::exists(fs::path(cache.entry_path(arch, key)).concat(".lock")));

    CountingProducer producer{"throws"};
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("throws", 256));
    CHECK(producer.calls == 1);
}

TEST_CASE("evict removes an entry the loader rejected, so the next request recompiles") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    CountingProducer producer{"rejected"};
    const Key key = key_of("rejected");
    cache.get_or_create(arch, key, producer.callable());
    cache.evict(arch, key);
    CHECK_FALSE(fs::exists(cache.entry_path(arch, key)));
    CHECK(cache.session_stats().rejected_entries == 1);
    cache.get_or_create(arch, key, producer.callable());
    CHECK(producer.calls == 2);
}

TEST_CASE("a waiter breaks a lock not refreshed for lock_timeout and compiles") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path(), log);
    config.lock_timeout = 1s;
    DiskCache cache(config);
    const Key key = key_of("held");
    const fs::path lock_path = fs::path(cache.entry_path(arch, key)).concat(".lock");
    fs::create_directories(lock_path.parent_path());
    // A live owner (this process) that no longer refreshes its lock, as if hung as a whole.
    std::ofstream(lock_path) << ::getpid() << " " << this_host() << " 1 7\n";

    CountingProducer producer{"held"};
    const auto start = std::chrono::steady_clock::now();
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("held", 256));
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(producer.calls == 1);
    CHECK(waited >= 900ms);
    CHECK(waited < 10s);
    CHECK(cache.session_stats().lock_waits == 1);
    CHECK(fs::exists(cache.entry_path(arch, key)));
}

TEST_CASE("a waiter that reaches lock_wait_limit on a lock it cannot break compiles for itself") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path(), log);
    config.lock_wait_limit = 1s;
    DiskCache cache(config);
    const Key key = key_of("unbreakable");
    const fs::path lock_path = fs::path(cache.entry_path(arch, key)).concat(".lock");
    fs::create_directories(lock_path.parent_path());
    // An owner on another host whose clock runs ahead: never stale by age, liveness unknowable.
    std::ofstream(lock_path) << "1 some-other-host 1 7\n";
    fs::last_write_time(lock_path, fs::file_time_type::clock::now() + 1h);

    CountingProducer producer{"unbreakable"};
    const auto start = std::chrono::steady_clock::now();
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("unbreakable", 256));
    CHECK(std::chrono::steady_clock::now() - start >= 900ms);
    CHECK(producer.calls == 1);
    CHECK(cache.session_stats().lock_timeouts == 1);
    CHECK(log.lines_at("warning") == 1);
    CHECK(fs::exists(cache.entry_path(arch, key)));
    CHECK(fs::exists(lock_path));  // not ours to remove
}

TEST_CASE("a compile that outlives lock_timeout in another process is waited for, not duplicated") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path() / "cache", log);
    config.lock_timeout = 300ms;
    const Key key = key_of("slow");
    const fs::path started = dir.path() / "started";
    const pid_t compiler = start_child([&] {
        DiskCache cache(config);
        cache.get_or_create(arch, key, [&] {
            std::ofstream(started) << "compiling";
            std::this_thread::sleep_for(1500ms);  // five times lock_timeout
            return entry_for("slow", 256);
        });
        return 0;
    });
    while (!fs::exists(started)) std::this_thread::sleep_for(1ms);

    DiskCache cache(config);
    CountingProducer producer{"slow"};
    CHECK(cache.get_or_create(arch, key, producer.callable()) == entry_for("slow", 256));
    CHECK(producer.calls == 0);
    CHECK(cache.session_stats().lock_waits == 1);
    CHECK(cache.session_stats().hits == 1);
    CHECK(wait_for_child(compiler) == 0);
}

TEST_CASE("stats persist across instances and can be zeroed") {
    TempDir dir;
    CapturedLog log;
    CountingProducer producer{"stats"};
    {
        DiskCache first(config_at(dir.path(), log));
        first.get_or_create(arch, key_of("stats"), producer.callable());
        first.get_or_create(arch, key_of("stats"), producer.callable());
        first.load(arch, key_of("absent"));
    }
    {
        DiskCache second(config_at(dir.path(), log));
        second.get_or_create(arch, key_of("stats"), producer.callable());
        CacheStats total = second.stats();
        CHECK(total.compiles == 1);
        CHECK(total.misses == 2);
        CHECK(total.hits == 2);
        second.flush_stats();
        CHECK(DiskCache(config_at(dir.path(), log)).stats() == total);
        CHECK(to_json(total)["hits"] == 2);
        CHECK(stats_from_json(to_json(total)) == total);

        second.zero_stats();
        CHECK(second.stats() == CacheStats{});
    }
    CHECK(DiskCache(config_at(dir.path(), log)).stats() == CacheStats{});
}
