// fa_decode_mma: decode and short chunks on NVIDIA tensor cores (mma.sync m16n8k16, sm_80
// and later), split over the key range (flash-decoding). Rows, splits and the block's
// ending are the split-KV prelude part's (prelude_split_kv.h).
//
// The block's 16 or 32 packed rows are one or two m16 row tiles, and every warp holds all
// of them: the warps divide the keys instead. Warp w walks blocks w, w + waves, w + 2 waves, ... of
// Spec::block_k keys of the split, each through its own cp.async pipeline of kv_stages
// buffers, so the loop has no block-wide barrier. Per block of keys a warp computes
// S = Q K^T, moves its frames by the rescale margin, and adds P V to its O, with the
// fragments of fa_mma_sm80 (prelude_nvidia.h's m16n8 softmax). Decode reads each key
// once and does little with it, so memory sets the pace: the copies of every warp's next
// step are in flight together (kv_stages buffers a warp, the host's choice: two on sm_90
// and later).
//
// At the end the warps merge their partials in shared memory laid over their K/V buffers,
// each bringing its O and sum to the largest frame, and fa_split_finish ends the block.
// Copies are issued a warp at a time, unrolled, with each paged step's page read a step
// ahead, into tiles swizzled where the head dim allows (fa_sm80_streaming_rows), so that
// each 128-byte line read is one L2 request.

template <class Spec>
struct fa_decode_mma_layout {
    using tile_rows = fa_sm80_streaming_rows<Spec::head_dim>;  // Q and K
    using value_rows = fa_sm80_streaming_rows<Spec::head_dim_v>;
    static constexpr int rows = Spec::block_q;
    static constexpr int stages = Spec::kv_stages;
    static constexpr int q_bytes = rows * tile_rows::pitch;
    static constexpr int k_bytes = Spec::block_k * tile_rows::pitch;
    static constexpr int v_bytes = Spec::block_k * value_rows::pitch;
    static constexpr int warp_bytes = stages * (k_bytes + v_bytes);  // a warp's K and V buffers
    // After the loop, the warps' partials (rows of O in f32) and then the merged rows lie
    // where the K/V buffers were; the area is the larger of the two uses.
    static constexpr int partial_bytes = 4 * rows * Spec::head_dim_v;
    static constexpr int merged_offset = q_bytes + Spec::waves * partial_bytes;
    static constexpr int kv_bytes = Spec::waves * warp_bytes;
    static constexpr int merge_area = (Spec::waves + 1) * partial_bytes;
    static constexpr int buffer_bytes = q_bytes + (kv_bytes > merge_area ? kv_bytes : merge_area);
    // After the buffers: the warps' frames and sums, the block's frame and sum, and a flag.
    static constexpr int bytes = buffer_bytes + 4 * (2 * Spec::waves + 2) * rows + 4;
    static_assert(rows == 16 || rows == 32, "fa_decode_mma holds one or two m16 row tiles");
    static_assert(bytes <= Spec::shared_bytes, "the host reserves less shared memory than fa_decode_mma_layout uses");
};

