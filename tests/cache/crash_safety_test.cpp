#include <doctest/doctest.h>

#include <random>
#include <thread>

#include <signal.h>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int writers = 40;
constexpr int publishes_per_writer = 5;  // 200 publishes in all
constexpr std::string_view arch = "sm_90a";

std::string seed_of(int writer, int publish) {
    return "crash " + std::to_string(writer) + "/" + std::to_string(publish);
}
std::size_t payload_size_of(int writer, int publish) {
    return 64 * 1024 + static_cast<std::size_t>(writer * 7919 + publish * 104729) % (512 * 1024);
}

}  // namespace

TEST_CASE("writers killed at random points never leave a torn entry") {
    TempDir dir;
    const fs::path root = dir.path() / "cache";
    std::mt19937 random(2024);
    int killed_while_running = 0;

    for (int writer = 0; writer < writers; ++writer) {
        const pid_t pid = start_child([&, writer] {
            CapturedLog log;
            DiskCache cache(config_at(root, log));
            for (int publish = 0; publish < publishes_per_writer; ++publish) {
                cache.publish(arch, key_of(seed_of(writer, publish)),
                              entry_for(seed_of(writer, publish), payload_size_of(writer, publish)));
            }
            return 0;
        });
        std::this_thread::sleep_for(std::chrono::microseconds(random() % 15000));
        ::kill(pid, SIGKILL);
        if (wait_for_child(pid) == 128 + SIGKILL) ++killed_while_running;
    }
    MESSAGE(killed_while_running << " of " << writers << " writers were killed before finishing");
    CHECK(killed_while_running > 0);

    CapturedLog log;
    DiskCache cache(config_at(root, log));
    int complete = 0;
    for (int writer = 0; writer < writers; ++writer) {
        for (int publish = 0; publish < publishes_per_writer; ++publish) {
            const auto loaded = cache.load(arch, key_of(seed_of(writer, publish)));
            if (!loaded) continue;
            ++complete;
            CHECK(*loaded == entry_for(seed_of(writer, publish), payload_size_of(writer, publish)));
        }
    }
    MESSAGE(complete << " of " << writers * publishes_per_writer << " publishes completed");
    CHECK(cache.session_stats().corrupt_entries == 0);
    CHECK(cache.verify(false).empty());
    CHECK(log.lines_at("warning") == 0);

    // Interrupted writes leave only temp files, which maintenance removes.
    cache.remove_leftovers(std::chrono::seconds(0));
    CHECK(temp_files_under(root).empty());
    CHECK(cache.list().size() == static_cast<std::size_t>(complete));
}
