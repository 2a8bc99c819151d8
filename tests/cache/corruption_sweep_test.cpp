#include <doctest/doctest.h>

#include <random>

#include "cache/disk_cache.hpp"
#include "test_support.hpp"

using namespace fajit::cache;
using namespace fajit::cache::testing;
namespace fs = std::filesystem;

namespace {

constexpr int entries = 20;
constexpr int damages = 100;
constexpr std::string_view arch = "gfx1100";

std::string seed_of(int i) { return "sweep " + std::to_string(i); }
std::size_t payload_size_of(int i) { return 100 + static_cast<std::size_t>(i) * 1531; }

// One random kind of damage: a flipped byte, a cut, appended junk, or an emptied file.
void damage(const fs::path& path, std::mt19937& random) {
    auto bytes = read_bytes(path);
    switch (random() % 4) {
        case 0:
            bytes[random() % bytes.size()] ^= static_cast<std::byte>(1 + random() % 255);
            break;
        case 1:
            bytes.resize(random() % bytes.size());
            break;
        case 2:
            bytes.push_back(static_cast<std::byte>(random()));
            break;
        default:
            bytes.clear();
    }
    write_bytes(path, bytes);
}

}  // namespace

TEST_CASE("random damage to entries is always detected and repaired by recompiling") {
    TempDir dir;
    CapturedLog log;
    DiskCache cache(config_at(dir.path(), log));
    std::vector<int> compiles(entries, 0);
    const auto request = [&](int i) {
        return cache.get_or_create(arch, key_of(seed_of(i)), [&] {
            ++compiles[i];
            return entry_for(seed_of(i), payload_size_of(i));
        });
    };
    for (int i = 0; i < entries; ++i) request(i);

    std::mt19937 random(99);
    for (int round = 0; round < damages; ++round) {
        const int victim = static_cast<int>(random() % entries);
        damage(cache.entry_path(arch, key_of(seed_of(victim))), random);
        const int compiles_before = compiles[victim];
        CAPTURE(round);
        CHECK(request(victim) == entry_for(seed_of(victim), payload_size_of(victim)));
        CHECK(compiles[victim] == compiles_before + 1);
        CHECK(decode_entry(read_bytes(cache.entry_path(arch, key_of(seed_of(victim))))).entry);
    }
    CHECK(cache.session_stats().corrupt_entries == damages);
    CHECK(log.lines_at("warning") == damages);
    CHECK(cache.verify(false).empty());
    for (int i = 0; i < entries; ++i) CHECK(request(i) == entry_for(seed_of(i), payload_size_of(i)));
    CHECK(cache.session_stats().compiles == entries + damages);
}