template <class Spec>
__global__ void __launch_bounds__(Spec::waves * 32, Spec::resident_blocks) fa_decode_mma(fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    using layout = fa_decode_mma_layout<Spec>;
    using tile_rows = typename layout::tile_rows;
    using value_rows = typename layout::value_rows;
    constexpr int rows = Spec::block_q;
    constexpr int row_tiles = rows / 16;
    constexpr int head_dim = Spec::head_dim;
    constexpr int value_dim = Spec::head_dim_v;
    constexpr int block_k = Spec::block_k;
    constexpr int waves = Spec::waves;
    constexpr int stages = layout::stages;
    constexpr int padded_dim = fa_sm80_padded_dim<head_dim>;      // what the tiles cover
    constexpr int dim_slices = padded_dim / 16;                   // k steps of Q K^T
    constexpr int dim_tiles = fa_sm80_padded_dim<value_dim> / 8;  // 8-column tiles of O
    constexpr int key_tiles = block_k / 8;                        // 8-column tiles of S
    constexpr int key_slices = block_k / 16;                      // k steps of P V
    // As in fa_mma_sm80: past 32 registers Q would crowd the O accumulator, and so it
    // does beside an O wider than 128 (d=128 with dv=192 or 256 took 255 registers and
    // spilled 4 bytes on sm_80; with Q staged, 223 and 244).
    constexpr bool q_in_registers = row_tiles * padded_dim <= 128 && fa_sm80_padded_dim<value_dim> <= 128;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;

    extern __shared__ __align__(128) unsigned char fa_decode_shared[];
    const unsigned int shared = fa_nv_shared_address(fa_decode_shared);
    const unsigned int q_tile = shared;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int g = lane / 4;
    const unsigned int warp_buffers = shared + layout::q_bytes + warp * layout::warp_bytes;
    const auto k_tile = [&](int stage) {
        return warp_buffers + static_cast<unsigned int>(stage * (layout::k_bytes + layout::v_bytes));
    };
    const auto v_tile = [&](int stage) { return k_tile(stage) + layout::k_bytes; };

    const fa_split_block block = fa_split_block_of<Spec>(p, block_k);
    const int kv_head = block.kv_head, group = block.group, packed_rows = block.packed_rows;
    const int last_key = block.last;
    const fa_sequence& sequence = block.sequence;
    const int steps = fa_split_steps(block, block_k, warp, waves);

    const element* q = static_cast<const element*>(p.q);
    const element* k = fa_key_rows_start<Spec, element>(p, p.k, p.k_stride, sequence, kv_head);
    const element* v = fa_key_rows_start<Spec, element>(p, p.v, p.v_stride, sequence, kv_head);
    const bool aligned = fa_nv_aligned16<element>(p.q, p.q_stride) && fa_nv_aligned16<element>(p.k, p.k_stride) &&
                         fa_nv_aligned16<element>(p.v, p.v_stride);

    // Q's packed rows, one 16-byte chunk per thread and pass; idle rows and the padding
    // dims are zeros.
    for (int i = threadIdx.x; i < rows * tile_rows::chunks; i += blockDim.x) {
        const int r = i / tile_rows::chunks, chunk = i % tile_rows::chunks;
        const bool valid = r < packed_rows && chunk < tile_rows::data_chunks;
        const long long row = valid ? fa_row_offset(p.q_stride, sequence, fa_packed_head(kv_head, group, r),
                                                    fa_packed_query_row(group, r))
                                    : 0;
        fa_nv_copy_chunk(q_tile + tile_rows::offset(r, chunk), q + row + chunk * 8, valid, aligned);
    }
    fa_nv_cp_async_commit();

    const auto key0_of = [&](int step) { return fa_split_key(block, warp + step * waves, block_k); };
    // A paged step's block-table entry is read when the step before it is loaded, and
    // checked only when its copies are issued, so the warp never waits on the read just
    // before them (that wait was 17% of the kernel's stall samples, ncu, H200, 16 x 8K keys
    // in 16-key pages; 20% when the check followed the read). Past the last step the
    // read repeats the current one's entry, so it is never conditional. The first is read
    // whether or not the warp has a step, its key kept inside the table's row, so that it
    // need not wait for the sequence's length.
    constexpr bool reads_pages = fa_nv_block_in_one_page<Spec, block_k>;
    int upcoming_entry = 0;
    if constexpr (reads_pages)
        upcoming_entry =
            fa_block_table_entry<Spec>(p, sequence, min(key0_of(0), p.max_pages_per_seq * Spec::page_size - 1));
    const auto load_step = [&](int step) {
        const int key0 = key0_of(step);
        const int stage = step % stages;
        int page = 0;
        if constexpr (reads_pages) {
            page = fa_page_in_cache(p, upcoming_entry);
            upcoming_entry = fa_block_table_entry<Spec>(p, sequence, step + 1 < steps ? key0_of(step + 1) : key0);
        }
        fa_sm80_load_key_block<Spec, tile_rows, value_rows, 32, block_k, true>(
            p, sequence, kv_head, key0, page, last_key - key0, k, v, k_tile(stage), v_tile(stage), aligned, lane);
    };
    // One commit group per step (empty past the end) so wait_group counts steps.
#pragma unroll
    for (int step = 0; step < stages - 1; ++step) {
        if (step < steps) load_step(step);
        fa_nv_cp_async_commit();
    }
    fa_nv_cp_async_wait<stages - 1>();  // Q's group, the oldest, has landed
    __syncthreads();                    // and every thread's part of it

    // ldmatrix row addresses: lane l serves row l%8 of matrix l/8.
    const int matrix = lane / 8;
    const int matrix_row = lane % 8;
    const auto q_fragment = [&](unsigned int(&a)[4], int m, int slice) {
        // Matrices: rows 0-7 / 8-15 of row tile m (bit 0), dims +0 / +8 (bit 1).
        fa_nv_ldmatrix_x4(a,
                          q_tile + tile_rows::offset(16 * m + 8 * (matrix % 2) + matrix_row, 2 * slice + matrix / 2));
    };
    unsigned int q_registers[q_in_registers ? row_tiles : 1][q_in_registers ? dim_slices : 1][4];
    if constexpr (q_in_registers)
#pragma unroll
        for (int m = 0; m < row_tiles; ++m)
#pragma unroll
            for (int slice = 0; slice < dim_slices; ++slice) q_fragment(q_registers[m][slice], m, slice);

    // This lane's rows are g and g+8 of each row tile. Idle rows keep every key of the
    // split: their scores are zeros, and they are never stored.
    fa_key_range visible[row_tiles][2];
#pragma unroll
    for (int m = 0; m < row_tiles; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = 16 * m + g + 8 * h;
            visible[m][h] = r < packed_rows ? fa_visible_range<Spec>(p, fa_packed_query_row(group, r), sequence.len_q,
                                                                     sequence.len_k)
                                            : fa_key_range{block.first, last_key};
            visible[m][h].end = min(visible[m][h].end, last_key);
        }
    // Query row 0 sees the fewest keys and the last row the latest first key: blocks
    // between the two limits need no mask.
    const fa_key_range unmasked = {
        fa_visible_range<Spec>(p, fa_packed_query_row(group, packed_rows - 1), sequence.len_q, sequence.len_k).begin,
        min(last_key, fa_visible_range<Spec>(p, 0, sequence.len_q, sequence.len_k).end)};

    float frame[row_tiles][2], sum[row_tiles][2];
    float out[row_tiles][4 * dim_tiles];
#pragma unroll
    for (int m = 0; m < row_tiles; ++m) {
        frame[m][0] = frame[m][1] = fa_neg_inf();
        sum[m][0] = sum[m][1] = 0.0f;
#pragma unroll
        for (int i = 0; i < 4 * dim_tiles; ++i) out[m][i] = 0.0f;
    }

    for (int step = 0; step < steps; ++step) {
        fa_nv_cp_async_wait<stages - 2>();
        __syncwarp();  // the step's tiles visible to the warp; the buffer refilled below is free
        if (step + stages - 1 < steps) load_step(step + stages - 1);
        fa_nv_cp_async_commit();

        const int key0 = key0_of(step);
        const unsigned int k_stage = k_tile(step % stages);
        const unsigned int v_stage = v_tile(step % stages);

        float score[row_tiles][4 * key_tiles];
#pragma unroll
        for (int m = 0; m < row_tiles; ++m)
#pragma unroll
            for (int i = 0; i < 4 * key_tiles; ++i) score[m][i] = 0.0f;
#pragma unroll(q_in_registers ? dim_slices : 1)
        for (int slice = 0; slice < dim_slices; ++slice) {
            unsigned int a[row_tiles][4];
#pragma unroll
            for (int m = 0; m < row_tiles; ++m) {
                if constexpr (q_in_registers)
                    for (int r = 0; r < 4; ++r) a[m][r] = q_registers[m][slice][r];
                else
                    q_fragment(a[m], m, slice);
            }
            fa_sm80_add_scores<element, tile_rows, row_tiles, key_tiles>(score, a, k_stage, slice, matrix, matrix_row);
        }

        const bool masked = fa_block_masked<Spec>(unmasked, key0, block_k);
        unsigned int probability[row_tiles][key_slices][4];
#pragma unroll
        for (int m = 0; m < row_tiles; ++m) {
            float row_max[2], correction[2];
            const float multiplier =
                fa_m16n8_scores<Spec, key_tiles>(p, kv_head, score[m], masked, visible[m], key0, row_max);
            const bool moved =
                fa_m16n8_move_frames(p, packed_rows, 16 * m + g, margin_log2, row_max, frame[m], sum[m], correction);
            if (__any_sync(0xffffffffu, moved))
#pragma unroll
                for (int i = 0; i < 4 * dim_tiles; ++i) out[m][i] *= correction[(i % 4) / 2];
            fa_m16n8_exponentiate<key_tiles>(score[m], multiplier, frame[m], sum[m]);
            fa_m16n8_pack<element, key_tiles>(score[m], probability[m]);
        }

#pragma unroll
        for (int slice = 0; slice < key_slices; ++slice)
            fa_sm80_add_pv<element, value_rows, row_tiles, dim_tiles, key_slices>(out, probability, v_stage, slice,
                                                                                  matrix, matrix_row);
    }
    fa_nv_cp_async_wait<0>();  // no copy may still target the buffers the merge reuses
    __syncthreads();           // and no warp still reads them

    // The warps' partials meet in shared memory laid over their K/V buffers: each warp
    // writes its O, brought to the rows' largest frame, to a slice of its own in fragment
    // order (a float2 per lane and tile half, so a warp's store is 256 contiguous bytes
    // free of bank conflicts, where rows of O had the 8 rows of a fragment in one bank),
    // and only the halves that hold a packed row. Then each thread sums its elements over
    // the slices and writes them, by row, past the last. (Float atomics into one slice
    // were compare-and-swap loops on shared memory that the warps' retries serialized: a
    // fifth of the kernel's stall samples, ncu, H200, 16 x 8K keys.)
    constexpr int value_tiles = value_dim / 8;  // the padding dims' tiles are not merged
    constexpr int slice_pairs = row_tiles * value_tiles * 2 * 32;
    const auto pair_index = [](int m, int n, int h, int pair_lane) {
        return ((m * value_tiles + n) * 2 + h) * 32 + pair_lane;
    };
    float2(*slices)[slice_pairs] = reinterpret_cast<float2(*)[slice_pairs]>(fa_decode_shared + layout::q_bytes);
    float* wave_frames = reinterpret_cast<float*>(fa_decode_shared + layout::buffer_bytes);  // [waves][rows]
    float* wave_sums = wave_frames + waves * rows;                                           // [waves][rows]
    float* block_frame = wave_sums + waves * rows;
    float* block_sum = block_frame + rows;
    bool& merges_splits = *reinterpret_cast<bool*>(block_sum + rows);
    const int t = lane % 4;
#pragma unroll
    for (int m = 0; m < row_tiles; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            sum[m][h] += fa_shuffle_xor(sum[m][h], 1);
            sum[m][h] += fa_shuffle_xor(sum[m][h], 2);
            if (t == 0) wave_frames[warp * rows + 16 * m + g + 8 * h] = frame[m][h];
        }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < row_tiles; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = 16 * m + g + 8 * h;
            float largest = fa_neg_inf();
            for (int w = 0; w < waves; ++w) largest = fmaxf(largest, wave_frames[w * rows + r]);
            // A warp that saw no key of the row adds nothing.
            const float factor = frame[m][h] == fa_neg_inf() ? 0.0f : fa_exp2(frame[m][h] - largest);
            if (16 * m + 8 * h < packed_rows)
#pragma unroll
                for (int n = 0; n < value_tiles; ++n)
                    slices[warp][pair_index(m, n, h, lane)] =
                        make_float2(out[m][4 * n + 2 * h] * factor, out[m][4 * n + 2 * h + 1] * factor);
            if (t == 0) wave_sums[warp * rows + r] = sum[m][h] * factor;
            if (warp == 0 && t == 0) block_frame[r] = largest;
        }
    __syncthreads();
    // Pair e of a slice is row 16 m + 8 h + lane / 4, columns 8 n + 2 (lane % 4) and one more.
    // Each sum goes to the merged rows past the last slice as soon as it is taken: written
    // over the first slice, every sum had waited in a register until all slices were read,
    // rows x dv / (64 x waves) float2 a thread, which spilled with one warp (288 bytes at
    // d=120 with 32 rows, 116 at d=248; static, sm_90a). The passes are unrolled: rolled,
    // batch-1 calls were 0.5-3% slower (H100).
    const auto pair_row = [](int e) { return 16 * (e / (64 * value_tiles)) + 8 * (e / 32 % 2) + e % 32 / 4; };
    const auto pair_column = [](int e) { return 8 * (e / 64 % value_tiles) + 2 * (e % 4); };
    float(*merged)[value_dim] = reinterpret_cast<float(*)[value_dim]>(fa_decode_shared + layout::merged_offset);
    constexpr int passes = (slice_pairs + 32 * waves - 1) / (32 * waves);
