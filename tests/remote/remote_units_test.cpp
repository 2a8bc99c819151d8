// The pieces of the remote tier that need no server: addresses, names and signed values.
#include <doctest/doctest.h>

#include <stdexcept>

#include "cache/remote_tier.hpp"
#include "cache/remote_value.hpp"
#include "remote_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;

TEST_CASE("remote addresses: redis:// with host, port and database, unix:// with a path; anything else is refused") {
    const RemoteAddress full = parse_remote_address("redis://cache.internal:6390/3");
    CHECK(full.host == "cache.internal");
    CHECK(full.port == 6390);
    CHECK(full.database == 3);
    const RemoteAddress plain = parse_remote_address("redis://10.0.0.7");
    CHECK(plain.port == 6379);
    CHECK(plain.database == 0);
    const RemoteAddress socket = parse_remote_address("unix:///run/redis/redis.sock?db=2");
    CHECK(socket.socket_path == "/run/redis/redis.sock");
    CHECK(socket.database == 2);
    CHECK(to_string(full) == "redis://cache.internal:6390/3");
    for (const char* bad : {"http://host:6379", "redis://", "redis://host:0", "redis://host:70000", "redis://host:port",
                            "redis://host:6379/x", "unix://relative.sock"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_remote_address(bad), std::invalid_argument);
    }
}

TEST_CASE("remote entry names carry the arch and key, and parse back") {
    const Key key = key_of("a kernel");
    const std::string name = remote_entry_name(test_arch, key);
    const auto parsed = parse_remote_entry_name(name);
    REQUIRE(parsed);
    CHECK(parsed->first == test_arch);
    CHECK(parsed->second == key);
    CHECK(remote_lock_name(test_arch, key) != name);
    CHECK_FALSE(parse_remote_entry_name(remote_lock_name(test_arch, key)));
    CHECK_FALSE(parse_remote_entry_name(remote_entry_prefix() + "sm_80:not-a-key"));
}

TEST_CASE("a signed value opens only with its key, under its own name, and unchanged") {
    const std::vector<std::byte> entry = encode_entry(compiled_entry(test_arch, "signed"));
    const std::string name = remote_entry_name(test_arch, key_of("signed"));
    const std::vector<std::byte> sealed = seal_remote_value(name, entry, "fleet secret");
    CHECK(sealed.size() > entry.size());

    const UnsealedValue opened = unseal_remote_value(name, sealed, "fleet secret");
    REQUIRE(opened.entry_bytes);
    CHECK(*opened.entry_bytes == entry);
    CHECK_FALSE(unseal_remote_value(name, sealed, "another secret").entry_bytes);
    CHECK_FALSE(
        unseal_remote_value(remote_entry_name(other_arch, key_of("signed")), sealed, "fleet secret").entry_bytes);
    std::vector<std::byte> changed = sealed;
    changed.back() ^= std::byte{1};
    CHECK_FALSE(unseal_remote_value(name, changed, "fleet secret").entry_bytes);
    const UnsealedValue unsigned_value = unseal_remote_value(name, entry, "fleet secret");
    CHECK_FALSE(unsigned_value.entry_bytes);
    CHECK(unsigned_value.error.find("not signed") != std::string::npos);

    // Without a key the value is the entry itself, and a signed one is read without its tag.
    CHECK(seal_remote_value(name, entry, "") == entry);
    CHECK(*unseal_remote_value(name, entry, "").entry_bytes == entry);
    CHECK(*unseal_remote_value(name, sealed, "").entry_bytes == entry);
}
