#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fajit/options.hpp"

using namespace fajit;

namespace {
// Sets or clears variables for one test and restores them after.
class ScopedEnvironment {
public:
    ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> values) {
        for (const auto& [name, value] : values) {
            const char* old = std::getenv(name);
            saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
            if (value)
                setenv(name, value, 1);
            else
                unsetenv(name);
        }
    }
    ~ScopedEnvironment() {
        for (const auto& [name, value] : saved_) {
            if (value)
                setenv(name.c_str(), value->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};
}  // namespace

TEST_CASE("cache directory: FAJIT_CACHE_DIR, else XDG_CACHE_HOME, else HOME, else none") {
    {
        ScopedEnvironment env{{"FAJIT_CACHE_DIR", "/a"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}};
        CHECK(Options::from_environment().cache_dir == "/a");
    }
    {
        ScopedEnvironment env{{"FAJIT_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}};
        CHECK(Options::from_environment().cache_dir == "/x/fa-jit");
    }
    {
        ScopedEnvironment env{{"FAJIT_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", nullptr}, {"HOME", "/h"}};
        CHECK(Options::from_environment().cache_dir == "/h/.cache/fa-jit");
    }
    {
        ScopedEnvironment env{{"FAJIT_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", nullptr}, {"HOME", nullptr}};
        CHECK(Options::from_environment().cache_dir.empty());
    }
}

TEST_CASE("the bound on loaded kernels: a count of at least one") {
    CHECK(Options::from_environment({{"FAJIT_MAX_LOADED_KERNELS", "3"}}).max_loaded_kernels == 3);
    for (const char* bad : {"0", "-1", "many", "4k"})
        CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_MAX_LOADED_KERNELS", bad}}),
                             doctest::Contains(("FAJIT_MAX_LOADED_KERNELS=" + std::string(bad)).c_str()),
                             InvalidOption);
}

TEST_CASE("the decode split count: 0 plans per call, 1..64 pins it") {
    CHECK(Options::from_environment({}).decode_splits == 0);
    CHECK(Options::from_environment({{"FAJIT_DECODE_SPLITS", "8"}}).decode_splits == 8);
    for (const char* bad : {"-1", "65", "four", "8x"})
        CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_DECODE_SPLITS", bad}}),
                             doctest::Contains(("FAJIT_DECODE_SPLITS=" + std::string(bad)).c_str()), InvalidOption);
}

TEST_CASE("sizes, flags and levels parse, and bad values name their variable") {
    CHECK(parse_byte_size("4096") == 4096u);
    CHECK(parse_byte_size("2G") == (2ull << 30));
    CHECK(parse_byte_size("512MiB") == (512ull << 20));
    CHECK_FALSE(parse_byte_size("lots"));
    CHECK_FALSE(parse_byte_size("5X"));
    CHECK_FALSE(parse_byte_size("99999999999T"));
    {
        ScopedEnvironment env{
            {"FAJIT_CACHE_MAX_SIZE", "1M"}, {"FAJIT_CACHE_DISABLE", "1"}, {"FAJIT_LOG_LEVEL", "debug"}};
        const auto options = Options::from_environment();
        CHECK(options.cache_max_bytes == (1u << 20));
        CHECK(options.cache_disabled);
        CHECK(options.log_level == "debug");
    }
    {
        ScopedEnvironment env{{"FAJIT_CACHE_MAX_SIZE", "huge"}};
        CHECK_THROWS_WITH_AS(Options::from_environment(), doctest::Contains("FAJIT_CACHE_MAX_SIZE=huge"),
                             std::invalid_argument);
    }
    {
        ScopedEnvironment env{{"FAJIT_CACHE_DISABLE", "maybe"}};
        CHECK_THROWS_WITH_AS(Options::from_environment(), doctest::Contains("FAJIT_CACHE_DISABLE=maybe"),
                             std::invalid_argument);
    }
    {
        ScopedEnvironment env{{"FAJIT_LOG_LEVEL", "chatty"}};
        CHECK_THROWS_WITH_AS(Options::from_environment(), doctest::Contains("FAJIT_LOG_LEVEL=chatty"),
                             std::invalid_argument);
    }
}

TEST_CASE("the fleet cache's settings: an address, a key, timeouts and a back-off in milliseconds") {
    const Options defaults = Options::from_environment({{"FAJIT_REMOTE_CACHE", ""}, {"FAJIT_REMOTE_CACHE_KEY", ""}});
    CHECK(defaults.remote_cache.empty());
    CHECK(defaults.remote_cache_key.empty());
    const Options options = Options::from_environment({{"FAJIT_REMOTE_CACHE", "redis://cache:6390/2"},
                                                       {"FAJIT_REMOTE_CACHE_KEY", "secret"},
                                                       {"FAJIT_REMOTE_CACHE_CONNECT_TIMEOUT", "250"},
                                                       {"FAJIT_REMOTE_CACHE_TIMEOUT", "750"},
                                                       {"FAJIT_REMOTE_CACHE_BACKOFF", "5000"}});
    CHECK(options.remote_cache == "redis://cache:6390/2");
    CHECK(options.remote_cache_key == "secret");
    CHECK(options.remote_connect_timeout == std::chrono::milliseconds(250));
    CHECK(options.remote_operation_timeout == std::chrono::milliseconds(750));
    CHECK(options.remote_backoff == std::chrono::seconds(5));
    CHECK(Options::from_environment({{"FAJIT_REMOTE_CACHE", "unix:///run/redis.sock"}}).remote_cache ==
          "unix:///run/redis.sock");
    for (const char* bad : {"http://cache:6379", "redis://cache:port", "unix://relative"})
        CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_REMOTE_CACHE", bad}}),
                             doctest::Contains(("FAJIT_REMOTE_CACHE=" + std::string(bad)).c_str()), InvalidOption);
    for (const char* bad : {"0", "-5", "1s"})
        CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_REMOTE_CACHE_TIMEOUT", bad}}),
                             doctest::Contains(("FAJIT_REMOTE_CACHE_TIMEOUT=" + std::string(bad)).c_str()),
                             InvalidOption);
}
