// fa_mma_sm80: flash attention on NVIDIA tensor cores through mma.sync (sm_80 and
// later), in the FlashAttention-2 arrangement: a block owns Spec::block_q query rows,
// each warp owns block_q / waves of them (16 or 32: one or two m16 row tiles), and
// the block walks the keys in steps of Spec::block_k, never leaving registers with
// the scores, the probabilities or the output.
//
// Per key step, for each warp (g = lane/4 and t = lane%4 as in the mma fragments):
//   S  = Q K^T    A = Q (ldmatrix of Q rows), B = K^T (ldmatrix of K rows: a K row is
//                 a column of K^T, which is the B fragment's non-transposed layout).
//                 Lane (g, t) holds rows g and g+8 of each row tile, keys 2t, 2t+1 of
//                 each 8-key tile: a row's scores live in one quad of lanes.
//   P  = exp2(S - frame), rounded to the input type. The S accumulator of two
//                 adjacent 8-key tiles is exactly the A fragment of one 16-key slice
//                 of P, so P goes to the next product with no data movement.
//   O += P V      B = V (ldmatrix.trans of V rows). O's rows are the lane's own rows
//                 g and g+8, so rescaling O is a per-lane multiply in registers.
//
// Rescale margin (DESIGN section 7): each row keeps a frame f (log2 units). For a step
// whose row maximum mb exceeds f + margin, f moves to mb and O and the running sum
// are scaled by exp2(f - mb); otherwise P = exp2(S - f) stays below exp(margin).
// A warp in which no row moves skips the O rescale entirely, which is what a margin
// buys: once a row's largest scores have been seen, later steps rarely move it.
//
// Shared memory (dynamic): the host picks the stage count and reserves the bytes
// (src/families/mma_sm80.cpp); fa_mma_layout derives the offsets and checks the bytes:
//   Q        block_q rows, loaded once;
//   K, V     `stages` buffers of block_k rows each, filled by cp.async: while the
//            block computes step j, steps j+1 .. j+stages-1 are in flight. V rows have
//            Spec::head_dim_v elements, which may differ from Q's and K's.
// Rows are stored with the padded pitch of prelude_sm80.h (fa_sm80_rows).
//
// Masks (causal, sliding window) are applied only on steps that reach outside the keys
// every row sees; a step no row of a warp can see is skipped by that warp, and key
// blocks no row of the block sees are never loaded. Rows that see no key
// at all (Lq > Lk under bottom-right) output zeros and LSE -inf, as in fa_scalar.
//
// Loads use cp.async when the tensors are 16-byte aligned (base pointers, and strides
// multiples of 8 elements); otherwise a slower synchronous path copies the same
// chunks element by element, so any layout the library accepts runs correctly.
//
// Batched calls (Spec::kv_layout): blockIdx.z is the sequence, whose own lengths decide
// the masks and the key steps; the grid covers the longest sequence, so query tiles past
// a shorter one's end exit at once. K and V blocks step by the row stride from their
// first key, except paged blocks that span pages (page_size < block_k), whose rows are
// looked up one by one.

template <class Spec>
struct fa_mma_layout {
    using tile_rows = fa_sm80_rows<Spec::head_dim>;  // Q and K
    using value_rows = fa_sm80_rows<Spec::head_dim_v>;
    static constexpr int stages = Spec::kv_stages;
    static constexpr int q_bytes = Spec::block_q * tile_rows::pitch;
    static constexpr int k_bytes = Spec::block_k * tile_rows::pitch;
    static constexpr int v_bytes = Spec::block_k * value_rows::pitch;
    static constexpr int bytes = q_bytes + stages * (k_bytes + v_bytes);
    static_assert(bytes <= Spec::shared_bytes, "the host reserves less shared memory than fa_mma_layout uses");

    static FAJIT_DEVICE unsigned int offset(int row, int chunk) { return tile_rows::offset(row, chunk); }
};

