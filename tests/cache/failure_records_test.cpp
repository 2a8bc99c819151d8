// Failure records: stored beside the entries of their arch, validated on every read, and seen
// by list, verify and clear as entries are.
#include <doctest/doctest.h>

#include <fstream>

#include "cache/disk_cache.hpp"
#include "cache/failure_record.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view arch = "gfx1151";

nlohmann::json details_for(std::string_view name) {
    return {
        {"spec", name}, {"family", "wmma-gfx11"}, {"summary", std::string("compiler said no to ") + std::string(name)}};
}

}  // namespace

TEST_CASE("a failure record is found by a later cache, and is neither an entry nor a hit or miss") {
    TempDir dir;
    CapturedLog log;
    {
        DiskCache first(config_at(dir.path(), log));
        REQUIRE(first.record_failure(arch, key_of("variant"), details_for("variant")));
    }
    DiskCache second(config_at(dir.path(), log));
    const auto found = second.find_failure(arch, key_of("variant"));
    REQUIRE(found);
    CHECK(*found == details_for("variant"));
    CHECK_FALSE(second.find_failure(arch, key_of("another variant")));
    CHECK_FALSE(second.find_failure("gfx942", key_of("variant")));

    CHECK(second.failure_path(arch, key_of("variant")) ==
          dir.path() / "v1" / arch / "failures" / key_of("variant").hex());
    CHECK(second.list().empty());
    CHECK_FALSE(second.load(arch, key_of("variant")));
    const auto failures = second.list_failures();
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].arch == arch);
    CHECK(failures[0].key == key_of("variant"));
    CHECK(failures[0].metadata == details_for("variant"));
    CHECK(failures[0].size == encode_failure_record(details_for("variant")).size());
    CHECK(second.session_stats().hits == 0);
    CHECK(second.session_stats().misses == 1);  // the load() above, not the failure lookups
    CHECK(temp_files_under(dir.path()).empty());
}

TEST_CASE("a damaged failure record is ignored, removed, counted as corrupt and reported by verify") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    REQUIRE(cache.record_failure(arch, key_of("sound"), details_for("sound")));
    REQUIRE(cache.record_failure(arch, key_of("flipped"), details_for("flipped")));
    REQUIRE(cache.record_failure(arch, key_of("with payload"), details_for("with payload")));
    const fs::path flipped = cache.failure_path(arch, key_of("flipped"));
    auto bytes = read_bytes(flipped);
    bytes.back() ^= std::byte{0x20};
    write_bytes(flipped, bytes);
    // A sound entry is not a sound failure record.
    const fs::path with_payload = cache.failure_path(arch, key_of("with payload"));
    write_bytes(with_payload, encode_entry(entry_for("with payload", 16)));

    const auto bad = cache.verify_failures(false);
    REQUIRE(bad.size() == 2);
    for (const auto& item : bad) {
        CHECK(item.arch == arch);
        CHECK((item.path == flipped || item.path == with_payload));
        CHECK(item.error.find(item.path == flipped ? "checksum mismatch" : "no payload") != std::string::npos);
    }
    CHECK(fs::exists(flipped));
    CHECK(cache.verify(false).empty());  // entries are checked apart

    CHECK_FALSE(cache.find_failure(arch, key_of("flipped")));
    CHECK_FALSE(fs::exists(flipped));
    CHECK(log.text().find("removing corrupt failure record " + flipped.string()) != std::string::npos);
    CHECK(cache.session_stats().corrupt_entries == 1);

    CHECK(cache.verify_failures(true).size() == 1);
    CHECK_FALSE(fs::exists(with_payload));
    CHECK(cache.session_stats().corrupt_entries == 2);
    CHECK(cache.verify_failures(false).empty());
    CHECK(cache.find_failure(arch, key_of("sound")));
}

TEST_CASE("failure details must be a JSON object") {
    CHECK_THROWS_AS(encode_failure_record(nlohmann::json::array({1, 2})), std::invalid_argument);
    CHECK(decode_failure_record(encode_entry(Entry{"a string", {}})).error == "failure details are not a JSON object");
    CHECK(decode_failure_record(encode_failure_record(details_for("x"))).details == details_for("x"));
}

TEST_CASE("clear removes failure records with the entries, of every arch or of one; prune leaves them") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    for (const char* each : {"gfx1151", "gfx942", "sm_90a"}) {
        REQUIRE(cache.publish(each, key_of(each), entry_for(each, 64)));
        REQUIRE(cache.record_failure(each, key_of(each), details_for(each)));
    }
    CHECK(cache.prune({}).removed_entries == 3);
    CHECK(cache.list_failures().size() == 3);

    REQUIRE(cache.publish("sm_90a", key_of("sm_90a"), entry_for("sm_90a", 64)));
    const PruneResult one_arch = cache.clear("gfx942");
    CHECK(one_arch.removed_entries == 0);
    CHECK(one_arch.removed_failure_records == 1);
    CHECK(cache.list_failures().size() == 2);

    const PruneResult all = cache.clear();
    CHECK(all.removed_entries == 1);
    CHECK(all.removed_failure_records == 2);
    CHECK(cache.list_failures().empty());
    CHECK_FALSE(cache.find_failure("sm_90a", key_of("sm_90a")));
}

TEST_CASE("an unwritable root: recording fails with one warning shared with publishes") {
    TempDir dir;
    std::ofstream(dir.path() / "plain-file") << "x";
    CapturedLog log;
    DiskCache cache(config_at(dir.path() / "plain-file" / "cache", log));
    CHECK_FALSE(cache.record_failure(arch, key_of("a"), details_for("a")));
    CHECK_FALSE(cache.record_failure(arch, key_of("b"), details_for("b")));
    CHECK_FALSE(cache.publish(arch, key_of("c"), entry_for("c", 8)));
    CHECK_FALSE(cache.find_failure(arch, key_of("a")));
    CHECK(log.lines_at("warning") == 1);
    CHECK(log.text().find("cannot store " + cache.failure_path(arch, key_of("a")).string()) != std::string::npos);
}

TEST_CASE("a disabled cache records and finds nothing") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path(), log);
    config.enabled = false;
    DiskCache cache(config);
    CHECK_FALSE(cache.record_failure(arch, key_of("a"), details_for("a")));
    CHECK_FALSE(cache.find_failure(arch, key_of("a")));
    CHECK(cache.list_failures().empty());
    CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("a killed writer's temp file among failure records is removed once old") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    REQUIRE(cache.record_failure(arch, key_of("a"), details_for("a")));
    const fs::path leftover = cache.failure_path(arch, key_of("b")).string() + ".tmp.12345.00ff";
    std::ofstream(leftover) << "partial";
    CHECK(cache.remove_leftovers() == 0);
    fs::last_write_time(leftover, fs::file_time_type::clock::now() - 2h);
    CHECK(cache.remove_leftovers() == 1);
    CHECK_FALSE(fs::exists(leftover));
    CHECK(cache.list_failures().size() == 1);
}
