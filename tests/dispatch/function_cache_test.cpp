// The lock-free function cache: lookups during inserts and table growth.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "dispatch/function_cache.hpp"

using namespace fajit;

namespace {

LoadedKernel* marker(std::uint64_t key) { return reinterpret_cast<LoadedKernel*>((key + 1) * 16); }

}  // namespace

TEST_CASE("inserted keys are found, absent ones are not, and the first insert of a key wins") {
    FunctionCache cache;
    CHECK(cache.find(42) == nullptr);
    const ResolvedVariant* stored = cache.insert(42, {KernelSpec{}, marker(42)});
    CHECK(cache.find(42) == stored);
    CHECK(cache.insert(42, {KernelSpec{}, marker(7)}) == stored);
    CHECK(cache.find(42)->kernel == marker(42));
    CHECK(cache.find(0) == nullptr);
    cache.insert(0, {KernelSpec{}, marker(0)});
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
        cache.insert(key << 16 | 3, {KernelSpec{}, marker(key)});
        published.store(key + 1);
    }
    for (auto& reader : readers) reader.join();
    CHECK_FALSE(wrong.load());
    for (std::uint64_t key = 0; key < keys; ++key) CHECK(cache.find(key << 16 | 3)->kernel == marker(key));
}