template <class Spec>
__global__ void __launch_bounds__(Spec::waves * 32, Spec::waves >= 8 ? 1 : 8 / Spec::waves) fa_mma_sm80(fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    using layout = fa_mma_layout<Spec>;
    using tile_rows = typename layout::tile_rows;
    using value_rows = typename layout::value_rows;
    constexpr int head_dim = Spec::head_dim;
    constexpr int value_dim = Spec::head_dim_v;
    constexpr int padded_dim = fa_sm80_padded_dim<head_dim>;  // what the tiles cover
    constexpr int block_q = Spec::block_q;
    constexpr int block_k = Spec::block_k;
    constexpr int stages = layout::stages;
    constexpr int warp_rows = block_q / Spec::waves;
    constexpr int m_tiles = warp_rows / 16;                       // 16-row tiles per warp
    constexpr int dim_slices = padded_dim / 16;                   // k steps of Q K^T
    constexpr int dim_tiles = fa_sm80_padded_dim<value_dim> / 8;  // 8-column tiles of O
    constexpr int key_tiles = block_k / 8;                        // 8-column tiles of S
    constexpr int key_slices = block_k / 16;                      // k steps of P V
    // Q as A fragments costs m_tiles * padded_dim / 4 registers per lane; beyond 32 it
    // would crowd the O accumulator, so it is read again from shared memory each step.
    constexpr bool q_in_registers = m_tiles * padded_dim <= 128;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;

    extern __shared__ __align__(128) unsigned char fa_mma_shared[];
    const unsigned int shared = fa_nv_shared_address(fa_mma_shared);
    const unsigned int q_tile = shared;
    const auto k_tile = [&](int stage) {
        return shared + layout::q_bytes + static_cast<unsigned int>(stage * (layout::k_bytes + layout::v_bytes));
    };
    const auto v_tile = [&](int stage) { return k_tile(stage) + layout::k_bytes; };

    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int g = lane / 4;
    // Under a causal mask the last query tiles see the most keys: launching them first
    // keeps the longest blocks off the end of the grid.
    const int row0 = (static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x)) * block_q;
    const int head = blockIdx.y;
    const int kv_head = head / (p.heads_q / p.heads_kv);
    const fa_sequence sequence = fa_sequence_of<Spec>(p, blockIdx.z);
    const int len_q = sequence.len_q, len_k = sequence.len_k;
    if (row0 >= len_q) return;  // past this sequence's rows (the whole block)

    const element* q = static_cast<const element*>(p.q) + fa_row_offset(p.q_stride, sequence, head, 0);
    const element* k = fa_key_rows_start<Spec, element>(p, p.k, p.k_stride, sequence, kv_head);
    const element* v = fa_key_rows_start<Spec, element>(p, p.v, p.v_stride, sequence, kv_head);
    const bool aligned = fa_nv_aligned16<element>(p.q, p.q_stride) && fa_nv_aligned16<element>(p.k, p.k_stride) &&
                         fa_nv_aligned16<element>(p.v, p.v_stride);

    const int rows_here = min(block_q, len_q - row0);
    const fa_key_blocks blocks = fa_key_blocks_of<Spec>(p, row0, rows_here, len_q, len_k, block_k);
    const int steps = blocks.count;
    const int warp_row0 = row0 + warp * warp_rows;
    const bool warp_has_rows = warp_row0 < len_q;
    const int warp_key_begin = warp_has_rows ? fa_visible_range<Spec>(p, warp_row0, len_q, len_k).begin : 0;
    const int warp_key_end =
        warp_has_rows ? fa_visible_range<Spec>(p, min(warp_row0 + warp_rows, len_q) - 1, len_q, len_k).end : 0;
    const auto key0_of = [&](int step) { return (blocks.first + step) * block_k; };

    const auto load_step = [&](int step) {
        const int key0 = key0_of(step);
        const int stage = step % stages;
        fa_sm80_load_key_block<Spec, tile_rows, value_rows, Spec::waves * 32, block_k>(
            p, sequence, kv_head, key0, fa_nv_block_page<Spec, block_k>(p, sequence, key0), len_k - key0, k, v,
            k_tile(stage), v_tile(stage), aligned, threadIdx.x);
    };
    fa_sm80_load_rows<tile_rows, Spec::waves * 32, block_q, 1>(
        {q_tile}, fa_nv_strided_rows<element, 1>{{q + row0 * p.q_stride[2]}, {p.q_stride[2]}}, rows_here, aligned,
        threadIdx.x);
    // One commit group per step (empty past the end) so wait_group counts steps.
#pragma unroll
    for (int step = 0; step < stages - 1; ++step) {
        if (step < steps) load_step(step);
        fa_nv_cp_async_commit();
    }

    // This lane's rows: g and g+8 of each of its row tiles.
    float frame[m_tiles][2];
    float sum[m_tiles][2];
    float out[m_tiles][4 * dim_tiles];
