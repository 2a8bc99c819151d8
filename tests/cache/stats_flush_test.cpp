// Counts reach the stats file without an explicit flush: at normal exit, with the cache
// never destroyed, and from the timer, before a kill.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "cache/disk_cache.hpp"
#include "cache/stats_file.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view arch = "gfx1151";

// Two misses, one compile and one hit.
void count_some_events(DiskCache& cache) {
    cache.load(arch, key_of("absent"));
    cache.get_or_create(arch, key_of("made"), [] { return entry_for("made", 64); });
    cache.get_or_create(arch, key_of("made"), [] { return entry_for("made", 64); });
}

void check_events_on_disk(const fs::path& root) {
    const CacheStats persisted = read_stats_file(Layout(root).stats_path());
    CHECK(persisted.misses == 2);
    CHECK(persisted.compiles == 1);
    CHECK(persisted.hits == 1);
}

}  // namespace

TEST_CASE("a process that exits normally without destroying its cache leaves its counts on disk") {
    TempDir dir;
    const fs::path root = dir.path() / "cache";
    const int status = run_in_child([&]() -> int {
        CapturedLog log;
        // Leaked, as by a host process that never tears down; exit() runs no destructor here.
        auto* cache = new DiskCache(config_at(root, log));
        count_some_events(*cache);
        std::exit(0);
    });
    CHECK(status == 0);
    check_events_on_disk(root);
}

TEST_CASE("a process killed a while after counting has had its counts flushed by the timer") {
    TempDir dir;
    const fs::path root = dir.path() / "cache";
    const fs::path counted = dir.path() / "counted";
    const pid_t child = start_child([&] {
        CapturedLog log;
        DiskCache cache(config_at(root, log));
        count_some_events(cache);
        std::ofstream(counted) << "done";
        std::this_thread::sleep_for(1h);
        return 0;
    });
    while (!fs::exists(counted)) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(2500ms);  // the flush interval (1 s) and a margin for a busy machine
    ::kill(child, SIGKILL);
    CHECK(wait_for_child(child) == 128 + SIGKILL);
    check_events_on_disk(root);
}

TEST_CASE("counts are flushed by the timer while the cache stays in use") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    count_some_events(cache);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (read_stats_file(Layout(dir.path()).stats_path()).hits == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    check_events_on_disk(dir.path());
}
