// The server failing under the fleet: killed, stopped (every reply late), restarted. Every
// request completes, none waits past the timeouts plus its compiles, nothing corrupt lands
// locally, and the tier comes back after its back-off. A lock left without an expiry lapses.
#include <doctest/doctest.h>

#include <atomic>
#include <span>
#include <string>
#include <thread>

#include "remote_support.hpp"
#include "support/redis_server.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto compile_time = 20ms;
// Beyond one connect and one operation timeout (300 ms each) and the compiles a request may
// wait for: another machine's, then its own. The slack covers a loaded CI machine.
constexpr auto longest_allowed = 300ms + 300ms + 2 * compile_time + 400ms;

}  // namespace

TEST_CASE("the server killed with SIGKILL mid-run: every request completes in bounded time, nothing corrupt lands") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    const fs::path slowest_log = dir.path() / "slowest";
    RemoteSettings settings;
    settings.url = server.url();
    constexpr int machine_count = 4;
    constexpr int key_count = 40;

    std::vector<pid_t> machines;
    for (int machine = 0; machine < machine_count; ++machine) {
        machines.push_back(start_child([&, machine] {
            CapturedLog log;
            const fs::path root = dir.path() / ("machine-" + std::to_string(machine));
            DiskCache cache(remote_config_at(root, log, settings));
            Clock::duration slowest{};
            for (int i = 0; i < key_count; ++i) {
                const std::string seed = "kernel " + std::to_string((i + machine * 7) % key_count);
                const auto start = Clock::now();
                if (request(cache, compile_log, test_arch, seed, compile_time) != compiled_entry(test_arch, seed))
                    return 1;
                slowest = std::max(slowest, Clock::now() - start);
            }
            if (slowest > longest_allowed) return 2;
            // One warning when the tier switches off, however many requests fail after.
            if (log.lines_at("warning") != 1) return 3;
            if (cache.session_stats().remote_errors == 0) return 4;
            return 0;
        }));
    }
    std::this_thread::sleep_for(150ms);  // some keys shared, some still to come
    server.kill_hard();
    for (int machine = 0; machine < machine_count; ++machine) {
        CAPTURE(machine);
        CHECK(wait_for_child(machines[machine]) == 0);
    }
    for (int machine = 0; machine < machine_count; ++machine) {
        CapturedLog log;
        DiskCache cache(config_at(dir.path() / ("machine-" + std::to_string(machine)), log));
        CHECK(cache.list().size() == key_count);
        CHECK(cache.verify(false).empty());
        CHECK(temp_files_under(dir.path() / ("machine-" + std::to_string(machine))).empty());
    }
}

TEST_CASE("a server that stops answering costs each request at most one timeout, then is left alone") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    RemoteSettings settings;
    settings.url = server.url();
    CapturedLog log;
    DiskCache cache(remote_config_at(dir.path() / "machine", log, settings));
    request(cache, compile_log, test_arch, "before");  // opens the connection the stall then holds

    server.pause();
    std::vector<Clock::duration> took;
    std::vector<std::uint64_t> errors;
    for (int i = 0; i < 6; ++i) {
        const auto start = Clock::now();
        CHECK(request(cache, compile_log, test_arch, "stalled " + std::to_string(i)) ==
              compiled_entry(test_arch, "stalled " + std::to_string(i)));
        took.push_back(Clock::now() - start);
        errors.push_back(cache.session_stats().remote_errors);
    }
    server.resume();
    // The stalled server accepts connections, so each request waits one reply timeout (300 ms):
    // it gives up on the store at its first failure, and three failed requests switch the tier
    // off, after which no request touches the store.
    for (std::size_t i = 0; i < took.size(); ++i) {
        CAPTURE(i);
        CHECK(errors[i] == std::min<std::uint64_t>(i + 1, 3));
        // Slack for fsyncs on a loaded machine; the counts above are what tell one wait from two.
        CHECK(took[i] < 300ms + compile_time + 500ms);
        if (i >= 3) CHECK(took[i] < 300ms);
    }
    CHECK(log.lines_at("warning") == 1);
    CHECK(log.text().find("switched off") != std::string::npos);
}