#pragma unroll
    for (int m = 0; m < m_tiles; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            frame[m][h] = fa_neg_inf();
            sum[m][h] = 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 4 * dim_tiles; ++i) out[m][i] = 0.0f;
    }

    // ldmatrix row addresses: lane l serves row l%8 of matrix l/8.
    const int matrix = lane / 8;
    const int matrix_row = lane % 8;
    const auto q_fragment = [&](unsigned int(&a)[4], int m, int slice) {
        // Matrices: rows 0-7 / 8-15 of the row tile (bit 0), dims +0 / +8 (bit 1).
        const int row = warp * warp_rows + 16 * m + 8 * (matrix % 2) + matrix_row;
        fa_nv_ldmatrix_x4(a, q_tile + layout::offset(row, 2 * slice + matrix / 2));
    };
    unsigned int q_registers[q_in_registers ? m_tiles : 1][q_in_registers ? dim_slices : 1][4];

    for (int step = 0; step < steps; ++step) {
        fa_nv_cp_async_wait<stages - 2>();
        __syncthreads();  // step's tiles visible to all; the buffer refilled below is free
        if (step + stages - 1 < steps) load_step(step + stages - 1);
        fa_nv_cp_async_commit();

        if constexpr (q_in_registers)
            if (step == 0)
#pragma unroll
                for (int m = 0; m < m_tiles; ++m)
#pragma unroll
                    for (int slice = 0; slice < dim_slices; ++slice) q_fragment(q_registers[m][slice], m, slice);

        const int key0 = key0_of(step);
        if (key0 >= warp_key_end || key0 + block_k <= warp_key_begin) continue;  // no row of this warp sees these
        const unsigned int k_stage = k_tile(step % stages);
        const unsigned int v_stage = v_tile(step % stages);

        float score[m_tiles][4 * key_tiles];
#pragma unroll
        for (int m = 0; m < m_tiles; ++m)
#pragma unroll
            for (int i = 0; i < 4 * key_tiles; ++i) score[m][i] = 0.0f;

#pragma unroll(q_in_registers ? dim_slices : 1)
        for (int slice = 0; slice < dim_slices; ++slice) {
            unsigned int a[m_tiles][4];
#pragma unroll
            for (int m = 0; m < m_tiles; ++m) {
                if constexpr (q_in_registers)
                    for (int r = 0; r < 4; ++r) a[m][r] = q_registers[m][slice][r];
                else
                    q_fragment(a[m], m, slice);
            }
            fa_sm80_add_scores<element, tile_rows, m_tiles, key_tiles>(score, a, k_stage, slice, matrix, matrix_row);
        }

        // Keys a row may not see become -inf only on steps that reach outside the keys every
        // row of the block sees; a row's range is recomputed rather than kept, since
        // registers are what this kernel is short of.
        const bool masked = fa_block_masked<Spec>(blocks.unmasked, key0, block_k);
        float correction[m_tiles][2];
        bool any_moved = false;
        float multiplier[m_tiles];
        unsigned int probability[m_tiles][key_slices][4];
#pragma unroll
        for (int m = 0; m < m_tiles; ++m) {
            const int row = warp_row0 + 16 * m + g;
            fa_key_range visible[2];
#pragma unroll
            for (int h = 0; h < 2; ++h)
                visible[h] = masked ? fa_visible_range<Spec>(p, row + 8 * h, len_q, len_k) : fa_key_range{0, 0};
            float row_max[2];
            multiplier[m] = fa_m16n8_scores<Spec, key_tiles>(p, kv_head, score[m], masked, visible, key0, row_max);
            any_moved |= fa_m16n8_move_frames(p, len_q, row, margin_log2, row_max, frame[m], sum[m], correction[m]);
        }
        if (__any_sync(0xffffffffu, any_moved))
#pragma unroll
            for (int m = 0; m < m_tiles; ++m)
#pragma unroll
                for (int i = 0; i < 4 * dim_tiles; ++i) out[m][i] *= correction[m][(i % 4) / 2];
#pragma unroll
        for (int m = 0; m < m_tiles; ++m) {
            fa_m16n8_exponentiate<key_tiles>(score[m], multiplier[m], frame[m], sum[m]);
            fa_m16n8_pack<element, key_tiles>(score[m], probability[m]);
        }

#pragma unroll
        for (int slice = 0; slice < key_slices; ++slice)
            fa_sm80_add_pv<element, value_rows, m_tiles, dim_tiles, key_slices>(out, probability, v_stage, slice,
                                                                                matrix, matrix_row);
    }
    fa_nv_cp_async_wait<0>();  // no copy may still target shared memory at exit

#pragma unroll
    for (int m = 0; m < m_tiles; ++m)
        fa_m16n8_store<Spec, dim_tiles>(p, sequence, head, warp_row0 + 16 * m + g, out[m], frame[m], sum[m]);
}
