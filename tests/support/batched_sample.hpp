#pragma once
// The batched K/V layouts the compile suites sample, and a covering sample of a
// family's batched variants: not the full cross product of layouts, head dims, dtypes
// and archs, which would cost CI minutes for little the sample does not catch.
#include <string>
#include <vector>

#include "fajit/kernel_spec.hpp"

namespace fajit::testing {

struct KvCase {
    KvLayout layout;
    int page_size;  // 0 unless paged
};

// Ragged, and paged with pages smaller than every key step (1, 16: each row looked up),
// between them (64) and at least as large (256: a step's rows lie in one page).
std::vector<KvCase> batched_kv_cases();

// Every case of batched_kv_cases() twice, with the tiles the dispatcher gives that shape; head dims,
// dtypes, archs and causal modes are taken in turn, so each head dim and each arch meets
// both kinds of pages.
std::vector<KernelSpec> batched_sample(const std::string& family, const std::vector<std::string>& archs,
                                       const std::vector<int>& head_dims);

// A family's spec with its default tiles for the features `features` has on
// (KernelSpec::window, softcap, sinks) and its head_dim_v, margin 10.
KernelSpec default_spec(const std::string& family, const std::string& arch, int head_dim, DType dtype,
                        CausalMode causal, KvLayout layout = KvLayout::dense, int page_size = 0,
                        const KernelSpec& features = {});

// A decode family's spec: its default tiles, margin 10, and the rows its tile chooses for
// `rows` packed rows (decode-split: that many, rounded up to a power of two; decode-mma:
// one or two m16 tiles).
KernelSpec decode_spec(const std::string& family, const std::string& arch, int rows, int head_dim, DType dtype,
                       CausalMode causal, KvLayout layout, int page_size);

// The tiles a decode family accepts besides the one it chooses, at d=128, bf16, four
// packed rows, 16-key pages, bottom-right: each wave count (1, 2, 4, 8), and with
// every_axis also each keys per warp step (16, 32, 64) and row tiles (16, 32). A tile the
// family's check refuses is left out.
std::vector<KernelSpec> decode_tile_specs(const std::string& family, const std::string& arch, bool every_axis);

}  // namespace fajit::testing
