#include <doctest/doctest.h>

#include <fstream>

#include <sys/mount.h>
#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view arch = "gfx942:sramecc+:xnack-";

// What every unwritable-storage scenario must show: entries still come back, one warning,
// no stray files, and each key's store error names the cause. Returns a description of the
// first failed expectation, empty if none.
std::string exercise_unwritable_cache(const fs::path& root, const fs::path& watched, std::errc cause) {
    CapturedLog log;
    DiskCache cache(config_at(root, log));
    int calls = 0;
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 3; ++i) {
            const std::string seed = "unwritable " + std::to_string(i);
            const Entry entry = cache.get_or_create(arch, key_of(seed), [&] {
                ++calls;
                return entry_for(seed, 200);
            });
            if (entry != entry_for(seed, 200)) return "get_or_create returned wrong bytes";
        }
    }
    if (calls != 6) return "expected a compile per request, got " + std::to_string(calls);
    if (cache.publish(arch, key_of("direct"), entry_for("direct", 10))) return "publish claimed success";
    if (cache.load(arch, key_of("direct"))) return "load found an entry";
    if (log.lines_at("warning") != 1) return "expected exactly one warning, log was:\n" + log.text();
    if (cache.session_stats().publish_failures != 7) return "publish failures not counted";
    for (const char* seed : {"unwritable 0", "direct"}) {
        const std::error_code error = cache.store_error(arch, key_of(seed));
        if (error != cause) return std::string(seed) + ": store error is '" + error.message() + "'";
    }
    cache.flush_stats();
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(watched, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
        if (it->is_regular_file()) return "a file appeared: " + it->path().string();
    }
    return {};
}

}  // namespace

TEST_CASE("a root below a regular file (unwritable even for root) degrades to compiling") {
    TempDir dir;
    std::ofstream(dir.path() / "plain-file") << "x";
    CHECK(exercise_unwritable_cache(dir.path() / "plain-file" / "cache", dir.path() / "plain-file",
                                    std::errc::not_a_directory) == "");
    CHECK(fs::is_regular_file(dir.path() / "plain-file"));
}

TEST_CASE("a read-only cache directory degrades to compiling") {
    TempDir dir;
    const fs::path root = dir.path() / "readonly";
    fs::create_directories(root);
    // Let an unprivileged user reach the directory, which nobody may write to.
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::permissions(root, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    std::string failure;
    const int exit_code = run_in_child([&] {
        // Root ignores permission bits, so drop to an unprivileged user to make 0555 bite.
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 3;
        const std::string problem = exercise_unwritable_cache(root, root, std::errc::permission_denied);
        if (!problem.empty()) {
            std::ofstream(dir.path().string() + ".problem") << problem;
            return 1;
        }
        return 0;
    });
    std::ifstream problem_file(dir.path().string() + ".problem");
    std::string problem((std::istreambuf_iterator<char>(problem_file)), std::istreambuf_iterator<char>());
    fs::remove(dir.path().string() + ".problem");
    CHECK_MESSAGE(exit_code == 0, problem);
}

TEST_CASE("a full file system: warnings, no partial files, entries still returned") {
    TempDir dir;
    const fs::path mount_point = dir.path() / "tiny";
    fs::create_directories(mount_point);
    if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) {
        MESSAGE("skipped: cannot mount a 1 MiB tmpfs here (" << std::strerror(errno) << ")");
        return;
    }
    struct Unmount {
        fs::path path;
        ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{mount_point};

    CapturedLog log;
    DiskCache cache(config_at(mount_point / "cache", log));
    constexpr std::size_t payload = 150 * 1024;
    int stored = 0;
    for (int i = 0; i < 12; ++i) {
        const std::string seed = "tiny " + std::to_string(i);
        CHECK(cache.get_or_create(arch, key_of(seed), [&] { return entry_for(seed, payload); }) ==
              entry_for(seed, payload));
        if (fs::exists(cache.entry_path(arch, key_of(seed)))) {
            ++stored;
            CHECK_FALSE(cache.store_error(arch, key_of(seed)));
        } else {
            CHECK(cache.store_error(arch, key_of(seed)) == std::errc::no_space_on_device);
        }
    }
    CHECK(stored >= 1);
    CHECK(stored < 12);
    CHECK(cache.session_stats().publish_failures == static_cast<std::uint64_t>(12 - stored));
    CHECK(log.lines_at("warning") == 1);
    CHECK(log.text().find("No space left") != std::string::npos);
    CHECK(temp_files_under(mount_point).empty());
    CHECK(cache.verify(false).empty());
    for (int i = 0; i < 12; ++i) {
        const std::string seed = "tiny " + std::to_string(i);
        CHECK(cache.get_or_create(arch, key_of(seed), [&] { return entry_for(seed, payload); }) ==
              entry_for(seed, payload));
    }
}

TEST_CASE("store_error names why a key's last publish failed, until it is stored") {
    TempDir dir;
    CapturedLog log;
    DiskCacheConfig config = config_at(dir.path(), log);
    config.max_bytes = 1000;
    DiskCache cache(config);
    CHECK_FALSE(cache.store_error(arch, key_of("big")));
    CHECK_FALSE(cache.publish(arch, key_of("big"), entry_for("big", 2000)));
    CHECK(cache.store_error(arch, key_of("big")) == std::errc::file_too_large);
    CHECK_FALSE(cache.store_error(arch, key_of("other")));
    CHECK(cache.publish(arch, key_of("big"), entry_for("big", 100)));
    CHECK_FALSE(cache.store_error(arch, key_of("big")));
}

TEST_CASE("holds checks an entry is stored and sound without counting a request") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    REQUIRE(cache.publish(arch, key_of("kept"), entry_for("kept", 100)));
    REQUIRE(cache.publish(arch, key_of("damaged"), entry_for("damaged", 100)));
    fs::resize_file(cache.entry_path(arch, key_of("damaged")), 60);
    const auto used_before = fs::last_write_time(cache.entry_path(arch, key_of("kept")));

    CHECK(cache.holds(arch, key_of("kept")));
    CHECK_FALSE(cache.holds(arch, key_of("damaged")));
    CHECK_FALSE(cache.holds(arch, key_of("absent")));
    CHECK_FALSE(cache.holds("gfx1151", key_of("kept")));
    CHECK(cache.session_stats() == CacheStats{});
    CHECK(fs::exists(cache.entry_path(arch, key_of("damaged"))));  // a check removes nothing
    CHECK(fs::last_write_time(cache.entry_path(arch, key_of("kept"))) == used_before);
}
