// The lock-free function cache: lookups during inserts and table growth, and removal of a
// kernel's entries that waits for the readers still holding one.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "dispatch/function_cache.hpp"

using namespace fajit;

namespace {

LoadedKernel* marker(std::uint64_t key) { return reinterpret_cast<LoadedKernel*>((key + 1) * 16); }

}  // namespace

TEST_CASE("inserted keys are found, absent ones are not, and the first insert of a key wins") {
    FunctionCache cache;
    CHECK(cache.find(42) == nullptr);
    const ResolvedVariant* stored = cache.insert(42, KernelSpec{}, marker(42), 0);
    CHECK(cache.find(42) == stored);
    CHECK(cache.insert(42, KernelSpec{}, marker(7), 0) == stored);
    CHECK(cache.find(42)->kernel == marker(42));
    CHECK(cache.find(0) == nullptr);
    cache.insert(0, KernelSpec{}, marker(0), 0);
    CHECK(cache.find(0)->kernel == marker(0));
}

TEST_CASE("readers racing a writer through several table growths always see complete entries") {
    FunctionCache cache;
    constexpr std::uint64_t keys = 5000;
    std::atomic<std::uint64_t> published{0};
    std::atomic<bool> wrong{false};
    std::vector<std::thread> readers;
    for (int r = 0; r < 4; ++r)
        readers.emplace_back([&] {
            while (published.load() < keys) {
                const std::uint64_t known = published.load();
                for (std::uint64_t key = 0; key < known; key += 7) {
                    const ResolvedVariant* found = cache.find(key << 16 | 3);
                    if (!found || found->kernel != marker(key)) wrong = true;
                }
            }
        });
    for (std::uint64_t key = 0; key < keys; ++key) {
        cache.insert(key << 16 | 3, KernelSpec{}, marker(key), 0);
        published.store(key + 1);
    }
    for (auto& reader : readers) reader.join();
    CHECK_FALSE(wrong.load());
    for (std::uint64_t key = 0; key < keys; ++key) CHECK(cache.find(key << 16 | 3)->kernel == marker(key));
}

TEST_CASE("removing a kernel drops every entry that runs it and keeps the others") {
    FunctionCache cache;
    for (std::uint64_t key = 1; key <= 100; ++key) cache.insert(key, KernelSpec{}, marker(key % 2), 0);
    cache.remove(marker(1));
    for (std::uint64_t key = 1; key <= 100; ++key) {
        INFO(key);
        if (key % 2)
            CHECK(cache.find(key) == nullptr);
        else
            CHECK(cache.find(key)->kernel == marker(0));
    }
    cache.insert(7, KernelSpec{}, marker(7), 0);
    CHECK(cache.find(7)->kernel == marker(7));
}

TEST_CASE("recent use is reported once per kernel, then forgotten") {
    FunctionCache cache;
    cache.insert(1, KernelSpec{}, marker(1), 0);
    cache.insert(2, KernelSpec{}, marker(1), 0);
    cache.insert(3, KernelSpec{}, marker(3), 0);
    CHECK_FALSE(cache.take_recent_use(marker(1)));
    cache.find(2)->mark_used();
    CHECK(cache.take_recent_use(marker(1)));
    CHECK_FALSE(cache.take_recent_use(marker(1)));
    CHECK_FALSE(cache.take_recent_use(marker(3)));
}

TEST_CASE("remove returns only after a reader holding one of the entries lets go") {
    FunctionCache cache;
    cache.insert(5, KernelSpec{}, marker(5), 0);
    std::atomic<bool> holding{false}, released{false};
    std::thread reader([&] {
        const FunctionCache::Reader hold(cache);
        const ResolvedVariant* variant = cache.find(5);
        holding = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        released = variant->kernel == marker(5);
    });
    while (!holding) std::this_thread::yield();
    cache.remove(marker(5));
    CHECK(released);
    CHECK(cache.find(5) == nullptr);
    reader.join();
}

TEST_CASE("readers racing removals and inserts find whole entries of the right kernel or none") {
    FunctionCache cache;
    constexpr std::uint64_t keys = 64;
    std::atomic<bool> done{false}, wrong{false};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r)
        readers.emplace_back([&] {
            while (!done)
                for (std::uint64_t key = 0; key < keys; ++key) {
                    const FunctionCache::Reader hold(cache);
                    if (const ResolvedVariant* found = cache.find(key); found && found->kernel != marker(key))
                        wrong = true;
                }
        });
    for (int round = 0; round < 200; ++round) {
        for (std::uint64_t key = 0; key < keys; ++key) cache.insert(key, KernelSpec{}, marker(key), 0);
        for (std::uint64_t key = round % 2; key < keys; key += 2) cache.remove(marker(key));
    }
    done = true;
    for (auto& reader : readers) reader.join();
    CHECK_FALSE(wrong.load());
}
