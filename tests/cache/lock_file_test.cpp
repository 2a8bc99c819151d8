#include <doctest/doctest.h>

#include <fstream>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "cache/lock_file.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::int64_t unix_ns(std::chrono::system_clock::time_point when) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
}

void write_lock(const fs::path& path, long pid, const std::string& host, std::chrono::system_clock::time_point when) {
    std::ofstream(path) << pid << ' ' << host << ' ' << unix_ns(when) << " 42\n";
}

}  // namespace

TEST_CASE("a lock excludes a second owner until released") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    LockFile first(path, 60s);
    REQUIRE(first.acquire(0s) == LockFile::Outcome::acquired);
    CHECK(first.held());
    CHECK(fs::exists(path));

    LockFile second(path, 60s);
    CHECK(second.acquire(50ms) == LockFile::Outcome::timed_out);
    CHECK_FALSE(second.held());

    first.release();
    CHECK_FALSE(fs::exists(path));
    CHECK(second.acquire(0s) == LockFile::Outcome::acquired);
}

TEST_CASE("a lock left by a dead process on this host is broken at once") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    const pid_t dead = start_child([] { return 0; });
    wait_for_child(dead);
    write_lock(path, dead, this_host(), std::chrono::system_clock::now());

    LockFile lock(path, 60s);
    const auto start = std::chrono::steady_clock::now();
    CHECK(lock.acquire(10s) == LockFile::Outcome::acquired_after_waiting);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("a lock not refreshed for the stale age is broken even if its owner may live") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    write_lock(path, 1, "some-other-host", std::chrono::system_clock::now() - 2h);
    LockFile lock(path, 60s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::timed_out);  // taken long ago, but refreshed just now
    fs::last_write_time(path, fs::file_time_type::clock::now() - 2min);
    CHECK(lock.acquire(1s) == LockFile::Outcome::acquired_after_waiting);
}

TEST_CASE("a fresh lock of a live owner elsewhere is respected") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    write_lock(path, 1, "some-other-host", std::chrono::system_clock::now());
    LockFile lock(path, 60s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::timed_out);
    // Our own pid is alive too.
    write_lock(path, ::getpid(), this_host(), std::chrono::system_clock::now());
    CHECK(lock.acquire(100ms) == LockFile::Outcome::timed_out);
}

TEST_CASE("an unparsable lock is broken only once it is old") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    std::ofstream(path) << "";
    LockFile lock(path, 1s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::timed_out);
    fs::last_write_time(path, fs::file_time_type::clock::now() - 10s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::acquired_after_waiting);
}

TEST_CASE("an oversized lock file (a sparse terabyte) is judged by age like any unparsable one") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    std::ofstream(path) << "";
    fs::resize_file(path, 1ull << 40);
    LockFile lock(path, 1s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::timed_out);
    fs::last_write_time(path, fs::file_time_type::clock::now() - 10s);
    CHECK(lock.acquire(100ms) == LockFile::Outcome::acquired_after_waiting);
}

TEST_CASE("releasing a lock replaced by an oversized file leaves that file, and does not throw") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    {
        LockFile owner(path, 60s);
        REQUIRE(owner.acquire(0s) == LockFile::Outcome::acquired);
        const fs::path huge = dir.path() / "huge";
        std::ofstream(huge) << "";
        fs::resize_file(huge, 1ull << 40);
        fs::rename(huge, path);
    }
    CHECK(fs::file_size(path) == 1ull << 40);
    CHECK(temp_files_under(dir.path()).empty());
}

TEST_CASE("releasing does not remove a lock someone else took over") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    {
        LockFile slow_owner(path, 60s);
        REQUIRE(slow_owner.acquire(0s) == LockFile::Outcome::acquired);
        write_lock(path, ::getpid(), this_host(), std::chrono::system_clock::now());  // the new owner's record
    }
    CHECK(fs::exists(path));
    CHECK(temp_files_under(dir.path()).empty());
}

TEST_CASE("a lock in a directory that cannot exist is unavailable, not a wait") {
    TempDir dir;
    std::ofstream(dir.path() / "file") << "x";
    LockFile lock(dir.path() / "file" / "k.lock", 60s);
    CHECK(lock.acquire(10s) == LockFile::Outcome::unavailable);
}

namespace {

// A child process that takes the lock, says so by creating `ready`, holds it for `hold` and
// releases it (or is killed or stopped before).
pid_t start_owner(const fs::path& path, std::chrono::milliseconds stale_after, std::chrono::milliseconds hold,
                  const fs::path& ready) {
    const pid_t owner = start_child([=] {
        LockFile lock(path, stale_after);
        if (lock.acquire(0s) != LockFile::Outcome::acquired) return 1;
        std::ofstream(ready) << "holding";
        std::this_thread::sleep_for(hold);
        return 0;
    });
    while (!fs::exists(ready)) std::this_thread::sleep_for(1ms);
    return owner;
}

}  // namespace

TEST_CASE("a lock held far beyond its stale age is kept alive, and a waiter does not take it over") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    const pid_t owner = start_owner(path, 300ms, 1500ms, dir.path() / "ready");

    LockFile waiter(path, 300ms);
    CHECK(waiter.acquire(1s) == LockFile::Outcome::timed_out);  // more than three stale ages
    CHECK(fs::file_time_type::clock::now() - fs::last_write_time(path) < 300ms);
    CHECK(wait_for_child(owner) == 0);
    CHECK(waiter.acquire(0s) == LockFile::Outcome::acquired);
}

TEST_CASE("a lock renamed aside for a moment (a waiter checking it) is kept alive once it is back") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    LockFile owner(path, 400ms);  // refreshed every 100 ms
    REQUIRE(owner.acquire(0s) == LockFile::Outcome::acquired);
    const fs::path aside = dir.path() / "aside";
    fs::rename(path, aside);
    std::this_thread::sleep_for(300ms);  // refreshes that find no lock
    fs::rename(aside, path);
    fs::last_write_time(path, fs::file_time_type::clock::now());  // as fresh as when it left

    LockFile waiter(path, 400ms);
    CHECK(waiter.acquire(1s) == LockFile::Outcome::timed_out);  // more than two stale ages
    CHECK(owner.held());
}

TEST_CASE("a killed owner's lock is taken over at once, long before its stale age") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    const pid_t owner = start_owner(path, 60s, 1h, dir.path() / "ready");
    ::kill(owner, SIGKILL);
    CHECK(wait_for_child(owner) == 128 + SIGKILL);

    LockFile waiter(path, 60s);
    const auto start = std::chrono::steady_clock::now();
    CHECK(waiter.acquire(10s) == LockFile::Outcome::acquired_after_waiting);
    CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("an owner that stops refreshing (a stopped process) loses its lock after the stale age") {
    TempDir dir;
    const fs::path path = dir.path() / "k.lock";
    const pid_t owner = start_owner(path, 300ms, 1h, dir.path() / "ready");
    ::kill(owner, SIGSTOP);

    LockFile waiter(path, 300ms);
    const auto start = std::chrono::steady_clock::now();
    CHECK(waiter.acquire(5s) == LockFile::Outcome::acquired_after_waiting);
    CHECK(std::chrono::steady_clock::now() - start >= 200ms);  // at least the stale age less one refresh
    ::kill(owner, SIGKILL);
    wait_for_child(owner);
    CHECK(waiter.held());
}

TEST_CASE("the refresh interval is a quarter of the stale age, at most 5 s") {
    CHECK(LockFile::refresh_interval(400ms) == 100ms);
    CHECK(LockFile::refresh_interval(60s) == 5s);
    CHECK(LockFile::refresh_interval(0ms) == 1ms);
}
