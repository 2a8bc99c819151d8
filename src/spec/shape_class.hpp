#pragma once
// What of an attention call decides its variant: everything the kernel is specialized on
// plus a coarse class of the query length. Calls with the same class run the same kernel,
// so the class (with the device) keys the runtime's lock-free function cache.
#include <cstdint>
#include <optional>

#include "fajit/attention.hpp"

namespace fajit {

enum class QueryLength {
    decode,  // len_q <= 4: a token or a few speculative ones
    small,   // len_q <= 64
    large,   // prefill and long chunks
};

struct ShapeClass {
    int head_dim = 0;
    DType dtype = DType::f16;
    CausalMode causal = CausalMode::none;
    QueryLength query_length = QueryLength::large;
    KvLayout kv_layout = KvLayout::dense;
    int page_size = 0;  // paged only
    // Rows a decode tile needs for one KV head: query rows x query heads per KV head,
    // rounded up to a power of two; 0 when that passes decode_rows_max.
    int decode_rows = 0;
    // The model features a call uses (KernelSpec's fields of the same names).
    bool window = false;
    bool softcap = false;
    bool sinks = false;
    int head_dim_v = 0;                // of V and O where it differs from head_dim, else 0 (KernelSpec's field)
    std::optional<DType> out_dtype{};  // of O where it differs from dtype (KernelSpec's field)

    bool operator==(const ShapeClass&) const = default;
};

// The head dim of V and O.
inline int value_head_dim(const ShapeClass& shape) { return shape.head_dim_v ? shape.head_dim_v : shape.head_dim; }

// The most (query row, query head) pairs of one KV head a decode tile takes (decode-mma's
// two m16 tiles; each decode family says what it takes of them).
inline constexpr int decode_rows_max = 32;
int classify_decode_rows(int len_q, int heads_q, int heads_kv);

// len_q: the longest sequence's query rows.
QueryLength classify_query_length(int len_q);
// args must have passed check_arguments.
ShapeClass classify(const AttentionArgs& args);

// Packs (device, shape class) into one integer; distinct inputs give distinct keys.
std::uint64_t dispatch_key(int device, const ShapeClass&);

}  // namespace fajit
