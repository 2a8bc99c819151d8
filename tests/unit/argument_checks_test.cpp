#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

#include "fajit/attention.hpp"

using namespace fajit;

namespace {
AttentionArgs valid_args() {
    alignas(16) static char storage[16];
    AttentionArgs args;
    args.q = args.k = args.v = storage;
    args.o = storage;
    args.batch = 2;
    args.heads_q = 8;
    args.heads_kv = 2;
    args.len_q = 16;
    args.len_k = 32;
    args.head_dim = 64;
    args.q_strides = args.o_strides = {8 * 16 * 64, 16 * 64, 64};
    args.k_strides = args.v_strides = {2 * 32 * 64, 32 * 64, 64};
    args.scale = 0.125f;
    return args;
}
// Three sequences, packed q and o [total_q 20, 8, 64]; K/V paged [10 pages of 16, 2, 64].
AttentionArgs valid_paged_args() {
    alignas(16) static int indices[16];
    AttentionArgs args = valid_args();
    args.kv_layout = KvLayout::paged;
    args.batch = 3;
    args.q_strides = args.o_strides = {0, 64, 8 * 64};
    args.k_strides = args.v_strides = {16 * 2 * 64, 64, 2 * 64};
    args.sequences.cu_seqlens_q = indices;
    args.sequences.total_q = 20;
    args.sequences.block_table = indices + 4;
    args.sequences.kv_lens = indices + 12;
    args.sequences.max_pages_per_seq = 2;
    args.sequences.num_pages = 10;
    args.sequences.page_size = 16;
    return args;
}

AttentionArgs valid_ragged_args() {
    alignas(16) static int offsets[8];
    AttentionArgs args = valid_paged_args();
    args.kv_layout = KvLayout::ragged;
    args.sequences = {};
    args.sequences.cu_seqlens_q = offsets;
    args.sequences.total_q = 20;
    args.sequences.cu_seqlens_k = offsets + 4;
    args.sequences.total_k = 40;
    args.k_strides = args.v_strides = {0, 64, 2 * 64};
    return args;
}
}  // namespace

TEST_CASE("valid batched arguments pass") {
    CHECK(check_arguments(valid_paged_args()) == "");
    CHECK(check_arguments(valid_ragged_args()) == "");
}

TEST_CASE("each malformed batched argument is named with its value") {
    using Mutation = std::function<void(AttentionArgs&)>;
    const std::tuple<AttentionArgs (*)(), Mutation, const char*> cases[] = {
        {valid_paged_args, [](AttentionArgs& a) { a.kv_layout = static_cast<KvLayout>(5); }, "kv_layout=5"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.cu_seqlens_q = nullptr; }, "cu_seqlens_q=null"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.block_table = nullptr; }, "block_table=null"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.kv_lens = nullptr; }, "kv_lens=null"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.page_size = 12; }, "page_size=12"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.page_size = 512; }, "page_size=512"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.num_pages = 0; }, "num_pages=0"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.max_pages_per_seq = 1; }, "len_k=32"},
        // 2^23 pages of 256 keys: 2^31 keys, one past what the kernels count in int.
        {valid_paged_args,
         [](AttentionArgs& a) {
             a.sequences.page_size = 256;
             a.sequences.max_pages_per_seq = 1 << 23;
         },
         "max_pages_per_seq=8388608"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.total_q = 0; }, "total_q=0"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.total_q = 10; }, "len_q=16"},
        {valid_paged_args, [](AttentionArgs& a) { a.sequences.total_k = 40; }, "total_k=40"},
        {valid_paged_args,
         [](AttentionArgs& a) {
             a.lse = reinterpret_cast<float*>(16);
             a.lse_shape = {3, 8, 16};
         },
         "lse_shape={3,8,16}"},
        {valid_paged_args, [](AttentionArgs& a) { a.k_strides.sequence = 8; }, "k_strides.sequence=8"},
        {valid_ragged_args, [](AttentionArgs& a) { a.sequences.cu_seqlens_k = nullptr; },
         "cu_seqlens_k=null"},
        {valid_ragged_args, [](AttentionArgs& a) { a.sequences.page_size = 16; }, "page_size=16"},
        {valid_ragged_args, [](AttentionArgs& a) { a.sequences.total_k = 8; }, "len_k=32"},
        {valid_ragged_args,
         [](AttentionArgs& a) {
             const auto* bytes = reinterpret_cast<const char*>(a.sequences.cu_seqlens_q);
             a.sequences.cu_seqlens_q = reinterpret_cast<const int*>(bytes + 2);
         },
         "cu_seqlens_q=0x"},
        {valid_args, [](AttentionArgs& a) { a.sequences.total_q = 4; }, "total_q=4"},
        {valid_args,
         [](AttentionArgs& a) {
             alignas(4) static int offsets[3];
             a.sequences.cu_seqlens_q = offsets;
         },
         "cu_seqlens_q=0x"},
    };
    for (const auto& [make, mutate, expected] : cases) {
        AttentionArgs args = make();
        mutate(args);
        const std::string error = check_arguments(args);
        CHECK_MESSAGE(error.find(expected) != std::string::npos, "expected '", expected, "', got '", error, "'");
    }
}

