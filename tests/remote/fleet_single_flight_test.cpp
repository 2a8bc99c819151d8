// One compile per key across machines: processes with their own cache directories, sharing
// only the server, as the machines of a fleet do.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "remote_support.hpp"
#include "support/redis_server.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int machine_count = 8;
constexpr int key_count = 24;

std::vector<std::string> shuffled_seeds(int machine) {
    std::vector<std::string> seeds;
    for (int i = 0; i < key_count; ++i) seeds.push_back("kernel " + std::to_string(i));
    std::shuffle(seeds.begin(), seeds.end(), std::mt19937(machine));
    return seeds;
}

}  // namespace

TEST_CASE("8 processes with 8 local directories and one server compile every key exactly once") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    RemoteSettings settings;
    settings.url = server.url();

    std::vector<pid_t> machines;
    for (int machine = 0; machine < machine_count; ++machine) {
        machines.push_back(start_child([&, machine] {
            CapturedLog log;
            DiskCache cache(remote_config_at(dir.path() / ("machine-" + std::to_string(machine)), log, settings));
            for (const std::string& seed : shuffled_seeds(machine))
                // A compile long enough for the others to pile up on its lock.
                if (request(cache, compile_log, test_arch, seed, 30ms) != compiled_entry(test_arch, seed)) return 1;
            return log.lines_at("warning") == 0 ? 0 : 2;
        }));
    }
    for (int machine = 0; machine < machine_count; ++machine) {
        CAPTURE(machine);
        CHECK(wait_for_child(machines[machine]) == 0);
    }

    const auto compiles = compiles_in(compile_log);
    CHECK(compiles.size() == key_count);
    for (const auto& [seed, count] : compiles) {
        CAPTURE(seed);
        CHECK(count == 1);
    }
    CacheStats fleet;
    for (int machine = 0; machine < machine_count; ++machine) {
        CapturedLog log;
        DiskCache cache(config_at(dir.path() / ("machine-" + std::to_string(machine)), log));
        CHECK(cache.list().size() == key_count);
        CHECK(cache.verify(false).empty());
        fleet += cache.stats();
    }
    CHECK(fleet.compiles == key_count);
    CHECK(fleet.remote_hits == (machine_count - 1) * key_count);
    CHECK(fleet.remote_misses >= key_count);  // the compiling machine's, and any that looked before
    CHECK(fleet.remote_errors == 0);
    CHECK(fleet.remote_rejected == 0);
    CHECK(fleet.remote_lock_waits > 0);
    CHECK(fleet.remote_bytes_written > 0);
    CHECK(raw_store(server.url())->list(remote_entry_prefix()).size() == key_count);
}

TEST_CASE("with a signing key, entries are stored signed and accepted by another machine holding the key") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    RemoteSettings signer;
    signer.url = server.url();
    signer.signing_key = "fleet secret";
    {
        CapturedLog log;
        DiskCache first(remote_config_at(dir.path() / "first", log, signer));
        request(first, compile_log, test_arch, "signed kernel");
    }
    CapturedLog log;
    DiskCache second(remote_config_at(dir.path() / "second", log, signer));
    CHECK(request(second, compile_log, test_arch, "signed kernel") == compiled_entry(test_arch, "signed kernel"));
    CHECK(second.session_stats().remote_hits == 1);
    CHECK(compiles_in(compile_log).at(std::string(test_arch) + "/signed kernel") == 1);
    const auto value =
        raw_store(server.url())->get(remote_entry_name(test_arch, key_of(std::string(test_arch) + "/signed kernel")));
    REQUIRE(value);
    CHECK(value->size() > encode_entry(compiled_entry(test_arch, "signed kernel")).size());
}

TEST_CASE("a unix socket reaches the same server, and database numbers keep stores apart") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    const fs::path compile_log = dir.path() / "compiles.log";
    RemoteSettings through_tcp;
    through_tcp.url = server.url();
    {
        CapturedLog log;
        DiskCache first(remote_config_at(dir.path() / "first", log, through_tcp));
        request(first, compile_log, test_arch, "shared");
    }
    RemoteSettings through_socket;
    through_socket.url = server.socket_url();
    CapturedLog socket_log;
    DiskCache second(remote_config_at(dir.path() / "second", socket_log, through_socket));
    request(second, compile_log, test_arch, "shared");
    CHECK(second.session_stats().remote_hits == 1);

    RemoteSettings other_database;
    other_database.url = server.socket_url() + "?db=3";
    CapturedLog other_log;
    DiskCache third(remote_config_at(dir.path() / "third", other_log, other_database));
    request(third, compile_log, test_arch, "shared");
    CHECK(third.session_stats().remote_hits == 0);
    CHECK(compiles_in(compile_log).at(std::string(test_arch) + "/shared") == 2);
    CHECK(raw_store(server.url())->list(remote_entry_prefix()).size() == 1);
    CHECK(raw_store(server.socket_url() + "?db=3")->list(remote_entry_prefix()).size() == 1);
    CHECK(raw_store(server.url().substr(0, server.url().size() - 1) + "5")->list(remote_entry_prefix()).empty());
}

TEST_CASE("metadata with invalid UTF-8 (a stray byte in a compiler log) is stored, fetched and matched as U+FFFD") {
    TempDir dir;
    fajit::testing::RedisServer server(dir.path() / "redis");
    RemoteSettings settings;
    settings.url = server.url();
    // The compiler identity is required by fetches, so it must match as stored too.
    const nlohmann::json required = {{"arch", test_arch}, {"compiler", "fake-compiler \xfe"}};
    Entry compiled = compiled_entry(test_arch, "stray byte");
    compiled.metadata.update(required);
    compiled.metadata["log"] = "warning: \xff in a path";
    const Key key = key_of("stray byte");
    int compiles = 0;
    const auto compile = [&] {
        ++compiles;
        return compiled;
    };

    CapturedLog log;
    DiskCache first(remote_config_at(dir.path() / "first", log, settings));
    CHECK(first.get_or_create(test_arch, key, compile, required) == compiled);
    CHECK(first.session_stats().remote_errors == 0);
    CHECK(first.holds(test_arch, key));
    CHECK_FALSE(raw_store(server.url())->get(remote_lock_name(test_arch, key)));

    CapturedLog other_log;
    DiskCache second(remote_config_at(dir.path() / "second", other_log, settings));
    const Entry fetched = second.get_or_create(test_arch, key, compile, required);
    CHECK(second.session_stats().remote_hits == 1);
    CHECK(compiles == 1);
    CHECK(fetched.metadata["log"] == "warning: \xef\xbf\xbd in a path");
    CHECK(fetched.payload == compiled.payload);
}
