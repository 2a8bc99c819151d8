#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Three archs, two entries each, aged 1..6 hours in publish order.
void populate(DiskCache& cache) {
    int age_hours = 6;
    for (const char* arch : {"gfx90a:sramecc+:xnack-", "gfx1151", "sm_90a"}) {
        for (int i = 0; i < 2; ++i) {
            const std::string seed = std::string(arch) + "#" + std::to_string(i);
            REQUIRE(cache.publish(arch, key_of(seed), entry_for(seed, 100)));
            fs::last_write_time(cache.entry_path(arch, key_of(seed)),
                                fs::file_time_type::clock::now() - std::chrono::hours(age_hours--));
        }
    }
}

std::uint64_t size_of(const DiskCache& cache, const std::string& seed) {
    for (const auto& info : cache.list()) {
        if (info.metadata.value("seed", "") == seed) return info.size;
    }
    return 0;
}

std::set<std::string> listed_seeds(const DiskCache& cache) {
    std::set<std::string> seeds;
    for (const auto& info : cache.list()) seeds.insert(info.metadata.value("seed", "?"));
    return seeds;
}

}  // namespace

TEST_CASE("list shows arch, key, size, time and metadata of every entry") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    populate(cache);
    std::ofstream(dir.path() / "v1" / "sm_90a" / "stray-file") << "not an entry";

    const auto infos = cache.list();
    REQUIRE(infos.size() == 6);
    for (const auto& info : infos) {
        const std::string seed = info.metadata.at("seed");
        CHECK(seed.starts_with(info.arch + "#"));
        CHECK(info.key == key_of(seed));
        CHECK(info.path == cache.entry_path(info.arch, info.key));
        CHECK(info.size == encode_entry(entry_for(seed, 100)).size());
        CHECK(info.modified < fs::file_time_type::clock::now() - 30min);
    }
}

TEST_CASE("verify reports damaged entries and removes them only when asked") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    populate(cache);
    const fs::path damaged = cache.entry_path("gfx1151", key_of("gfx1151#1"));
    fs::resize_file(damaged, 30);

    auto bad = cache.verify(false);
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].arch == "gfx1151");
    CHECK(bad[0].key == key_of("gfx1151#1"));
    CHECK(bad[0].error.find("truncated") != std::string::npos);
    CHECK(fs::exists(damaged));
    CHECK(cache.list().size() == 6);

    CHECK(cache.verify(true).size() == 1);
    CHECK_FALSE(fs::exists(damaged));
    CHECK(cache.verify(false).empty());
    CHECK(cache.session_stats().corrupt_entries == 1);
}

TEST_CASE("prune by age, by arch, and to a size") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    populate(cache);
    const std::uint64_t oldest_size = size_of(cache, "gfx90a:sramecc+:xnack-#0");
    const std::uint64_t newest_three_size =
        size_of(cache, "gfx1151#1") + size_of(cache, "sm_90a#0") + size_of(cache, "sm_90a#1");

    PruneResult result = cache.prune({.older_than = std::chrono::hours(5) + 30min});
    CHECK(result.removed_entries == 1);
    CHECK(result.removed_bytes == oldest_size);
    CHECK_FALSE(listed_seeds(cache).contains("gfx90a:sramecc+:xnack-#0"));

    result = cache.prune({.max_bytes = newest_three_size});
    CHECK(result.removed_entries == 2);
    CHECK(listed_seeds(cache) == std::set<std::string>{"gfx1151#1", "sm_90a#0", "sm_90a#1"});

    result = cache.prune({.arch = "sm_90a"});
    CHECK(result.removed_entries == 2);
    CHECK(listed_seeds(cache) == std::set<std::string>{"gfx1151#1"});
    CHECK(cache.session_stats().evictions == 5);
}

TEST_CASE("prune with an arch and a bound touches only that arch") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    populate(cache);
    cache.prune({.older_than = 1h, .arch = "gfx1151"});
    CHECK(listed_seeds(cache) ==
          std::set<std::string>{"gfx90a:sramecc+:xnack-#0", "gfx90a:sramecc+:xnack-#1", "sm_90a#0", "sm_90a#1"});
}

TEST_CASE("clear removes every entry and keeps the stats") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    populate(cache);
    cache.load("sm_90a", key_of("sm_90a#0"));
    cache.flush_stats();
    const PruneResult result = cache.clear();
    CHECK(result.removed_entries == 6);
    CHECK(cache.list().empty());
    CHECK(cache.stats().hits == 1);
    CHECK_FALSE(cache.load("sm_90a", key_of("sm_90a#0")));
}

TEST_CASE("leftovers of killed writers are removed once old") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("leftover");
    REQUIRE(cache.publish("gfx1151", key, entry_for("leftover", 10)));
    const fs::path shard = cache.entry_path("gfx1151", key).parent_path();
    const fs::path old_temp = shard / (key.hex() + ".tmp.12345.00ff");
    const fs::path old_lock = shard / (key.hex() + ".lock");
    const fs::path fresh_temp = shard / (key.hex() + ".tmp.12346.00ff");
    for (const auto& path : {old_temp, old_lock, fresh_temp}) std::ofstream(path) << "partial";
    fs::last_write_time(old_temp, fs::file_time_type::clock::now() - 2h);
    fs::last_write_time(old_lock, fs::file_time_type::clock::now() - 2h);

    CHECK(cache.remove_leftovers() == 2);
    CHECK_FALSE(fs::exists(old_temp));
    CHECK_FALSE(fs::exists(old_lock));
    CHECK(fs::exists(fresh_temp));
    CHECK(cache.list().size() == 1);

    // Those of the stats file and the memo, beside them, go too; arch directories never do.
    const fs::path root = Layout(dir.path()).versioned_root();
    const fs::path old_root_leftovers[] = {root / "stats.json.tmp.12345.00ff",
                                           root / "file-fingerprints.tmp.12345.00ff",
                                           root / "stats.json.lock.tmp.12345.00ff", root / "stats.json.lock"};
    const fs::path fresh_root_temp = root / "stats.json.tmp.12346.00ff";
    const fs::path arch_named_like_a_lock = Layout(dir.path()).arch_directory("odd.lock");
    fs::create_directories(arch_named_like_a_lock);
    for (const auto& path : old_root_leftovers) std::ofstream(path) << "partial";
    std::ofstream(fresh_root_temp) << "partial";
    for (const auto& path : old_root_leftovers) fs::last_write_time(path, fs::file_time_type::clock::now() - 2h);
    fs::last_write_time(arch_named_like_a_lock, fs::file_time_type::clock::now() - 2h);
    CHECK(cache.remove_leftovers() == 4);
    for (const auto& path : old_root_leftovers) CHECK_FALSE(fs::exists(path));
    CHECK(fs::exists(fresh_root_temp));
    CHECK(fs::exists(arch_named_like_a_lock));

    // Publishing into the same shard sweeps old leftovers too.
    fs::last_write_time(fresh_temp, fs::file_time_type::clock::now() - 2h);
    REQUIRE(cache.publish("gfx1151", key, entry_for("leftover", 10)));
    CHECK_FALSE(fs::exists(fresh_temp));
}
