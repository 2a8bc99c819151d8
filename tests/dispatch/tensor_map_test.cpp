// Tensor maps (TMA) for wgmma-sm90's dense calls: what each map describes, when a call
// cannot have them, and that a launch carries them only for the family that reads them
// and only while FAJIT_TENSOR_MAPS allows. The fake backend's "encoded" map holds the
// request's bytes, so a launch's arguments show what was asked for.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fajit/runtime.hpp"
#include "runtime/kernel_arguments.hpp"
#include "runtime/tensor_maps.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

// A dense GQA call, bf16, D=128 with V's head dim 64, Q [2, 8, 300, 128] in BHSD order
// and K/V [2, 2, 1000, d] in BSHD order (heads inside a row of tokens).
struct DenseCall {
    alignas(64) static inline char memory[4][256] = {};
    AttentionArgs args() const {
        AttentionArgs a;
        a.q = memory[0];
        a.k = memory[1];
        a.v = memory[2];
        a.o = memory[3];
        a.dtype = DType::bf16;
        a.batch = 2;
        a.heads_q = 8;
        a.heads_kv = 2;
        a.len_q = 300;
        a.len_k = 1000;
        a.head_dim = 128;
        a.head_dim_v = 64;
        a.q_strides = {8 * 300 * 128, 300 * 128, 128};
        a.o_strides = {8 * 300 * 64, 300 * 64, 64};
        a.k_strides = {1000 * 2 * 128, 128, 2 * 128};
        a.v_strides = {1000 * 2 * 64, 64, 2 * 64};
        a.scale = 0.088f;
        a.causal = CausalMode::bottom_right;
        return a;
    }
};

KernelSpec wgmma_spec() { return *parse_spec("family=wgmma-sm90,d=128,dv=64,dtype=bf16,arch=sm_90a").spec; }

struct FakeRuntime {
    std::shared_ptr<FakeBackendCounters> counters = std::make_shared<FakeBackendCounters>();
    std::unique_ptr<Runtime> runtime;
    explicit FakeRuntime(std::string arch = "sm_90a", bool tensor_maps_option = true, bool backend_encodes = true) {
        Options options;
        options.cache_disabled = true;
        options.log_level = "error";
        options.tensor_maps = tensor_maps_option;
        std::vector<std::unique_ptr<Backend>> backends;
        FakeBackendConfig config;
        config.arch = std::move(arch);
        config.tensor_maps = backend_encodes;
        backends.push_back(make_fake_backend(config, counters));
        counters->record_arguments = true;
        runtime = std::make_unique<Runtime>(std::move(options), std::move(backends));
    }
    KernelArguments last_arguments() {
        std::lock_guard lock(counters->launch_mutex);
        REQUIRE(counters->last_arguments.size() == sizeof(KernelArguments));
        KernelArguments arguments;
        std::memcpy(&arguments, counters->last_arguments.data(), sizeof arguments);
        return arguments;
    }
};

TensorMapRequest request_in(const KernelTensorMap& map) {
    TensorMapRequest request;
    std::memcpy(&request, map.bytes, sizeof request);
    return request;
}

}  // namespace

TEST_CASE("a dense call's maps give each tensor's extents, byte strides and a 64-column box of a tile's rows") {
    const KernelSpec spec = wgmma_spec();
    const AttentionArgs args = DenseCall().args();
    std::array<TensorMapRequest, 3> maps;
    REQUIRE(plan_tensor_maps(spec, args, maps) == "");
    const TensorMapRequest& q = maps[0];
    CHECK(q.base == args.q);
    CHECK(std::vector<std::uint64_t>(q.extents, q.extents + 4) == std::vector<std::uint64_t>{128, 300, 8, 2});
    CHECK(std::vector<std::uint64_t>(q.stride_bytes, q.stride_bytes + 3) ==
          std::vector<std::uint64_t>{256, 300 * 256, 8 * 300 * 256});
    CHECK(q.box[0] == 64);
    CHECK(q.element_bytes == 2);
    CHECK(q.box[1] == static_cast<std::uint32_t>(spec.block_q));
    const TensorMapRequest& k = maps[1];
    CHECK(k.base == args.k);
    CHECK(std::vector<std::uint64_t>(k.extents, k.extents + 4) == std::vector<std::uint64_t>{128, 1000, 2, 2});
    CHECK(std::vector<std::uint64_t>(k.stride_bytes, k.stride_bytes + 3) ==
          std::vector<std::uint64_t>{2 * 256, 256, 1000 * 2 * 256});
    CHECK(k.box[1] == static_cast<std::uint32_t>(spec.block_k));
    const TensorMapRequest& v = maps[2];
    CHECK(v.base == args.v);
    CHECK(v.extents[0] == 64);  // V's own head dim
    CHECK(v.stride_bytes[0] == 2 * 128);
}

