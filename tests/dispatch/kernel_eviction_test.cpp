// The runtime's bound on loaded kernels (FAJIT_MAX_LOADED_KERNELS), on the fake backend:
// past it the least recently used kernel is unloaded, one the hot path keeps running gets a
// second chance, the device is drained before a kernel is unloaded (also when the runtime
// goes), an unloaded kernel comes back on its next call, and calls racing the unloading
// always launch a loaded kernel.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

struct BoundedRuntime {
    std::shared_ptr<FakeBackendCounters> counters = std::make_shared<FakeBackendCounters>();
    std::unique_ptr<Runtime> runtime;

    explicit BoundedRuntime(std::size_t max_loaded_kernels) {
        Options options;
        options.cache_disabled = true;
        options.max_loaded_kernels = max_loaded_kernels;
        std::vector<std::unique_ptr<Backend>> backends;
        backends.push_back(make_fake_backend({}, counters));
        runtime = std::make_unique<Runtime>(std::move(options), std::move(backends));
    }
    void call(const AttentionArgs& args) { runtime->attention(args, nullptr); }
};

// Three shapes that select three different kernels on the fake sm_90a device.
AttentionArgs shape(int head_dim) {
    alignas(16) static char memory[4][64];
    AttentionArgs args;
    args.q = memory[0];
    args.k = memory[1];
    args.v = memory[2];
    args.o = memory[3];
    args.batch = args.heads_q = args.heads_kv = 1;
    args.len_q = args.len_k = 256;
    args.head_dim = head_dim;
    args.dtype = DType::f16;
    args.q_strides = args.k_strides = args.v_strides = args.o_strides = {256LL * head_dim, 256LL * head_dim, head_dim};
    args.scale = 0.125f;
    return args;
}

const AttentionArgs a = shape(64), b = shape(128), c = shape(256);

}  // namespace

TEST_CASE("past the bound the least recently used kernel is unloaded, and loaded again when called") {
    BoundedRuntime bounded(2);
    bounded.call(a);
    bounded.call(b);
    CHECK(bounded.counters->loads == 2);
    CHECK(bounded.counters->unloads == 0);
    bounded.call(c);  // a is the oldest
    CHECK(bounded.counters->loads == 3);
    CHECK(bounded.counters->unloads == 1);
    bounded.call(c);
    bounded.call(b);  // both still loaded
    CHECK(bounded.counters->loads == 3);
    bounded.call(a);  // back, in place of the oldest again
    CHECK(bounded.counters->loads == 4);
    CHECK(bounded.counters->unloads == 2);
    CHECK(bounded.counters->launches == 6);
    // The code objects in memory have the same bound: a's was dropped and compiled again.
    CHECK(bounded.counters->compiles == 4);
}

TEST_CASE("a kernel is unloaded only once the device has run the launches queued before") {
    BoundedRuntime bounded(1);
    bounded.call(a);
    bounded.call(a);
    bounded.call(b);  // unloads a, whose two launches a device could still be running
    CHECK(bounded.counters->unloads == 1);
    CHECK(bounded.counters->unloads_with_work_queued == 0);
    CHECK(bounded.counters->queued_launches == 1);  // b's, launched after the drain
}

TEST_CASE("a runtime going away waits for the launches queued on its devices before unloading") {
    BoundedRuntime bounded(Options{}.max_loaded_kernels);
    bounded.call(a);
    bounded.call(b);
    bounded.runtime.reset();
    CHECK(bounded.counters->unloads == 2);
    CHECK(bounded.counters->unloads_with_work_queued == 0);
}

TEST_CASE("a kernel the hot path ran since the last look gets a second chance") {
    BoundedRuntime bounded(2);
    bounded.call(a);
    bounded.call(b);
    bounded.call(a);  // a is the oldest loaded, but the hot path just ran it
    bounded.call(c);  // so b goes
    CHECK(bounded.counters->unloads == 1);
    bounded.call(a);
    CHECK(bounded.counters->loads == 3);
    bounded.call(b);
    CHECK(bounded.counters->loads == 4);
}

TEST_CASE("under the default bound every kernel stays loaded") {
    BoundedRuntime bounded(Options{}.max_loaded_kernels);
    for (int round = 0; round < 3; ++round)
        for (const AttentionArgs& args : {a, b, c}) bounded.call(args);
    CHECK(bounded.counters->loads == 3);
    CHECK(bounded.counters->unloads == 0);
}

TEST_CASE("a bound of zero is refused") {
    CHECK_THROWS_WITH_AS(BoundedRuntime(0), doctest::Contains("max_loaded_kernels=0"), InvalidOption);
}

TEST_CASE("calls from several threads keep launching while a bound of one unloads under them") {
    BoundedRuntime bounded(1);
    constexpr int threads = 4;
    constexpr int calls = 3000;
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            const AttentionArgs* mine[] = {&a, &b, &c};
            for (int i = 0; i < calls; ++i) try {
                    // Mostly one shape per thread, now and then another, so kernels change hands.
                    bounded.call(*mine[(i % 64 == 0 ? t + 1 : t) % 3]);
                } catch (...) {
                    ++failures;
                }
        });
    for (auto& thread : pool) thread.join();
    CHECK(failures == 0);
    CHECK(bounded.counters->launches == threads * calls);
    CHECK(bounded.counters->loads - bounded.counters->unloads == 1);
}
