// The selection settings: FAJIT_FAMILY, FAJIT_FORCE_FALLBACK, FAJIT_TILE and FAJIT_STRICT,
// from the environment and from overrides (what the C ABI passes).
#include <doctest/doctest.h>

#include <cstdlib>

#include "fajit/options.hpp"

using namespace fajit;

TEST_CASE("selection settings parse from overrides") {
    const auto options = Options::from_environment({{"FAJIT_FAMILY", "wmma-gfx11"},
                                                    {"FAJIT_FORCE_FALLBACK", "1"},
                                                    {"FAJIT_TILE", "waves=2,bq=32"},
                                                    {"FAJIT_STRICT", "yes"}});
    CHECK(options.family == "wmma-gfx11");
    CHECK(options.force_fallback);
    CHECK(options.tile == TilePin{32, std::nullopt, 2});
    CHECK(options.strict);
    CHECK_FALSE(Options::from_environment({{"FAJIT_FAMILY", "auto"}}).family);
}

TEST_CASE("overrides replace the environment; an empty override unsets") {
    setenv("FAJIT_FAMILY", "scalar", 1);
    CHECK(Options::from_environment().family == "scalar");
    CHECK(Options::from_environment({{"FAJIT_FAMILY", "wmma-gfx11"}}).family == "wmma-gfx11");
    CHECK_FALSE(Options::from_environment({{"FAJIT_FAMILY", ""}}).family);
    unsetenv("FAJIT_FAMILY");
}

TEST_CASE("malformed selection settings and unknown names are InvalidOption naming them") {
    const std::pair<const char*, const char*> bad[] = {
        {"FAJIT_FAMILY", "mfma"},      {"FAJIT_FORCE_FALLBACK", "2"}, {"FAJIT_STRICT", "sure"},
        {"FAJIT_TILE", "bq=64,bq=32"}, {"FAJIT_TILE", "bq=0"},        {"FAJIT_TILE", "rows=4"},
        {"FAJIT_TILE", "bq=64;bk=32"}, {"FAJIT_TILE", ","},           {"FAJIT_CACHE_DIRECTORY", "/tmp"},
    };
    for (const auto& [name, value] : bad) {
        CAPTURE(name);
        CAPTURE(value);
        const std::string named = std::string(name) + "=" + value;
        CHECK_THROWS_WITH_AS(Options::from_environment({{name, value}}), doctest::Contains(named.c_str()),
                             InvalidOption);
    }
}

TEST_CASE("tile pins print as they parse") {
    CHECK(to_string(*parse_tile_pin("bk=128,bq=64,waves=4")) == "bq=64,bk=128,waves=4");
    CHECK(to_string(*parse_tile_pin("waves=1")) == "waves=1");
    CHECK_FALSE(parse_tile_pin(""));
}
