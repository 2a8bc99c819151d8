#include "runtime/launch_geometry.hpp"

#include <algorithm>

#include "spec/arch.hpp"

namespace fajit {

unsigned family_shared_bytes(const KernelSpec& spec) {
    switch (spec.family) {
        case Family::scalar:
            return 0;  // a small static array
        case Family::wmma_gfx11: {
            // Mirrors fa_wmma_layout in kernel_templates/fa_wmma_gfx11.h: K rows and
            // transposed V rows padded by 8 elements, plus Q for head dims over 128.
            const unsigned d = static_cast<unsigned>(spec.head_dim);
            const unsigned k = static_cast<unsigned>(spec.block_k);
            const unsigned q_rows = spec.head_dim > 128 ? 16u * static_cast<unsigned>(spec.waves) : 0u;
            return 2u * (k * (d + 8) + d * (k + 8) + q_rows * (d + 8));
        }
        case Family::mma_sm80: {
            // Mirrors fa_mma_layout in kernel_templates/fa_mma_sm80.h: Q plus `stages`
            // K and V buffers; rows of d/8 16-byte chunks plus one chunk of padding.
            const unsigned row_bytes = 16u * (static_cast<unsigned>(spec.head_dim) / 8u + 1u);
            const unsigned stages = spec.head_dim <= 64 ? 3u : 2u;
            const unsigned block_q = static_cast<unsigned>(spec.block_q);
            const unsigned block_k = static_cast<unsigned>(spec.block_k);
            return row_bytes * (block_q + 2u * stages * block_k);
        }
        case Family::wgmma_sm90: {
            // Mirrors fa_wgmma_layout in kernel_templates/fa_wgmma_sm90.h: Q plus `stages`
            // K and V buffers of unpadded swizzled rows, four 8-byte mbarriers a stage and
            // one for Q, and 1024 bytes to align the start.
            const unsigned row_bytes = 2u * static_cast<unsigned>(spec.head_dim);
            const unsigned q_bytes = row_bytes * static_cast<unsigned>(spec.block_q);
            const unsigned stage_bytes = 2u * row_bytes * static_cast<unsigned>(spec.block_k);
            const unsigned stages_that_fit = (227u * 1024u - 1024u - 8u * (4u * 4u + 1u) - q_bytes) / stage_bytes;
            const unsigned stages = std::clamp(stages_that_fit, 2u, 4u);  // under 2, validation refuses the bytes
            return q_bytes + stages * stage_bytes + 32u * stages + 8u + 1024u;
        }
    }
    return 0;
}

LaunchShape launch_shape(const KernelSpec& spec, const AttentionArgs& args, int compute_units) {
    // Every family tiles queries by block_q rows, one block per (tile, head, batch),
    // except wgmma-sm90: its blocks are persistent, one per multiprocessor, each walking
    // query tiles in turn (fa_wgmma_block_tile).
    LaunchShape shape;
    const unsigned query_tiles = static_cast<unsigned>((args.len_q + spec.block_q - 1) / spec.block_q);
    shape.grid[0] = query_tiles;
    shape.grid[1] = static_cast<unsigned>(args.heads_q);
    shape.grid[2] = static_cast<unsigned>(args.batch);
    if (spec.family == Family::wgmma_sm90) {
        const unsigned tiles = query_tiles * shape.grid[1] * shape.grid[2];
        shape.grid[0] = compute_units > 0 ? std::min(tiles, static_cast<unsigned>(compute_units)) : tiles;
        shape.grid[1] = shape.grid[2] = 1;
    }
    shape.block[0] = static_cast<unsigned>(spec.waves * wave_size(spec.arch));
    // wgmma-sm90's waves are its consumers; a producer warpgroup of 128 threads copies
    // for them (fa_wgmma_layout::threads).
    if (spec.family == Family::wgmma_sm90) shape.block[0] += 128u;
    // The wmma family declares its LDS statically on AMD; on NVIDIA (its emulation) it
    // is dynamic, since more than 48 KiB must be, and sized here.
    if (spec.family == Family::wmma_gfx11 && vendor_of(spec.arch) == Vendor::nvidia)
        shape.shared_bytes = family_shared_bytes(spec);
    if (spec.family == Family::mma_sm80 || spec.family == Family::wgmma_sm90)
        shape.shared_bytes = family_shared_bytes(spec);
    return shape;
}

}  // namespace fajit
