// The split-KV workspaces on the fake backend, whose "device" memory is host memory.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>

#include "runtime/split_workspaces.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

SplitPlan plan_of(std::size_t counters) {
    SplitPlan plan;
    plan.num_splits = 4;
    plan.partial_floats = 4 * counters * 130;
    plan.arrival_counters = counters;
    return plan;
}

}  // namespace

TEST_CASE("a workspace whose counters could not be zeroed is not kept: the next call zeroes a fresh one") {
    auto counters = std::make_shared<FakeBackendCounters>();
    FakeBackendConfig config;
    config.failing_fills = 1;
    const auto backend = make_fake_backend(config, counters);
    SplitWorkspaces workspaces;
    CHECK_THROWS_WITH_AS(workspaces.get(*backend, 0, nullptr, plan_of(8)), doctest::Contains("the fake fill failed"),
                         std::runtime_error);
    const SplitWorkspace workspace = workspaces.get(*backend, 0, nullptr, plan_of(8));
    CHECK(counters->fills == 2);
    REQUIRE(workspace.arrivals != nullptr);
    unsigned int zeros[8] = {};
    CHECK(std::memcmp(workspace.arrivals, zeros, sizeof zeros) == 0);
}

TEST_CASE("a workspace grows for a larger plan, zeroed, and is reused for a smaller one") {
    auto counters = std::make_shared<FakeBackendCounters>();
    const auto backend = make_fake_backend({}, counters);
    SplitWorkspaces workspaces;
    const SplitWorkspace small = workspaces.get(*backend, 0, nullptr, plan_of(8));
    const SplitWorkspace large = workspaces.get(*backend, 0, nullptr, plan_of(64));
    CHECK(counters->fills == 2);
    unsigned int zeros[64] = {};
    CHECK(std::memcmp(large.arrivals, zeros, sizeof zeros) == 0);
    const SplitWorkspace again = workspaces.get(*backend, 0, nullptr, plan_of(8));
    CHECK(again.arrivals == large.arrivals);
    CHECK(counters->fills == 2);
    CHECK(small.arrivals != large.arrivals);
}
