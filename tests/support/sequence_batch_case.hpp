#pragma once
// A batch of sequences of different lengths for GPU tests: q and o packed, K/V packed
// (ragged) or in a paged cache with a shuffled block table. Each sequence's reference is
// the dense f64 one of attention_case, so the batched forms are held to the same truth.
#include <cstdint>
#include <string>
#include <vector>

#include "fajit/runtime.hpp"
#include "support/attention_case.hpp"

namespace fajit::testing {

struct BatchShape {
    std::vector<int> len_q, len_k;  // per sequence; either may be 0
    int heads_q = 1;
    int heads_kv = 1;
    int head_dim = 64;
    int head_dim_v = 0;  // of V and O where it differs from head_dim, else 0
    DType dtype = DType::f16;
    CausalMode causal = CausalMode::none;
    float scale = 0.125f;
    KvLayout kv_layout = KvLayout::ragged;
    int page_size = 16;        // paged only
    bool heads_first = false;  // paged: [pages, heads_kv, page_size, d] instead of [pages, page_size, heads_kv, d]
    bool with_lse = true;
    // Model features, as CaseShape holds them.
    std::optional<SlidingWindow> window;
    float softcap = 0.0f;
    std::vector<float> sinks;

    int batch() const { return static_cast<int>(len_q.size()); }
    int value_dim() const { return head_dim_v ? head_dim_v : head_dim; }
    // The one-sequence dense shape whose reference sequence `index` must match.
    CaseShape sequence(int index) const;
    std::string describe() const;
};

// Per sequence, logical [1, heads, length, head_dim] values as attention_case draws them.
std::vector<CaseInputs> random_batch_inputs(const BatchShape&, std::uint64_t seed);

// Packs the batch the way shape says, runs it (spec, or the dispatcher when spec is null)
// and unpacks each sequence's outputs.
std::vector<Outputs> run_batch_on_device(Runtime&, const KernelSpec* spec, const BatchShape&,
                                         const std::vector<CaseInputs>&, std::uint64_t seed);

// Compares every sequence with its dense reference; bad elements name the sequence.
Comparison compare_batch(const BatchShape&, const std::vector<CaseInputs>&, const std::vector<Outputs>& got,
                         double extra_relative = 0.0);

}  // namespace fajit::testing
