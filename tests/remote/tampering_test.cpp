// Values changed in the store, as a faulty or hostile writer would change them: each is
// rejected and counted, the kernel is compiled locally, and nothing rejected lands on disk.
#include <doctest/doctest.h>

#include "cache/remote_tier.hpp"
#include "cache/remote_value.hpp"
#include "remote_support.hpp"
#include "support/redis_server.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;

namespace {

std::string seed_name(std::string_view arch, std::string_view seed) {
    return std::string(arch) + "/" + std::string(seed);
}

std::string name_of(std::string_view arch, std::string_view seed) {
    return remote_entry_name(arch, key_of(seed_name(arch, seed)));
}

// Each tampering: the seed whose value it replaces, and how.
struct Tampering {
    std::string seed;
    std::function<std::vector<std::byte>(std::vector<std::byte>)> change;
};

// Stores every seed through one machine, tampers with each stored value, then has a second
// machine ask for them all; returns that machine's stats.
CacheStats fetch_tampered(const std::vector<Tampering>& tamperings, const RemoteSettings& settings, const fs::path& dir,
                          const fs::path& compile_log) {
    {
        CapturedLog log;
        DiskCache writer(remote_config_at(dir / "writer", log, settings));
        for (const Tampering& tampering : tamperings) request(writer, compile_log, test_arch, tampering.seed);
    }
    const auto store = raw_store(settings.url);
    for (const Tampering& tampering : tamperings) {
        const std::string name = name_of(test_arch, tampering.seed);
        auto value = store->get(name);
        REQUIRE(value);
        store->put(name, tampering.change(std::move(*value)));
    }
    CapturedLog log;
    DiskCache reader(remote_config_at(dir / "reader", log, settings));
    for (const Tampering& tampering : tamperings) {
        CAPTURE(tampering.seed);
        CHECK(request(reader, compile_log, test_arch, tampering.seed) == compiled_entry(test_arch, tampering.seed));
        CHECK(compiles_in(compile_log).at(seed_name(test_arch, tampering.seed)) == 2);
    }
    CHECK(log.lines_at("warning") == tamperings.size());
    CHECK(reader.verify(false).empty());
    // The reader's compile replaced each bad value: a third machine gets sound entries.
    CapturedLog third_log;
    DiskCache third(remote_config_at(dir / "third", third_log, settings));
    for (const Tampering& tampering : tamperings) request(third, compile_log, test_arch, tampering.seed);
    CHECK(third.session_stats().remote_hits == tamperings.size());
    CHECK(third.session_stats().remote_rejected == 0);
    return reader.session_stats();
}

}  // namespace

TEST_CASE("a flipped byte, a truncated value and another arch's entry under the key are rejected and recompiled") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    const auto store = raw_store(server.url());
    // A sound entry of another arch, to move under this arch's key.
    const std::vector<std::byte> foreign = encode_entry(compiled_entry(other_arch, "moved"));

    const std::vector<Tampering> tamperings = {
        {"flipped",
         [](std::vector<std::byte> value) {
             value[value.size() / 2] ^= std::byte{0x40};
             return value;
         }},
        {"truncated",
         [](std::vector<std::byte> value) {
             value.resize(value.size() - 100);
             return value;
         }},
        {"moved", [&](std::vector<std::byte>) { return foreign; }},
        {"empty", [](std::vector<std::byte>) { return std::vector<std::byte>{}; }},
    };
    const CacheStats reader = fetch_tampered(tamperings, settings, dir.path(), dir.path() / "compiles.log");
    CHECK(reader.remote_rejected == tamperings.size());
    CHECK(reader.remote_hits == 0);
    CHECK(reader.compiles == tamperings.size());
}

TEST_CASE("with a signing key, unsigned and wrongly signed values are rejected and recompiled") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    settings.signing_key = "fleet secret";
    const auto unsealed = [](std::string seed) {
        return [seed](std::vector<std::byte> value) {
            return *unseal_remote_value(name_of(test_arch, seed), value, "fleet secret").entry_bytes;
        };
    };
    const std::vector<Tampering> tamperings = {
        // A writer without the key stores a sound entry, unsigned.
        {"unsigned", unsealed("unsigned")},
        // One with another key signs it; so does one that signed it for another name.
        {"other key",
         [&](std::vector<std::byte> value) {
             return seal_remote_value(name_of(test_arch, "other key"), unsealed("other key")(std::move(value)),
                                      "a guess");
         }},
        {"other name",
         [&](std::vector<std::byte> value) {
             return seal_remote_value(name_of(other_arch, "other name"), unsealed("other name")(std::move(value)),
                                      "fleet secret");
         }},
        // A changed payload behind the old signature.
        {"changed",
         [](std::vector<std::byte> value) {
             value.back() ^= std::byte{1};
             return value;
         }},
    };
    const CacheStats reader = fetch_tampered(tamperings, settings, dir.path(), dir.path() / "compiles.log");
    CHECK(reader.remote_rejected == tamperings.size());
    CHECK(reader.compiles == tamperings.size());
}

TEST_CASE("an entry evicted as unusable is produced afresh, not fetched again, and replaces the store's copy") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    const fs::path compile_log = dir.path() / "compiles.log";
    const auto store = raw_store(server.url());
    // A sound entry under the key whose code is not the seed's, as a broken producer's would be.
    const std::string name = name_of(test_arch, "loaded");
    store->put(name, encode_entry(compiled_entry(test_arch, "stale")));

    CapturedLog log;
    DiskCache cache(remote_config_at(dir.path() / "machine", log, settings));
    CHECK(request(cache, compile_log, test_arch, "loaded") == compiled_entry(test_arch, "stale"));
    CHECK(cache.session_stats().remote_hits == 1);
    cache.evict(test_arch, key_of(seed_name(test_arch, "loaded")));
    CHECK(request(cache, compile_log, test_arch, "loaded") == compiled_entry(test_arch, "loaded"));
    CHECK(compiles_in(compile_log).at(seed_name(test_arch, "loaded")) == 1);
    CHECK(cache.session_stats().remote_hits == 1);
    const auto stored = store->get(name);
    REQUIRE(stored);
    CHECK(*stored == encode_entry(compiled_entry(test_arch, "loaded")));
}