TEST_CASE("valid arguments pass") { CHECK(check_arguments(valid_args()) == ""); }

TEST_CASE("every model feature's valid values pass") {
    alignas(16) static float sinks[8];
    for (const SlidingWindow window : {SlidingWindow{-1, -1}, SlidingWindow{0, 0}, SlidingWindow{4095, 0},
                                       SlidingWindow{-1, 3}, SlidingWindow{100000, 100000}}) {
        AttentionArgs args = valid_args();
        args.window = window;
        args.softcap = 50.0f;
        args.sinks = sinks;
        CHECK(check_arguments(args) == "");
    }
}

TEST_CASE("e4m3 inputs pass with an f16 or bf16 o and factors per tensor or per KV head") {
    alignas(16) static char bytes[16];
    alignas(16) static float factors[2];
    for (DType out : {DType::f16, DType::bf16})
        for (int heads : {0, 1, 2}) {
            AttentionArgs args = valid_args();
            args.dtype = DType::e4m3;
            args.o_dtype = out;
            args.q = bytes + 1;  // one-byte elements need no more alignment
            if (heads) args.descale = {factors, nullptr, factors, heads};
            CHECK(check_arguments(args) == "");
        }
    AttentionArgs misaligned_o = valid_args();
    misaligned_o.dtype = DType::e4m3;
    misaligned_o.o_dtype = DType::bf16;
    misaligned_o.o = bytes + 1;
    CHECK(check_arguments(misaligned_o).find("o=") == 0);
    CHECK(check_arguments(misaligned_o).find("2-byte bf16 elements") != std::string::npos);
    AttentionArgs no_o_dtype = valid_args();
    no_o_dtype.dtype = DType::e4m3;
    CHECK(check_arguments(no_o_dtype).find("o_dtype=none") == 0);
}

TEST_CASE("a V head dim of its own is checked against v's and o's strides, q's and k's against head_dim") {
    AttentionArgs narrower = valid_args();
    narrower.head_dim_v = 32;  // rows of 32 at 64-element strides: apart, so valid
    CHECK(check_arguments(narrower) == "");
    AttentionArgs mla = valid_args();  // DeepSeek's prefill: q and k of 192, v and o of 128
    mla.head_dim = 192;
    mla.head_dim_v = 128;
    mla.q_strides = {8 * 16 * 192, 16 * 192, 192};
    mla.k_strides = {2 * 32 * 192, 32 * 192, 192};
    mla.o_strides = {8 * 16 * 128, 16 * 128, 128};
    mla.v_strides = {2 * 32 * 128, 32 * 128, 128};
    CHECK(check_arguments(mla) == "");
    mla.k_strides.sequence = 128;
    CHECK(check_arguments(mla).find("k_strides.sequence=128: rows would overlap") == 0);
}

TEST_CASE("output strides whose rows would share elements are refused, naming the stride") {
    // valid_args: o is [2, 8, 16, 64] with strides {8*16*64, 16*64, 64}.
    const std::pair<std::function<void(Strides&)>, std::string> overlapping[] = {
        // Head h+1's first row is head h's second row: every stride is at least a row.
        {[](Strides& s) { s.head = 64; }, "o_strides.head=64: output rows would overlap"},
        // Heads between rows, but a head's 16 rows run into the next head's.
        {[](Strides& s) { s.head = 128; }, "o_strides.head=128: output rows would overlap"},
        // Batch 1 starts inside batch 0's heads.
        {[](Strides& s) { s.batch = 64 * 16; }, "o_strides.batch=1024: output rows would overlap"},
    };
    for (const auto& [mutate, expected] : overlapping) {
        AttentionArgs args = valid_args();
        mutate(args.o_strides);
        const std::string error = check_arguments(args);
        CHECK_MESSAGE(error.find(expected) == 0, "expected '", expected, "', got '", error, "'");
    }
    // Layouts that keep rows apart in another order pass: [batch, len, heads, dim] (the
    // packed layout of most engines), heads interleaved with gaps, and a dimension of one
    // element, whose stride is never stepped along.
    AttentionArgs sequence_major = valid_args();
    sequence_major.o_strides = {16 * 8 * 64, 64, 8 * 64};
    CHECK(check_arguments(sequence_major) == "");
    AttentionArgs padded = valid_args();
    padded.o_strides = {8 * 16 * 80, 80, 8 * 80};
    CHECK(check_arguments(padded) == "");
    AttentionArgs one_batch = valid_args();
    one_batch.batch = 1;
    one_batch.o_strides.batch = 0;
    CHECK(check_arguments(one_batch) == "");
    // Inputs may alias: broadcast K/V heads and Q rows read twice are only reads.
    AttentionArgs shared_input = valid_args();
    shared_input.q_strides.head = 64;
    CHECK(check_arguments(shared_input) == "");
}