TEST_CASE("e4m3 maps count bytes of one-byte elements, and a box is 128 of them (one swizzle row)") {
    const KernelSpec spec = *parse_spec("family=wgmma-sm90,d=128,dtype=e4m3,out=bf16,arch=sm_90a").spec;
    AttentionArgs args = DenseCall().args();
    args.dtype = DType::e4m3;
    args.o_dtype = DType::bf16;
    args.head_dim_v = 0;
    args.v_strides = args.k_strides;
    std::array<TensorMapRequest, 3> maps;
    REQUIRE(plan_tensor_maps(spec, args, maps) == "");
    for (const TensorMapRequest& map : maps) {
        CHECK(map.element_bytes == 1);
        CHECK(map.box[0] == 128);
    }
    CHECK(std::vector<std::uint64_t>(maps[0].stride_bytes, maps[0].stride_bytes + 3) ==
          std::vector<std::uint64_t>{128, 300 * 128, 8 * 300 * 128});
    CHECK(maps[1].stride_bytes[0] == 2 * 128);
    // A row of 136 one-byte elements is off 16 bytes.
    args.k_strides.sequence = 136;
    CHECK(plan_tensor_maps(spec, args, maps).find("k has a stride off 16 bytes") != std::string::npos);
}

TEST_CASE("a dimension of one index takes a tight stride, whatever the caller passed") {
    AttentionArgs args = DenseCall().args();
    args.batch = 1;
    args.q_strides.batch = 0;  // never stepped
    std::array<TensorMapRequest, 3> maps;
    REQUIRE(plan_tensor_maps(wgmma_spec(), args, maps) == "");
    CHECK(maps[0].stride_bytes[2] == 8 * 300 * 256);
}

TEST_CASE("calls TMA cannot address are refused with the tensor and the reason") {
    struct Case {
        void (*mutate)(AttentionArgs&);
        const char* expected;
    };
    const Case cases[] = {
        {[](AttentionArgs& a) { a.q = DenseCall::memory[0] + 8; }, "q is not 16-byte aligned"},
        {[](AttentionArgs& a) { a.k_strides.sequence = 2 * 128 + 4; }, "k has a stride off 16 bytes"},
        {[](AttentionArgs& a) { a.v_strides.head = 0; }, "v has a broadcast (zero) stride"},
        {[](AttentionArgs& a) { a.kv_layout = KvLayout::ragged; }, "a batched layout"},
    };
    for (const Case& test : cases) {
        AttentionArgs args = DenseCall().args();
        test.mutate(args);
        std::array<TensorMapRequest, 3> maps;
        CHECK(plan_tensor_maps(wgmma_spec(), args, maps).find(test.expected) != std::string::npos);
    }
}

TEST_CASE("wgmma-sm90's launches carry Q, K and V maps; with FAJIT_TENSOR_MAPS=0 or a refusing backend none") {
    SUBCASE("on") {
        FakeRuntime fake;
        const AttentionArgs args = DenseCall().args();
        REQUIRE(fake.runtime->select(args).family == "wgmma-sm90");
        fake.runtime->attention(args, nullptr);
        const KernelArguments launched = fake.last_arguments();
        CHECK(launched.tensor_maps_ready == 1);
        CHECK(request_in(launched.tensor_maps[0]).base == args.q);
        CHECK(request_in(launched.tensor_maps[1]).base == args.k);
        CHECK(request_in(launched.tensor_maps[2]).base == args.v);
        CHECK(fake.counters->tensor_maps == 3);
    }
    SUBCASE("off") {
        FakeRuntime fake("sm_90a", false);
        fake.runtime->attention(DenseCall().args(), nullptr);
        CHECK(fake.last_arguments().tensor_maps_ready == 0);
        CHECK(fake.counters->tensor_maps == 0);
    }
    SUBCASE("refused") {
        FakeRuntime fake("sm_90a", true, false);
        fake.runtime->attention(DenseCall().args(), nullptr);
        CHECK(fake.last_arguments().tensor_maps_ready == 0);
    }
    SUBCASE("another family") {
        FakeRuntime fake("sm_80");
        const AttentionArgs args = DenseCall().args();
        REQUIRE(fake.runtime->select(args).family != "wgmma-sm90");
        fake.runtime->attention(args, nullptr);
        CHECK(fake.last_arguments().tensor_maps_ready == 0);
        CHECK(fake.counters->tensor_maps == 0);
    }
}

TEST_CASE("FAJIT_TENSOR_MAPS is a flag, on by default") {
    CHECK(Options::from_environment({}).tensor_maps);
    CHECK_FALSE(Options::from_environment({{"FAJIT_TENSOR_MAPS", "0"}}).tensor_maps);
    CHECK_THROWS_WITH_AS(Options::from_environment({{"FAJIT_TENSOR_MAPS", "maybe"}}),
                         doctest::Contains("FAJIT_TENSOR_MAPS=maybe"), InvalidOption);
}
