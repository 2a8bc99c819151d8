#pragma once
// The kernel's one by-value argument; kernel_templates/prelude.h declares the same
// struct (fa_params) for the device. Both sides assert the size, and the compile suite
// (tests/compile/kernel_arguments_layout_test.cpp) checks every field's offset and size
// under each compiler; a new field goes into its list too.
#include <cstdint>

#include "fajit/attention.hpp"

namespace fajit {

// A CUtensorMap's bytes (backend.hpp's TensorMap), as fa_tensor_map holds them.
struct KernelTensorMap {
    alignas(64) unsigned char bytes[128];
};

struct KernelArguments {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    float* lse;
    unsigned long long* debug_counters;
    std::int64_t q_stride[3];
    std::int64_t k_stride[3];
    std::int64_t v_stride[3];
    std::int64_t o_stride[3];
    int batch;
    int heads_q;
    int heads_kv;
    int len_q;
    int len_k;
    float scale;
    // The batched layouts (AttentionArgs::sequences); null and 0 for dense calls.
    const int* cu_seqlens_q;
    const int* cu_seqlens_k;
    const int* block_table;
    const int* kv_lens;
    // Split-KV decode: per split, each row's unnormalized partial output and its frame and
    // sum, and one arrival counter per (sequence, KV head) that the last split resets.
    float* split_partials;
    unsigned int* split_arrivals;
    int total_q;
    int total_k;
    int max_pages_per_seq;
    int num_pages;
    int num_splits;  // 1 when the key range is not split
    // Model features (AttentionArgs): read only by kernels specialized on them.
    const float* sinks;
    // e4m3 inputs' factors (AttentionArgs::descale); null for 1. A KV head's factor is at
    // its index modulo descale_heads (1 or heads_kv).
    const float* q_descale;
    const float* k_descale;
    const float* v_descale;
    int window_left;
    int window_right;
    float softcap;
    int descale_heads;
    // Tensor maps of Q, K and V for families that copy dense calls through them
    // (runtime/tensor_maps.hpp); ready 0 when not filled.
    int tensor_maps_ready;
    KernelTensorMap tensor_maps[3];
};
static_assert(sizeof(KernelArguments) == 704, "KernelArguments layout changed: update fa_params in prelude.h too");

// The split-KV workspace of a launch; empty for kernels that do not split.
struct SplitWorkspace {
    float* partials = nullptr;
    unsigned int* arrivals = nullptr;
    int num_splits = 1;
};

KernelArguments make_kernel_arguments(const AttentionArgs&, const SplitWorkspace& = {});

}  // namespace fajit