TEST_CASE("each malformed argument is named with its value") {
    const std::pair<std::function<void(AttentionArgs&)>, const char*> cases[] = {
        {[](AttentionArgs& a) { a.q = nullptr; }, "q=null"},
        {[](AttentionArgs& a) { a.k = nullptr; }, "k=null"},
        {[](AttentionArgs& a) { a.v = nullptr; }, "v=null"},
        {[](AttentionArgs& a) { a.o = nullptr; }, "o=null"},
        {[](AttentionArgs& a) { a.batch = 0; }, "batch=0"},
        {[](AttentionArgs& a) { a.heads_q = -3; }, "heads_q=-3"},
        {[](AttentionArgs& a) { a.heads_kv = 0; }, "heads_kv=0"},
        {[](AttentionArgs& a) { a.len_q = 0; }, "len_q=0"},
        {[](AttentionArgs& a) { a.len_k = -1; }, "len_k=-1"},
        {[](AttentionArgs& a) { a.head_dim = 0; }, "head_dim=0"},
        {[](AttentionArgs& a) { a.heads_kv = 3; }, "heads_q=8"},
        {[](AttentionArgs& a) { a.head_dim = 300; }, "head_dim=300"},
        {[](AttentionArgs& a) { a.head_dim = 60; }, "head_dim=60"},
        {[](AttentionArgs& a) { a.dtype = static_cast<DType>(9); }, "dtype=9"},
        {[](AttentionArgs& a) { a.o_dtype = static_cast<DType>(9); }, "o_dtype=9"},
        {[](AttentionArgs& a) { a.causal = static_cast<CausalMode>(7); }, "causal=7"},
        {[](AttentionArgs& a) { a.scale = std::numeric_limits<float>::infinity(); }, "scale=inf"},
        {[](AttentionArgs& a) { a.scale = std::nanf(""); }, "scale=nan"},
        {[](AttentionArgs& a) { a.device = -1; }, "device=-1"},
        {[](AttentionArgs& a) { a.device = 70000; }, "device=70000"},
        {[](AttentionArgs& a) {
             a.window = SlidingWindow{-2, 0};
         },
         "window_left=-2"},
        {[](AttentionArgs& a) {
             a.window = SlidingWindow{4, -9};
         },
         "window_right=-9"},
        {[](AttentionArgs& a) { a.softcap = -0.5f; }, "softcap=-0.5"},
        {[](AttentionArgs& a) { a.softcap = std::numeric_limits<float>::infinity(); }, "softcap=inf"},
        {[](AttentionArgs& a) { a.sinks = reinterpret_cast<const float*>(std::uintptr_t{0x1002}); }, "sinks=0x1002"},
        {[](AttentionArgs& a) { a.head_dim_v = 12; }, "head_dim_v=12"},
        {[](AttentionArgs& a) { a.head_dim_v = 264; }, "head_dim_v=264"},
        // V rows of 128 elements would overlap at the 64-element strides of valid_args.
        {[](AttentionArgs& a) { a.head_dim_v = 128; }, "v_strides.sequence=64: rows would overlap"},
        {[](AttentionArgs& a) { a.q_strides.head = -64; }, "q_strides.head=-64"},
        {[](AttentionArgs& a) { a.o_strides.sequence = 32; }, "o_strides.sequence=32"},
        {[](AttentionArgs& a) { a.k_strides.batch = std::numeric_limits<std::int64_t>::max(); }, "k_strides="},
    };
    for (const auto& [mutate, expected] : cases) {
        AttentionArgs args = valid_args();
        mutate(args);
        const std::string error = check_arguments(args);
        CHECK_MESSAGE(error.find(expected) != std::string::npos, "expected '", expected, "', got '", error, "'");
    }
}
