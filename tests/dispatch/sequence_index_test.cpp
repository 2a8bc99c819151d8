// A batched call's indices are read back and checked before anything launches
// (FAJIT_CHECK_INDICES), on the fake backend, whose "device" memory is host memory.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/fake_backend.hpp"

using namespace fajit;

namespace {

struct PagedCall {
    // Three sequences: 5, 0 and 3 query rows against 40, 0 and 17 keys in pages of 16.
    std::vector<int> cu_seqlens_q = {0, 5, 5, 8};
    std::vector<int> kv_lens = {40, 0, 17};
    // Unused slots hold garbage, which must never be read or reported.
    std::vector<int> block_table = {7, 2, 9, -5, 123456, 99, 0, 4, 77};
    alignas(16) char memory[4][64] = {};

    AttentionArgs args() {
        AttentionArgs a;
        a.kv_layout = KvLayout::paged;
        a.q = memory[0];
        a.k = memory[1];
        a.v = memory[2];
        a.o = memory[3];
        a.batch = 3;
        a.heads_q = 4;
        a.heads_kv = 1;
        a.len_q = 5;
        a.len_k = 40;
        a.head_dim = 64;
        a.q_strides = a.o_strides = {0, 64, 4 * 64};
        a.k_strides = a.v_strides = {16 * 64, 16 * 64, 64};
        a.scale = 0.125f;
        a.causal = CausalMode::bottom_right;
        a.sequences.cu_seqlens_q = cu_seqlens_q.data();
        a.sequences.total_q = 8;
        a.sequences.block_table = block_table.data();
        a.sequences.kv_lens = kv_lens.data();
        a.sequences.max_pages_per_seq = 3;
        a.sequences.num_pages = 10;
        a.sequences.page_size = 16;
        return a;
    }
};

struct FakeRuntime {
    std::shared_ptr<FakeBackendCounters> counters = std::make_shared<FakeBackendCounters>();
    std::unique_ptr<Runtime> runtime;
    explicit FakeRuntime(bool check_indices) {
        Options options;
        options.cache_disabled = true;
        options.log_level = "error";
        options.check_indices = check_indices;
        std::vector<std::unique_ptr<Backend>> backends;
        backends.push_back(make_fake_backend({}, counters));
        runtime = std::make_unique<Runtime>(std::move(options), std::move(backends));
    }
};

std::string error_of(Runtime& runtime, const AttentionArgs& args) {
    try {
        runtime.attention(args, nullptr);
    } catch (const std::invalid_argument& error) {
        return error.what();
    }
    return {};
}

}  // namespace

TEST_CASE("consistent batched indices launch; only the pages a sequence's keys reach are checked") {
    FakeRuntime fake(true);
    PagedCall call;
    CHECK(error_of(*fake.runtime, call.args()) == "");
    CHECK(fake.counters->launches == 1);
}

TEST_CASE("each bad index is named with its sequence and slot, and nothing launches") {
    struct Case {
        void (*mutate)(PagedCall&);
        const char* expected;
    };
    const Case cases[] = {
        {[](PagedCall& c) { c.block_table[1] = 10; }, "block_table[0][1]=10: sequence 0, slot 1"},
        {[](PagedCall& c) { c.block_table[6] = -1; }, "block_table[2][0]=-1: sequence 2, slot 0"},
        {[](PagedCall& c) { c.block_table[7] = 1000; }, "block_table[2][1]=1000"},
        {[](PagedCall& c) { c.kv_lens[1] = 41; }, "kv_lens[1]=41"},
        {[](PagedCall& c) { c.kv_lens[0] = -2; }, "kv_lens[0]=-2"},
        {[](PagedCall& c) { c.cu_seqlens_q[0] = 1; }, "cu_seqlens_q[0]=1"},
        {[](PagedCall& c) { c.cu_seqlens_q[2] = 4; }, "cu_seqlens_q[2]=4: offsets must not decrease"},
        {[](PagedCall& c) { c.cu_seqlens_q[3] = 7; }, "cu_seqlens_q[3]=7: the last offset"},
        {[](PagedCall& c) {
             c.cu_seqlens_q = {0, 6, 6, 8};
         },
         "sequence 0 has 6, more than len_q (5)"},
    };
    for (const Case& test : cases) {
        FakeRuntime fake(true);
        PagedCall call;
        test.mutate(call);
        const std::string error = error_of(*fake.runtime, call.args());
        CHECK_MESSAGE(error.find(test.expected) != std::string::npos, "expected '", test.expected, "', got '", error,
                      "'");
        CHECK(fake.counters->launches == 0);
    }
}

TEST_CASE("a batched call on a device the backend lacks names the ordinal before reading any index") {
    FakeRuntime fake(true);
    PagedCall call;
    AttentionArgs args = call.args();
    args.device = 1;
    CHECK(error_of(*fake.runtime, args).find("device=1: fake sees 1 device(s)") == 0);
    CHECK(fake.counters->launches == 0);
}

TEST_CASE("ragged offsets are checked against total_k and len_k") {
    FakeRuntime fake(true);
    PagedCall call;
    std::vector<int> cu_seqlens_k = {0, 40, 40, 50};
    AttentionArgs args = call.args();
    args.kv_layout = KvLayout::ragged;
    args.sequences.block_table = args.sequences.kv_lens = nullptr;
    args.sequences.max_pages_per_seq = args.sequences.num_pages = args.sequences.page_size = 0;
    args.sequences.cu_seqlens_k = cu_seqlens_k.data();
    args.sequences.total_k = 51;
    args.k_strides = args.v_strides = {0, 64, 64};
    CHECK(error_of(*fake.runtime, args).find("cu_seqlens_k[3]=50: the last offset must equal") !=
          std::string::npos);
    args.sequences.total_k = 50;
    CHECK(error_of(*fake.runtime, args) == "");
    CHECK(fake.counters->launches == 1);
}

TEST_CASE("FAJIT_CHECK_INDICES=0 trusts the indices and launches without reading them") {
    FakeRuntime fake(false);
    PagedCall call;
    call.block_table[0] = 5000;
    CHECK(error_of(*fake.runtime, call.args()) == "");
    CHECK(fake.counters->launches == 1);
    CHECK(Options::from_environment({{"FAJIT_CHECK_INDICES", "0"}}).check_indices == false);
    CHECK(Options::from_environment({}).check_indices == true);
}
