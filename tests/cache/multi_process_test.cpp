#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int process_count = 16;
constexpr int shared_keys = 20;
constexpr int own_keys = 20;
constexpr std::string_view arch = "gfx90a:sramecc+:xnack-";

// The fake compiler: one O_APPEND line per compile, so the parent can count compiles per key
// across every process.
Entry compile_and_record(const fs::path& compile_log, const std::string& seed) {
    const int fd = ::open(compile_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    const std::string line = seed + "\n";
    const bool logged = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (fd >= 0) ::close(fd);
    if (!logged) throw std::runtime_error("cannot append to the compile log");
    std::this_thread::sleep_for(3ms);  // long enough for other processes to pile up on the lock
    return entry_for(seed, 2000 + seed.size() * 97);
}

int request_all_keys(const fs::path& root, const fs::path& compile_log, int process) {
    CapturedLog log;
    DiskCache cache(config_at(root, log));
    std::vector<std::string> seeds;
    for (int i = 0; i < shared_keys; ++i) seeds.push_back("shared " + std::to_string(i));
    for (int i = 0; i < own_keys; ++i)
        seeds.push_back("process " + std::to_string(process) + " key " + std::to_string(i));
    std::shuffle(seeds.begin(), seeds.end(), std::mt19937(process));
    for (const auto& seed : seeds) {
        const Entry entry =
            cache.get_or_create(arch, key_of(seed), [&] { return compile_and_record(compile_log, seed); });
        if (entry != entry_for(seed, 2000 + seed.size() * 97)) return 1;
    }
    if (log.lines_at("warning") != 0) return 2;
    return 0;
}

}  // namespace

TEST_CASE("processes sharing one directory compile every key exactly once") {
    TempDir dir;
    const fs::path root = dir.path() / "cache";
    const fs::path compile_log = dir.path() / "compiles.log";

    std::vector<pid_t> children;
    for (int process = 0; process < process_count; ++process) {
        children.push_back(start_child([&, process] { return request_all_keys(root, compile_log, process); }));
    }
    for (int process = 0; process < process_count; ++process) {
        CAPTURE(process);
        CHECK(wait_for_child(children[process]) == 0);
    }

    std::map<std::string, int> compiles;
    std::ifstream lines(compile_log);
    for (std::string seed; std::getline(lines, seed);) ++compiles[seed];
    CHECK(compiles.size() == shared_keys + process_count * own_keys);
    for (const auto& [seed, count] : compiles) {
        CAPTURE(seed);
        CHECK(count == 1);
    }

    CapturedLog log;
    DiskCache cache(config_at(root, log));
    CHECK(cache.list().size() == shared_keys + process_count * own_keys);
    CHECK(cache.verify(false).empty());
    const CacheStats totals = cache.stats();
    CHECK(totals.compiles == shared_keys + process_count * own_keys);
    CHECK(totals.hits == (process_count - 1) * shared_keys);
    CHECK(temp_files_under(root).empty());
}
