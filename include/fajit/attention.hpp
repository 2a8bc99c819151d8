#pragma once
// One attention call, as an engine describes it: device pointers, sizes and strides.
#include <cstdint>
#include <string>

#include "fajit/kernel_spec.hpp"

namespace fajit {

// Element strides of one tensor. The head dimension is always contiguous, so
// BHSD and BSHD layouts (and slices of either) are both described.
struct Strides {
    std::int64_t batch = 0;
    std::int64_t head = 0;
    std::int64_t sequence = 0;
};

// The shape the caller allocated for the LSE output, checked against the call's sizes.
struct LseShape {
    int batch = 0;
    int heads = 0;
    int length = 0;
};

struct AttentionArgs {
    const void* q = nullptr;   // [batch, heads_q, len_q, head_dim] via q_strides
    const void* k = nullptr;   // [batch, heads_kv, len_k, head_dim] via k_strides
    const void* v = nullptr;   // [batch, heads_kv, len_k, head_dim] via v_strides
    void* o = nullptr;         // [batch, heads_q, len_q, head_dim] via o_strides
    float* lse = nullptr;      // optional contiguous [batch, heads_q, len_q] f32 natural-log sum-exp
    LseShape lse_shape;        // with lse: must be {batch, heads_q, len_q}; without: all zero
    DType dtype = DType::f16;  // of q, k, v and o
    int batch = 0;
    int heads_q = 0;
    int heads_kv = 0;  // heads_q must be a multiple (grouped-query attention)
    int len_q = 0;
    int len_k = 0;
    int head_dim = 0;
    Strides q_strides, k_strides, v_strides, o_strides;
    float scale = 0.0f;  // softmax scale, typically 1/sqrt(head_dim)
    CausalMode causal = CausalMode::none;
    int device = 0;  // device ordinal within the backend that runs it
    // Tests only: a device buffer of 2 counters (frame moves, frames kept) that kernels
    // add to when compiled with Options::debug_counters.
    unsigned long long* debug_counters = nullptr;
};

// Empty when args are usable; else a message naming the bad field and its value.
// Pointers must be aligned to their element; a dimension of more than one element must have
// a stride of 0 (broadcast, inputs only) or at least head_dim, so rows never overlap.
std::string check_arguments(const AttentionArgs&);

}  // namespace fajit