TEST_CASE("a server that stalls for a moment while a compile holds the fleet lock: the lock is kept alive") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    CapturedLog log;
    DiskCacheConfig config = remote_config_at(dir.path() / "machine", log, settings);
    config.remote->lock_ttl = 1500ms;  // refreshed every 500 ms
    DiskCache cache(std::move(config));
    const Key key = key_of("long compile");
    const std::string lock_name = remote_lock_name(test_arch, key);
    bool held_after_stall = false;
    const auto compile = [&] {
        std::this_thread::sleep_for(200ms);
        // The refresh due at 500 ms waits its 300 ms for a reply, and fails.
        server.pause();
        std::this_thread::sleep_for(700ms);
        server.resume();
        // Longer than the TTL, even counted from a refresh the server ran late, on resuming.
        std::this_thread::sleep_for(2000ms);
        held_after_stall = raw_store(server.url())->get(lock_name).has_value();
        return compiled_entry(test_arch, "long compile");
    };
    CHECK(cache.get_or_create(test_arch, key, compile, required_for(test_arch)) ==
          compiled_entry(test_arch, "long compile"));
    CHECK(held_after_stall);
    CHECK(log.text().find("cannot refresh " + lock_name) != std::string::npos);
    CHECK_FALSE(raw_store(server.url())->get(lock_name));  // released once stored
}

TEST_CASE("after a restart the tier resumes once its back-off is over") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    RemoteSettings settings;
    settings.url = server.url();
    settings.backoff = 600ms;
    CapturedLog log;
    DiskCache cache(remote_config_at(dir.path() / "machine", log, settings));
    request(cache, compile_log, test_arch, "before");

    server.kill_hard();
    for (int i = 0; i < 3; ++i) request(cache, compile_log, test_arch, "down " + std::to_string(i));
    CHECK(cache.session_stats().remote_errors == 3);
    server.restart();
    const auto restarted = Clock::now();
    const auto store = raw_store(server.url());

    // Within the back-off the tier stays off, though the server is back.
    request(cache, compile_log, test_arch, "within back-off");
    if (Clock::now() - restarted < 500ms) {
        CHECK_FALSE(store->get(remote_entry_name(test_arch, key_of(std::string(test_arch) + "/within back-off"))));
        CHECK(cache.session_stats().remote_misses == 1);  // only "before" asked the store
    }
    std::this_thread::sleep_for(700ms);
    request(cache, compile_log, test_arch, "after back-off");
    CHECK(store->get(remote_entry_name(test_arch, key_of(std::string(test_arch) + "/after back-off"))));
    CHECK(cache.session_stats().remote_errors == 3);
    CHECK(log.text().find("the store answers again") != std::string::npos);

    // And another machine now gets it from the store, without compiling.
    CapturedLog other_log;
    DiskCache other(remote_config_at(dir.path() / "other", other_log, settings));
    request(other, compile_log, test_arch, "after back-off");
    CHECK(other.session_stats().remote_hits == 1);
    CHECK(compiles_in(compile_log).at(std::string(test_arch) + "/after back-off") == 1);
}

TEST_CASE("a lock left without an expiry lapses after one lock TTL, instead of holding waiters for their limit") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    CapturedLog log;
    DiskCacheConfig config = remote_config_at(dir.path() / "machine", log, settings);
    config.remote->lock_ttl = 300ms;
    config.remote->lock_wait_limit = 20s;
    DiskCache cache(std::move(config));
    const std::string seed = "stale lock";
    const Key key = key_of(std::string(test_arch) + "/" + seed);
    // Set by hand, as a tool or an operator might: a plain SET, with no expiry.
    const std::string holder = "someone else";
    raw_store(server.url())->put(remote_lock_name(test_arch, key), std::as_bytes(std::span(holder)));

    const auto start = Clock::now();
    CHECK(request(cache, dir.path() / "compiles.log", test_arch, seed) == compiled_entry(test_arch, seed));
    // The waiter gives the lock one TTL (300 ms), then takes it; slack for a loaded machine.
    CHECK(Clock::now() - start < 300ms + 1500ms);
    CHECK(log.text().find("gave up waiting") == std::string::npos);
}
