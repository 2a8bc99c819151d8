#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

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
}  // namespace

TEST_CASE("valid arguments pass") { CHECK(check_arguments(valid_args()) == ""); }

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
        {[](AttentionArgs& a) { a.causal = static_cast<CausalMode>(7); }, "causal=7"},
        {[](AttentionArgs& a) { a.scale = std::numeric_limits<float>::infinity(); }, "scale=inf"},
        {[](AttentionArgs& a) { a.scale = std::nanf(""); }, "scale=nan"},
        {[](AttentionArgs& a) { a.device = -1; }, "device=-1"},
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
