// Launch attributes, on the fake backend: which launches are programmatic dependent launches
// (sm_90 and later, while FAJIT_PROGRAMMATIC_LAUNCH allows), and that every kernel template
// waits for the kernels before it as its first statement, which is what makes such a launch
// safe; and which split-KV decode launches put each (sequence, KV head)'s splits in one
// thread-block cluster (sm_90 and later, while FAJIT_CLUSTER_MERGE allows, when the device
// holds every cluster at once). That the two merges agree is the GPU decode suite's.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "codegen/template_store.hpp"
#include "fajit/runtime.hpp"
#include "families/registry.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

struct Setup {
    std::string arch = "sm_90a";
    int clusters_held = 64;
    bool programmatic_launch = true;
    bool cluster_merge = true;
    int decode_splits = 0;
    int len_q = 1;
    int batch = 1;
};

// The shape of one call of batch x 32 query heads over 8 KV heads and 8192 keys, d=128.
LaunchShape launch(const Setup& setup) {
    Options options;
    options.cache_disabled = true;
    options.log_level = "error";
    options.programmatic_launch = setup.programmatic_launch;
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
    return counters->last_shape;
}

bool launched_programmatic(const std::string& arch, bool option, int len_q) {
    Setup setup;
    setup.arch = arch;
    setup.programmatic_launch = option;
    setup.len_q = len_q;
    return launch(setup).programmatic;
}

}  // namespace

TEST_CASE("launches are programmatic on sm_90 and later unless FAJIT_PROGRAMMATIC_LAUNCH is off") {
    for (const int len_q : {1, 2048}) {  // decode and prefill
        CAPTURE(len_q);
        CHECK(launched_programmatic("sm_90a", true, len_q));
        CHECK(launched_programmatic("sm_100a", true, len_q));
        CHECK_FALSE(launched_programmatic("sm_90a", false, len_q));
        CHECK_FALSE(launched_programmatic("sm_80", true, len_q));  // griddepcontrol needs sm_90
        CHECK_FALSE(launched_programmatic("gfx1151", true, len_q));
    }
}

TEST_CASE("FAJIT_PROGRAMMATIC_LAUNCH is a flag, on by default") {
    CHECK(Options::from_environment({}).programmatic_launch);
    CHECK_FALSE(Options::from_environment({{"FAJIT_PROGRAMMATIC_LAUNCH", "0"}}).programmatic_launch);
    CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_PROGRAMMATIC_LAUNCH", "2"}}),
                         doctest::Contains("FAJIT_PROGRAMMATIC_LAUNCH=2"), InvalidOption);
}

TEST_CASE("every kernel template waits for the kernels before it as its first statement") {
    const TemplateStore templates;
    for (const VariantRow& row : variant_table()) {
        const FamilyDescriptor& family = *row.family;
        CAPTURE(family.name);
        const std::string text(templates.text(family.template_file));
        // The kernel's definition: its name, its one parameter, then the body's first statement.
        const std::regex first_statement(std::string(family.kernel) + R"(\([^)]*fa_params p\) \{\s*(\S[^;]*;))");
        std::smatch match;
        REQUIRE(std::regex_search(text, match, first_statement));
        CHECK(match[1].str() == "fa_wait_for_prior_kernels();");
    }
}

TEST_CASE("a decode launch puts each KV head's splits in one cluster where the device holds them all") {
    const LaunchShape planned = launch({});
    REQUIRE(planned.grid[0] > 1);  // batch 1 x 8 KV heads cannot fill the fake device's 100 units
    CHECK(planned.cluster_blocks == planned.grid[0]);

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
    CHECK(launch(setup).grid[0] == 20);
    CHECK(launch(setup).cluster_blocks == 1);
}

TEST_CASE("no cluster without splits, before sm_90, on AMD, or with FAJIT_CLUSTER_MERGE off") {
    Setup setup;
    setup.decode_splits = 1;
    CHECK(launch(setup).cluster_blocks == 1);
    setup.decode_splits = 0;
    setup.batch = 128;  // 1024 blocks fill the device: one split each
    CHECK(launch(setup).grid[0] == 1);
    CHECK(launch(setup).cluster_blocks == 1);
    setup.batch = 1;
    setup.arch = "sm_80";
    CHECK(launch(setup).grid[0] > 1);
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
