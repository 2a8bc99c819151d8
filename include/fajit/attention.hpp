#pragma once
// One attention call, as an engine describes it: device pointers, sizes and strides.
#include <cstdint>
#include <optional>
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

// Where each sequence of a batched call (kv_layout ragged or paged) lives. Every pointer
// is a device pointer to int32. Each sequence's causal mask is aligned bottom-right (or
// top-left) within the sequence.
struct SequenceBatch {
    // [batch + 1] cumulative query rows: sequence b has rows cu_seqlens_q[b] ..
    // cu_seqlens_q[b+1] of the packed q and o ([total_q, heads_q, head_dim]).
    const int* cu_seqlens_q = nullptr;
    int total_q = 0;  // rows of the packed q and o, cu_seqlens_q[batch]
    // ragged: [batch + 1] cumulative keys of the packed k and v ([total_k, heads_kv, head_dim]).
    const int* cu_seqlens_k = nullptr;
    int total_k = 0;
    // paged: sequence b's key j is in page block_table[b * max_pages_per_seq + j / page_size],
    // slot j % page_size; it has kv_lens[b] keys. k and v are [num_pages, page_size, heads_kv,
    // head_dim] or [num_pages, heads_kv, page_size, head_dim], by strides {page, head, slot}.
    const int* block_table = nullptr;  // [batch, max_pages_per_seq]
    const int* kv_lens = nullptr;      // [batch]
    int max_pages_per_seq = 0;
    int num_pages = 0;
    int page_size = 0;  // a power of two, 1..256
};

// A sliding window: query row i sees the keys from `left` before its diagonal key to
// `right` after it (each side -1 for unbounded), intersected with the causal mask. The
// diagonal key is i + len_k - len_q (the last row's is the last key, FlashAttention's
// alignment), or i under a top-left causal mask. Mistral's window of W keys is {W - 1, 0}
// with a causal mask.
struct SlidingWindow {
    int left = -1;
    int right = -1;
};

// Dequantization factors of e4m3 inputs: the call computes with q, k and v times their
// factor. Each is a device pointer to f32 factors, one per KV head (heads = heads_kv;
// q's factor for a query head is its KV head's, as FlashAttention-3 has it) or one for
// the whole tensor (heads = 1); null for a factor of 1. heads is 0 when all three are null.
struct Descale {
    const float* q = nullptr;
    const float* k = nullptr;
    const float* v = nullptr;
    int heads = 0;
};

struct AttentionArgs {
    // With kv_layout ragged or paged, q and o are packed [total_q, heads_q, head_dim] (their
    // strides' batch member is ignored), len_q is the longest sequence's query rows and
    // len_k the longest sequence's keys; see SequenceBatch for k and v.
    KvLayout kv_layout = KvLayout::dense;
    SequenceBatch sequences;
    const void* q = nullptr;  // [batch, heads_q, len_q, head_dim] via q_strides
    const void* k = nullptr;  // [batch, heads_kv, len_k, head_dim] via k_strides
    const void* v = nullptr;  // [batch, heads_kv, len_k, head_dim] via v_strides
    void* o = nullptr;        // [batch, heads_q, len_q, head_dim] via o_strides
    // Optional contiguous f32 natural-log sum-exp: [batch, heads_q, len_q], or for the
    // batched layouts [heads_q, total_q] (FlashAttention's varlen form).
    float* lse = nullptr;
    LseShape lse_shape;            // with lse: {batch, heads_q, len_q}, or {1, heads_q, total_q}; without: all zero
    DType dtype = DType::f16;      // of q, k, v and o
    std::optional<DType> o_dtype;  // of o where it differs: f16 or bf16 with e4m3 inputs, else none
    int batch = 0;
    int heads_q = 0;
    int heads_kv = 0;  // heads_q must be a multiple (grouped-query attention)
    int len_q = 0;
    int len_k = 0;
    int head_dim = 0;    // of q and k
    int head_dim_v = 0;  // of v and o where it differs (MLA prefill: 192 / 128); 0: head_dim
    Strides q_strides, k_strides, v_strides, o_strides;
    float scale = 0.0f;  // softmax scale, typically 1/sqrt(head_dim)
    CausalMode causal = CausalMode::none;
    std::optional<SlidingWindow> window;  // none: every key the causal mask leaves
    // A logit soft-cap c > 0 bends each scaled score s to c tanh(s / c) (Gemma 2); 0: none.
    float softcap = 0.0f;
    // Attention sinks: a device pointer to [heads_q] f32 logits (natural-log units); head
    // h's exp(sinks[h]) joins each of its rows' softmax denominators and weighs no value
    // (gpt-oss). LSE includes it. Null: none.
    const float* sinks = nullptr;
    Descale descale;  // e4m3 inputs only
    int device = 0;   // device ordinal within the backend that runs it
    // Tests only: a device buffer of 2 counters (frame moves, frames kept) that kernels
    // add to when compiled with Options::debug_counters.
    unsigned long long* debug_counters = nullptr;
};

// The head dim of v and o.
inline int value_head_dim(const AttentionArgs& args) { return args.head_dim_v ? args.head_dim_v : args.head_dim; }

// Empty when args are usable; else a message naming the bad field and its value.
// Pointers must be aligned to their element; a dimension of more than one element must have
// a stride of 0 (broadcast, inputs only) or at least its row's head dim, and o's dimensions
// must nest (each stride past everything its finer dimensions reach), so no two output rows
// share an element.
std::string check_arguments(const AttentionArgs&);

}  // namespace fajit
