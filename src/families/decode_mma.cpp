// decode-mma: decode and short chunks (up to 32 query rows x query heads per KV head) on
// NVIDIA tensor cores, sm_80 and later: one or two m16 tiles of packed rows that every warp holds,
// the warps dividing the keys, split over the key range when batch x KV heads cannot fill
// the device. Any head dim the spec allows, padded to 16 inside the kernel.
#include <algorithm>

#include "families/family_rules.hpp"
#include "spec/arch.hpp"
#include "spec/spec_fields.hpp"

namespace fajit {
namespace {

constexpr std::string_view prelude_parts[] = {"prelude_common.h", "prelude_nvidia.h", "prelude_sm80.h",
                                              "prelude_split_kv.h"};
constexpr DType dtypes[] = {DType::f16, DType::bf16};
constexpr KvLayout kv_layouts[] = {KvLayout::dense, KvLayout::ragged, KvLayout::paged};
// One m16 tile of packed rows, or two for a speculative step of a wide GQA group (4 query
// rows x 8 query heads per KV head).
constexpr int one_tile = 16;
constexpr int two_tiles = 32;
// A split shorter than this spends more on its partial and the merge than on keys.
constexpr int min_keys_per_split = 256;
constexpr int max_splits = 64;
// Registers a lane: the most ptxas gave over head dims 16..256 (sm_90a, bf16, dense and
// 16-key pages; one row tile: 121 to d=64, 199 to d=128, 234 past it; two: 169, 232, 236),
// rounded up to the allocation granule; with a V head dim of its own, the wider one's.
// One row tile to d=64 sits at 128, two blocks an SM, where a soft-cap needs a few more:
// ptxas spilled 4 bytes at 128 with f16 and a window at d=56 and 64 (ragged), and later
// with f16 and the cap alone at those head dims (ragged) and with bf16 and every feature
// at d=48 (16-key pages; sm_90a, NVRTC 13, the exhaustive features suite). Capped
// variants there take one block an SM.
int registers_per_lane(const KernelSpec& spec) {
    const int padded = std::max(padded_head_dim(spec.head_dim), padded_head_dim(value_head_dim(spec)));
    if (spec.block_q == one_tile)
        return padded <= 64 ? (spec.softcap ? 136 : 128) : padded <= 128 ? 200 : 240;
    return padded <= 64 ? 176 : padded <= 128 ? 232 : 240;
}

// A shared row of fa_sm80_streaming_rows: unpadded where the padded head dim is whole
// 128-byte groups (the swizzled tiles), else with mma-sm80's one chunk of padding.
unsigned row_bytes(int head_dim) {
    const int padded = padded_head_dim(head_dim);
    return padded % 64 == 0 ? 2u * static_cast<unsigned>(padded) : sm80_row_bytes(head_dim);
}

// As fa_decode_mma_layout: Q, then the larger of the warps' K/V buffers and, after the
// loop, the warps' partials with the merged rows past them; then the frames and sums.
unsigned layout_bytes(const KernelSpec& spec, int stages) {
    const unsigned key_rows = static_cast<unsigned>(stages * spec.block_k * spec.waves);
    const unsigned rows = static_cast<unsigned>(spec.block_q);
    const unsigned kv_bytes = (row_bytes(spec.head_dim) + row_bytes(value_head_dim(spec))) * key_rows;
    const unsigned merge_area = (static_cast<unsigned>(spec.waves) + 1u) * 4u * rows *
                                static_cast<unsigned>(value_head_dim(spec));
    const unsigned frames_bytes = 4u * (2u * spec.waves + 2u) * rows + 4u;
    return row_bytes(spec.head_dim) * rows + std::max(kv_bytes, merge_area) + frames_bytes;
}

// Blocks an SM holds at once, by registers and by shared memory: an SM's shared memory is
// the opt-in limit per block plus the 1 KiB the driver keeps per block (CUDA programming
// guide, compute capabilities).
int resident_blocks(const KernelSpec& spec, unsigned bytes) {
    const int by_registers = 65536 / (registers_per_lane(spec) * 32 * spec.waves);
    const int by_shared = static_cast<int>((nvidia_shared_limit(spec.arch) + 1024u) / (bytes + 1024u));
    return std::max(1, std::min(by_registers, by_shared));
}

// K/V stages a warp. On sm_90 and later two, each warp double-buffering: one step loading
// while it computes on the other. Deeper pipelines held more copies in flight and ran
// slower there: against a third buffer (two steps loading), one step was 0.6-1.6% faster
// at batch 128 and with 16-key pages at batch 16, 3.8% at d=256, level at batch 1 and
// dense batch 16; L2 prefetches one and two steps past the pipeline cost 1-3% and 15-18%
// (H100, tools/tiles/decode_mma.md step 29). Once HBM sets the pace, more requests in
// flight slow it; why is not located. Before sm_90, unmeasured, the count that keeps the
// most in flight given how many blocks fit, as before that step: on sm_80 two stages would
// turn one block of four at d=48-64 into two blocks at 128 registers, where ptxas spilled
// (d=56, a window over 16-key pages).
int kv_stages(const KernelSpec& spec) {
    if (sm_version(spec.arch) >= 90) return 2;
    int best = 2;
    long long best_in_flight = 0;
    for (int stages = 2; stages <= 4; ++stages) {
        const unsigned bytes = layout_bytes(spec, stages);
        if (bytes > nvidia_shared_limit(spec.arch)) break;
        const long long in_flight = static_cast<long long>(resident_blocks(spec, bytes)) * spec.waves * (stages - 1);
        if (in_flight > best_in_flight) best = stages, best_in_flight = in_flight;
    }
    return best;
}

std::string check(const KernelSpec& spec) {
    if (auto error = waves_error(spec); !error.empty()) return error;
    if (spec.block_q != one_tile && spec.block_q != two_tiles)
        return field_error("bq", std::to_string(spec.block_q),
                           "family decode-mma takes 16 or 32 rows (query rows x query heads per KV head): one or two "
                           "m16 tiles");
    if (spec.block_k != 16 && spec.block_k != 32 && spec.block_k != 64)
        return field_error("bk", std::to_string(spec.block_k),
                           "family decode-mma takes 16, 32 or 64 keys per warp step");
    // Each lane holds bq x (dv + bk) / 32 f32 accumulators (O and S), as mma-sm80 counts them.
    const int accumulators = spec.block_q * (padded_head_dim(value_head_dim(spec)) + spec.block_k) / 32;
    // One row tile can only shorten its warp step; two can drop to one.
    const bool one_row_tile = spec.block_q == one_tile;
    if (accumulators > 160)
        return field_error(one_row_tile ? "bk" : "bq", std::to_string(one_row_tile ? spec.block_k : spec.block_q),
                           "family decode-mma would hold " + std::to_string(accumulators) +
                               " accumulators per lane (at most 160): choose a smaller " +
                               (one_row_tile ? "bk" : "bq or dv"));
    return rounded_probability_margin_error(spec);
}

// A spec's stage count, its shared memory and the blocks an SM holds with it.
struct BlockLayout {
    int stages;
    unsigned bytes;
    int resident;
};
BlockLayout block_layout(const KernelSpec& spec) {
    const int stages = kv_stages(spec);
    const unsigned bytes = layout_bytes(spec, stages);
    return {stages, bytes, resident_blocks(spec, bytes)};
}

// fa_decode_mma_layout (layout_bytes): Q, then each warp's kv_stages K and V buffers (rows
// of row_bytes) where the partials and merged rows go after the loop, then the warps'
// frames and sums, the block's frame and sum, and a flag.
// resident_blocks, the blocks an SM holds, goes to the launch bounds: left to itself,
// ptxas aimed at two blocks an SM (128 registers) where shared memory holds one, and
// spilled 4 bytes (d=112 on sm_90a, d=104 on sm_80), or at three where this plan counts
// two, and spilled 20 (d=24 and 32 in f16 with every feature, sm_90a).
SharedLayout shared_layout(const KernelSpec& spec) {
    const BlockLayout layout = block_layout(spec);
    return {layout.bytes, true, {{{"kv_stages", layout.stages}, {"resident_blocks", layout.resident}}}};
}

// As few row tiles as the shape's rows need; short warp steps keep the buffers small.
// 8 warps where two stages fit: one block per SM holds as many copies in flight as
// two blocks of 4 and needs half the splits; against 4 warps it ran 1 x 32K keys 12%
// faster, 16 x 8K 4% and 16 x 32K 2%, 128 x 8K and 4 query rows of 32 x 8K as fast (H200,
// graph replay, two runs each, with three stages; tools/tiles/decode_mma.md).
Tile choose_tile(const ShapeClass& shape, std::string_view arch) {
    KernelSpec spec;
    spec.arch = std::string(arch);
    spec.head_dim = shape.head_dim;
    spec.head_dim_v = shape.head_dim_v;
    spec.block_q = shape.decode_rows > one_tile ? two_tiles : one_tile;
    spec.block_k = 16;
    spec.waves = 8;
    if (layout_bytes(spec, 2) > nvidia_shared_limit(arch)) spec.waves = 4;
    return {spec.block_q, spec.block_k, spec.waves};
}

// One wave of resident blocks.
SplitPlan plan_splits(const KernelSpec& spec, const AttentionArgs& args, int compute_units, int requested) {
    return plan_key_splits(spec, args, compute_units, requested,
                           {block_layout(spec).resident, min_keys_per_split, max_splits});
}

}  // namespace

extern const FamilyDescriptor decode_mma_family = {
    .name = "decode-mma",
    .template_file = "fa_decode_mma.h",
    .kernel = "fa_decode_mma",
    .prelude_parts = prelude_parts,
    .dtypes = dtypes,
    .head_dims = every_head_dim,
    .kv_layouts = kv_layouts,
    .targets = "NVIDIA targets sm_80 or later",
    .compiles_for = sm80_or_newer,
    .check = check,
    .refuses_shape = refuses_all_but_decode,
    .choose_tile = choose_tile,
    .shared_layout = shared_layout,
    .shared_limit = nvidia_shared_limit,
    .launch_shape = split_launch,
    .plan_splits = plan_splits,
};

}  // namespace fajit
