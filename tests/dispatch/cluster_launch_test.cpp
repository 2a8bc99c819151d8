// Cluster launches of split-KV decode: which launches put each (sequence, KV head)'s splits
// in one thread-block cluster (sm_90 and later, while FAJIT_CLUSTER_MERGE allows, when the
// device holds every cluster at once), on the fake backend. That the two merges agree is
// the GPU decode suite's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

struct Launched {
    unsigned splits;          // the grid's x extent
    unsigned cluster_blocks;  // as launched
};

struct Setup {
    std::string arch = "sm_90a";
    int clusters_held = 64;
    bool cluster_merge = true;
    int decode_splits = 0;
    int len_q = 1;
    int batch = 1;
};

// One call of batch x 32 query heads over 8 KV heads and 8192 keys, d=128.
Launched launch(const Setup& setup) {
    Options options;
    options.cache_disabled = true;
    options.log_level = "error";
    options.cluster_merge = setup.cluster_merge;
    options.decode_splits = setup.decode_splits;
    auto counters = std::make_shared<FakeBackendCounters>();
    counters->record_arguments = true;
    FakeBackendConfig device;
    device.arch = setup.arch;
    device.clusters_held = setup.clusters_held;
    std::vector<std::unique_ptr<Backend>> backends;
    backends.push_back(make_fake_backend(device, counters));
    Runtime runtime(std::move(options), std::move(backends));

    alignas(64) static char memory[4][256];
    AttentionArgs args;
    args.q = memory[0];
    args.k = memory[1];
    args.v = memory[2];
    args.o = memory[3];
    args.dtype = DType::bf16;
    args.batch = setup.batch;
    args.heads_q = 32;
    args.heads_kv = 8;
    args.len_q = setup.len_q;
    args.len_k = 8192;
    args.head_dim = args.head_dim_v = 128;
    args.q_strides = args.o_strides = {32LL * setup.len_q * 128, std::int64_t(setup.len_q) * 128, 128};
    args.k_strides = args.v_strides = {8LL * 8192 * 128, 8192LL * 128, 128};
    args.scale = 0.088f;
    args.causal = CausalMode::bottom_right;
    runtime.attention(args, nullptr);
    REQUIRE(counters->launches == 1);
    return {counters->last_shape.grid[0], counters->last_shape.cluster_blocks};
}

}  // namespace

TEST_CASE("a decode launch puts each KV head's splits in one cluster where the device holds them all") {
    const Launched planned = launch({});
    REQUIRE(planned.splits > 1);  // batch 1 x 8 KV heads cannot fill the fake device's 100 units
    CHECK(planned.cluster_blocks == planned.splits);

    Setup pinned;
    pinned.decode_splits = 5;
    CHECK(launch(pinned).cluster_blocks == 5);  // a pinned count too, as graph capture uses
}

TEST_CASE("a decode launch merges through L2 where clusters cannot hold its splits") {
    Setup setup;
    setup.clusters_held = 7;  // one short of the 8 (sequence, KV head) pairs: a second wave
    CHECK(launch(setup).cluster_blocks == 1);
    setup.clusters_held = 0;  // none at all (a driver without clusters)
    CHECK(launch(setup).cluster_blocks == 1);
    setup.clusters_held = 64;
    setup.decode_splits = 20;  // larger than any cluster (the fake, as CUDA, holds up to 16)
    CHECK(launch(setup).splits == 20);
    CHECK(launch(setup).cluster_blocks == 1);
}

TEST_CASE("no cluster without splits, before sm_90, on AMD, or with FAJIT_CLUSTER_MERGE off") {
    Setup setup;
    setup.decode_splits = 1;
    CHECK(launch(setup).cluster_blocks == 1);
    setup.decode_splits = 0;
    setup.batch = 128;  // 1024 blocks fill the device: one split each
    CHECK(launch(setup).splits == 1);
    CHECK(launch(setup).cluster_blocks == 1);
    setup.batch = 1;
    setup.arch = "sm_80";
    CHECK(launch(setup).splits > 1);
    CHECK(launch(setup).cluster_blocks == 1);
    setup.arch = "gfx1151";
    CHECK(launch(setup).cluster_blocks == 1);
    setup.arch = "sm_90a";
    setup.cluster_merge = false;
    CHECK(launch(setup).cluster_blocks == 1);
    setup.cluster_merge = true;
    setup.len_q = 2048;  // prefill: no split family
    CHECK(launch(setup).cluster_blocks == 1);
}

TEST_CASE("FAJIT_CLUSTER_MERGE is a flag, on by default") {
    CHECK(Options::from_environment({}).cluster_merge);
    CHECK_FALSE(Options::from_environment({{"FAJIT_CLUSTER_MERGE", "0"}}).cluster_merge);
    CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_CLUSTER_MERGE", "yes please"}}),
                         doctest::Contains("FAJIT_CLUSTER_MERGE"), InvalidOption);
}
