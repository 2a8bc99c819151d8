#include <doctest/doctest.h>

#include <random>

#include "cache/disk_cache.hpp"
#include "cache/layout.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;

TEST_CASE("publish then load returns the entry from the documented path") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("layout");
    const Entry entry = entry_for("layout", 4096);
    const std::string arch = "gfx90a:sramecc+:xnack-";

    REQUIRE(cache.publish(arch, key, entry));
    const fs::path expected = dir.path() / "v1" / arch / key.hex().substr(0, 2) / key.hex();
    CHECK(cache.entry_path(arch, key) == expected);
    CHECK(fs::is_regular_file(expected));
    CHECK(fs::file_size(expected) == encode_entry(entry).size());
    CHECK(temp_files_under(dir.path()).empty());

    const auto loaded = cache.load(arch, key);
    REQUIRE(loaded);
    CHECK(*loaded == entry);
    CHECK(cache.session_stats().hits == 1);
}

TEST_CASE("full arch names keep targets apart") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("shared key");
    REQUIRE(cache.publish("gfx90a:sramecc+:xnack-", key, entry_for("a", 10)));
    CHECK_FALSE(cache.load("gfx90a:sramecc+:xnack+", key));
    CHECK_FALSE(cache.load("gfx90a", key));
    CHECK_FALSE(cache.load("gfx908:sramecc+:xnack-", key));
    CHECK_FALSE(cache.load("sm_90a", key));
    REQUIRE(cache.publish("sm_90a", key, entry_for("b", 10)));
    CHECK(cache.load("sm_90a", key) == entry_for("b", 10));
    CHECK(cache.load("gfx90a:sramecc+:xnack-", key) == entry_for("a", 10));
}

TEST_CASE("arch names are escaped only where a file name needs it") {
    CHECK(escape_arch("gfx942:sramecc+:xnack-") == "gfx942:sramecc+:xnack-");
    CHECK(escape_arch("sm_90a") == "sm_90a");
    CHECK(escape_arch("a/b") == "a%2fb");
    CHECK(escape_arch("50%") == "50%25");
    CHECK(escape_arch("..") == "%2e.");
    CHECK(escape_arch(".") == "%2e");
    CHECK(escape_arch("") == "%");
    CHECK(escape_arch("x y\n") == "x%20y%0a");

    std::mt19937 random(7);
    for (int round = 0; round < 500; ++round) {
        std::string arch(random() % 12, '\0');
        for (char& c : arch) c = static_cast<char>(random() % 256);
        const std::string escaped = escape_arch(arch);
        CAPTURE(escaped);
        CHECK(escaped.find('/') == std::string::npos);
        CHECK(escaped != ".");
        CHECK(escaped != "..");
        CHECK_FALSE(escaped.starts_with('.'));
        CHECK(unescape_arch(escaped) == arch);
    }
    // Names escape_arch would not produce do not map to an arch, so listings stay unambiguous.
    CHECK_FALSE(unescape_arch("%41"));
    CHECK_FALSE(unescape_arch("a%2"));
    CHECK_FALSE(unescape_arch("a b"));
}

TEST_CASE("an arch containing a slash stays one directory inside the root") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    const Key key = key_of("slash");
    REQUIRE(cache.publish("../evil/arch", key, entry_for("slash", 10)));
    CHECK(cache.entry_path("../evil/arch", key).parent_path().parent_path() ==
          dir.path() / "v1" / "%2e.%2fevil%2farch");
    CHECK(cache.load("../evil/arch", key));
    CHECK(cache.list().at(0).arch == "../evil/arch");
}
