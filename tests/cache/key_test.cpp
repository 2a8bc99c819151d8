#include <doctest/doctest.h>

#include <array>
#include <set>
#include <string>
#include <utility>

#include "cache/key.hpp"

using fajit::cache::Key;
using fajit::cache::KeyBuilder;

namespace {

using Fields = std::array<std::pair<std::string, std::string>, 4>;

const Fields reference_fields = {{{"spec", "d128-f16-q64-k64-causal-br"},
                                  {"arch", "gfx90a:sramecc+:xnack-"},
                                  {"toolchain", "hiprtc 5.7.1 comgr 2.6"},
                                  {"options", "-O3 -mcumode"}}};

Key key_from(const Fields& fields) {
    KeyBuilder builder;
    for (const auto& [field, value] : fields) builder.add(field, value);
    return builder.finish();
}

}  // namespace

TEST_CASE("the same fields give the same key") {
    CHECK(key_from(reference_fields) == key_from(reference_fields));
    KeyBuilder builder;
    builder.add("spec", "x");
    CHECK(builder.finish() == builder.finish());
}

TEST_CASE("every field's value and name changes the key") {
    const Key reference = key_from(reference_fields);
    std::set<std::string> seen = {reference.hex()};
    for (std::size_t i = 0; i < reference_fields.size(); ++i) {
        Fields changed_value = reference_fields;
        changed_value[i].second += "!";
        Fields changed_name = reference_fields;
        changed_name[i].first += "!";
        CAPTURE(reference_fields[i].first);
        CHECK(seen.insert(key_from(changed_value).hex()).second);
        CHECK(seen.insert(key_from(changed_name).hex()).second);
    }
    // A gfx906 kernel must never serve a gfx908 (or the same chip with other features).
    Fields other_arch = reference_fields;
    other_arch[1].second = "gfx90a:sramecc+:xnack+";
    CHECK(key_from(other_arch) != reference);
}

TEST_CASE("moving bytes across a field boundary changes the key") {
    CHECK(KeyBuilder().add("ab", "c").finish() != KeyBuilder().add("a", "bc").finish());
    CHECK(KeyBuilder().add("f", "ab").add("g", "c").finish() != KeyBuilder().add("f", "a").add("g", "bc").finish());
    CHECK(KeyBuilder().add("ab", "").finish() != KeyBuilder().add("a", "b").finish());
    CHECK(KeyBuilder().add("a", "b").add("c", "d").finish() != KeyBuilder().add("c", "d").add("a", "b").finish());
    CHECK(KeyBuilder().finish() != KeyBuilder().add("", "").finish());
}

TEST_CASE("hex is 32 lowercase digits and parses back") {
    const Key key = key_from(reference_fields);
    const std::string hex = key.hex();
    REQUIRE(hex.size() == 32);
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(Key::from_hex(hex) == key);

    Key known;
    known.digest = {0x00, 0x01, 0x0a, 0xff, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0};
    CHECK(known.hex() == "00010aff102030405060708090a0b0c0");
    CHECK(Key::from_hex("00010AFF102030405060708090A0B0C0") == known);
    CHECK_FALSE(Key::from_hex(hex.substr(1)));
    CHECK_FALSE(Key::from_hex(hex + "0"));
    CHECK_FALSE(Key::from_hex("g0010aff102030405060708090a0b0c0"));
}