#pragma unroll
    for (int j = 0; j < passes; ++j) {
        const int e = threadIdx.x + j * 32 * waves;
        if (e < slice_pairs && pair_row(e) < packed_rows) {
            float2 total = make_float2(0.0f, 0.0f);
#pragma unroll
            for (int w = 0; w < waves; ++w) {
                const float2 part = slices[w][e];
                total.x += part.x;
                total.y += part.y;
            }
            merged[pair_row(e)][pair_column(e)] = total.x;
            merged[pair_row(e)][pair_column(e) + 1] = total.y;
        }
    }
    if (threadIdx.x < rows) {
        float total = 0.0f;
        for (int w = 0; w < waves; ++w) total += wave_sums[w * rows + threadIdx.x];
        block_sum[threadIdx.x] = total;
    }
    __syncthreads();
    // A merge's chunk of splits in flight: 8 where a thread has 128 registers (two blocks
    // an SM of 8 warps, d <= 64), where 16 spilled in the cluster merge (4 bytes at d=56
    // and d=64, sm_90a), else 16.
    constexpr int merge_chunk = 65536 / (Spec::resident_blocks * waves * 32) > 128 ? 16 : 8;
    fa_split_finish<Spec, merge_chunk>(p, sequence, kv_head, packed_rows, merged, block_frame, block_sum,
                                       merges_splits);
}
