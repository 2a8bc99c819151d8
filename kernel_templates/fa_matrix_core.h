// fa_matrix_core: flash attention on AMD's matrix cores, 16x16x16 tiles, written once
// against the tile API of the prelude's tile part: prelude_wmma_tile.h (wmma-gfx11: gfx11
// WMMA, wave32) or prelude_mfma_tile.h (mfma-gfx9: gfx9 MFMA, wave64). On NVIDIA the same
// source runs on either part's lane-faithful emulation, which is how it is tested there.
//
// Work split. A block owns Spec::block_q = 16 * Spec::waves query rows; each wave
// owns 16 of them. Per step of Spec::block_k keys the block stages K and V in LDS
// (two barriers per step), then every wave computes, with tiles in the part's layout
// (C: element v of lane l is C[fa_tile_c_row(v)][l%16]; operands: lane l holds (its part
// of) a k-vector for index l%16):
//
//   S^T = K Q^T     A = K tile (keys x dims, K rows read from LDS),
//                   B = Q^T (lane l holds query row l%16: loaded once per block).
//                   The scores come out transposed: lane l holds query row l%16,
//                   keys fa_tile_c_row(v). Each lane therefore serves one query row, and
//                   the fa_tile_groups lanes l%16 + 16g share it.
//   P^T = exp2(S^T - frame), rounded to the input type. fa_tile_c_to_b turns the
//                   C tile into the B operand (one permlanex16 on gfx11, none on gfx9).
//   O^T += V^T P^T  A = V^T tile (lane l holds V[keys][dim l%16]: V is stored
//                   transposed in LDS so this is a contiguous read), B = P^T.
//                   O^T's element v of lane l is O[row l%16][dim fa_tile_c_row(v)]: the
//                   lanes that serve a query row own its outputs, so rescaling O is a
//                   per-lane multiply in the accumulators, with no LDS round trip.
//
// Rescale margin (DESIGN section 7): each row keeps a frame f (log2 units). For each
// step with row maximum mb: if mb > f + margin the frame moves to mb and O and the
// running sum are scaled by exp2(f - mb); otherwise f is kept and P = exp2(S - f)
// stays below exp(margin). margin 0 is the classic online softmax; the first step a
// row sees keys in always sets its frame.
//
// LDS (bytes = 2 * (K + V^T + Q) elements; the host reserves them, in the family's
// descriptor, so NVIDIA can launch it as dynamic shared memory):
//   K    block_k rows of padded_dim + 8 elements;
//   V^T  padded_value_dim rows (V's head dim, Spec::head_dim_v, padded) of block_k + 8 elements;
//   Q    only where the host stages it (Spec::q_in_lds): 16 * waves rows of padded_dim + 8.
// A gfx11 fragment read is 32 contiguous bytes per lane at row stride (n + 8) elements =
// an odd multiple of 4 banks (n a multiple of 16), so the 8 lanes of each 128-bit
// read phase start 4 banks apart and cover all 32 banks once: K reads and the
// transposed V reads are conflict-free. Lanes l and l^16 read the same address.
//
// Batched calls (Spec::kv_layout): the block's z coordinate is the sequence, whose own
// lengths decide the masks and the key steps; the grid covers the longest sequence, so
// query tiles past a shorter one's end exit at once. K and V rows are found through
// fa_key_row: a stride step from key 0 (dense, ragged), or looked up in the block table
// (paged).
//
// Q stays in registers (padded_dim / 16 operands) unless the host stages it: on gfx11 a
// row's 16 dims are one lane's 8 VGPRs, and at head dim 256 Q would take 128 VGPRs next
// to the 128 of the O accumulator, past the 256-VGPR wave32 budget; there Q is staged in
// LDS once and sliced by head dim, one 16-dim operand read per dim tile per key step.

// Head dims that are no multiple of 16 are padded to one (padded_dim, and V's
// padded_value_dim): the staged K, V^T and Q hold zeros past the head dims, which add
// nothing to S, and the padding rows of O^T are never stored.
template <class Spec>
struct fa_matrix_core_layout {
    static constexpr int padded_dim = (Spec::head_dim + 15) / 16 * 16;
    static constexpr int padded_value_dim = (Spec::head_dim_v + 15) / 16 * 16;
    static constexpr bool q_in_lds = Spec::q_in_lds != 0;
    static constexpr int k_row = padded_dim + 8;  // elements per staged row
    static constexpr int v_row = Spec::block_k + 8;
    static constexpr int q_row = padded_dim + 8;
    static constexpr int k_elements = Spec::block_k * k_row;
    static constexpr int v_elements = padded_value_dim * v_row;
    static constexpr int q_elements = q_in_lds ? Spec::waves * 16 * q_row : 0;
    static constexpr int bytes = 2 * (k_elements + v_elements + q_elements);
    static_assert(bytes <= Spec::shared_bytes, "the host reserves less LDS than fa_matrix_core_layout uses");
};

FAJIT_DEVICE unsigned int fa_word(const fa_u32x4& value, int index) {
    return index == 0 ? value.x : index == 1 ? value.y : index == 2 ? value.z : value.w;
}

// The same for every K or V row of a sequence from `start` (fa_key_rows_start): a paged
// row also adds page and head strides to the tensor's base, which must keep the alignment.
template <class Spec>
FAJIT_DEVICE bool fa_key_vector_ok(const void* start, const long long* stride) {
    if constexpr (Spec::kv_layout == FA_KV_PAGED)
        return fa_vector_ok(start, stride[0]) && fa_vector_ok(start, stride[1]) && fa_vector_ok(start, stride[2]);
    else
        return fa_vector_ok(start, stride[2]);
}

template <class Spec>
__global__ void __launch_bounds__(Spec::waves* FAJIT_TILE_WAVE) fa_matrix_core(fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    using layout = fa_matrix_core_layout<Spec>;
    constexpr int head_dim = Spec::head_dim;
    constexpr int block_k = Spec::block_k;
    constexpr int value_dim = Spec::head_dim_v;
    constexpr int dim_tiles = layout::padded_dim / 16;          // of Q K^T's head dims
    constexpr int value_tiles = layout::padded_value_dim / 16;  // of O's
    constexpr int key_tiles = block_k / 16;
    constexpr int threads = Spec::waves * FAJIT_TILE_WAVE;
    constexpr int chunks_per_row = layout::padded_dim / 8;      // 16-byte pieces of a staged Q or K row
    constexpr int data_chunks = head_dim / 8;                   // the rest are the padding's zeros
    constexpr int value_chunks = layout::padded_value_dim / 8;  // the same of a V row
    constexpr int value_data_chunks = value_dim / 8;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;
    static_assert(sizeof(element) == 2, "fa_matrix_core takes f16 or bf16");
    static_assert(head_dim % 8 == 0 && block_k % 16 == 0, "tiles are 16x16; head dims pad to them by 8");
    static_assert(layout::bytes <= 65536, "LDS over 64 KiB: choose a smaller block_k or fewer waves");

#if FAJIT_AMD
    __shared__ fa_u32x4 shared_words[layout::bytes / 16];
#else
    // Over 48 KiB must be dynamic on NVIDIA; the host sizes it (Spec::shared_bytes).
    extern __shared__ fa_u32x4 shared_words[];
    {
        unsigned int dynamic_bytes;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));
        if (dynamic_bytes < static_cast<unsigned int>(layout::bytes)) __trap();  // host and template disagree
    }
#endif
    unsigned short* const k_tile = reinterpret_cast<unsigned short*>(shared_words);
    unsigned short* const v_tile = k_tile + layout::k_elements;  // transposed: [dim][key]
    unsigned short* const q_stage = v_tile + layout::v_elements;

    const int wave = fa_tile_wave();
    const int group = fa_tile_group();       // which C rows and operand k's this lane holds
    const int column = fa_tile_lane() % 16;  // the query row (within the wave) this lane serves
    const bool row_leader = group == 0;      // the one of a row's lanes that reports and stores LSE
    const fa_block_coordinates block = fa_tile_block();
    const int head = block.y;
    const int kv_head = head / (p.heads_q / p.heads_kv);
    const fa_sequence sequence = fa_sequence_of<Spec>(p, block.z);
    const int len_q = sequence.len_q, len_k = sequence.len_k;
    const int block_row0 = block.x * Spec::block_q;
    if (block_row0 >= len_q) return;  // past this sequence's rows (the whole block)

    const unsigned short* const q =
        static_cast<const unsigned short*>(p.q) + fa_row_offset(p.q_stride, sequence, head, 0);
    const unsigned short* const k = fa_key_rows_start<Spec, unsigned short>(p, p.k, p.k_stride, sequence, kv_head);
    const unsigned short* const v = fa_key_rows_start<Spec, unsigned short>(p, p.v, p.v_stride, sequence, kv_head);
    const auto key_row = [&](const unsigned short* start, const long long* stride, int key) {
        return fa_key_row<Spec>(p, start, stride, sequence, kv_head, key);
    };
    unsigned short* const o = static_cast<unsigned short*>(p.o) + fa_row_offset(p.o_stride, sequence, head, 0);
    const bool q_vector = fa_vector_ok(q, p.q_stride[2]);
    const bool k_vector = fa_key_vector_ok<Spec>(k, p.k_stride);
    const bool v_vector = fa_key_vector_ok<Spec>(v, p.v_stride);

    // Mask limits (fa_visible_range): both ends of a row's keys grow with the row, so the
    // block's rows bound the key loop (other key steps are never staged), the wave's rows
    // bound its work and decide whether a step needs the element mask.
    const int wave_row0 = block_row0 + 16 * wave;
    const int row = wave_row0 + column;
    const bool row_valid = row < len_q;
    const fa_key_blocks blocks =
        fa_key_blocks_of<Spec>(p, block_row0, min(Spec::block_q, len_q - block_row0), len_q, len_k, block_k);
    const bool wave_has_rows = wave_row0 < len_q;
    const fa_key_blocks wave_blocks =
        wave_has_rows ? fa_key_blocks_of<Spec>(p, wave_row0, min(16, len_q - wave_row0), len_q, len_k, block_k)
                      : fa_key_blocks{0, 0, {0, 0}};
    const fa_key_range row_keys = fa_visible_range<Spec>(p, row, len_q, len_k);

    // Q, once per block: rows past len_q read as zeros (and are never stored).
    const unsigned short* const q_row = q + row * p.q_stride[2];
    const fa_u32x4 zero = {0u, 0u, 0u, 0u};
    unsigned short* const q_rows = q_stage + wave * 16 * layout::q_row;  // this wave's rows
    fa_tile_ab q_operand[layout::q_in_lds ? 1 : dim_tiles];
    if constexpr (layout::q_in_lds) {
        for (int chunk = group; chunk < chunks_per_row; chunk += fa_tile_groups)
            *reinterpret_cast<fa_u32x4*>(q_rows + column * layout::q_row + chunk * 8) =
                row_valid && chunk < data_chunks ? fa_load8(q_row + chunk * 8, q_vector) : zero;
        fa_tile_wave_sync();  // only this wave reads its rows
    } else {
#pragma unroll
        for (int t = 0; t < dim_tiles; ++t)
            q_operand[t] = fa_global_operand(q_row + t * 16, row_valid ? min(16, head_dim - 16 * t) : 0, q_vector);
    }

    fa_tile_c out[value_tiles];  // O^T: out[t].x[i] = O[row][16t + fa_tile_c_row(i)], relative to frame
#pragma unroll
    for (int t = 0; t < value_tiles; ++t)
#pragma unroll
        for (int i = 0; i < fa_tile_c_elements; ++i) out[t].x[i] = 0.0f;
    float frame = fa_neg_inf();  // log2 units, like the scores
    float lane_sum = 0.0f;       // over this lane's keys; the row's sum is fa_column_sum's
    const float score_scale = fa_scale_log2<Spec>(p, kv_head);
    const fa_soft_cap cap = fa_soft_cap_of(p);

    for (int step = 0; step < blocks.count; ++step) {
        const int key0 = (blocks.first + step) * block_k;
        __syncthreads();  // every wave is done reading the previous step's tiles

        // K rows as they are; keys past len_k are zeros so no NaN enters the products.
        for (int c = threadIdx.x; c < block_k * chunks_per_row; c += threads) {
            const int r = c / chunks_per_row, chunk = c % chunks_per_row;
            const int key = key0 + r;
            *reinterpret_cast<fa_u32x4*>(k_tile + r * layout::k_row + chunk * 8) =
                key < len_k && chunk < data_chunks ? fa_load8(key_row(k, p.k_stride, key) + chunk * 8, k_vector) : zero;
        }
        // V transposed: a thread takes two consecutive keys of 8 dims and writes 8
        // words (key pair) down the dims; consecutive threads write consecutive words.
        for (int c = threadIdx.x; c < (block_k / 2) * value_chunks; c += threads) {
            const int pair = c % (block_k / 2), chunk = c / (block_k / 2);
            const int key = key0 + 2 * pair;
            const bool data = chunk < value_data_chunks;
            const fa_u32x4 first =
                key < len_k && data ? fa_load8(key_row(v, p.v_stride, key) + chunk * 8, v_vector) : zero;
            const fa_u32x4 second =
                key + 1 < len_k && data ? fa_load8(key_row(v, p.v_stride, key + 1) + chunk * 8, v_vector) : zero;
            unsigned int* const words = reinterpret_cast<unsigned int*>(v_tile);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned int a = fa_word(first, j), b = fa_word(second, j);
                const int dim = chunk * 8 + 2 * j;
                words[(dim * layout::v_row) / 2 + pair] = (a & 0xffffu) | (b << 16);
                words[((dim + 1) * layout::v_row) / 2 + pair] = (a >> 16) | (b & 0xffff0000u);
            }
        }
        __syncthreads();
        // Outside every row of this wave (wave-uniform).
        if (step < wave_blocks.first - blocks.first || step >= wave_blocks.first - blocks.first + wave_blocks.count)
            continue;

        // S^T = K Q^T: scores[t].x[i] is row `row`, key key0 + 16t + fa_tile_c_row(i).
        fa_tile_c scores[key_tiles];
#pragma unroll
        for (int t = 0; t < key_tiles; ++t)
#pragma unroll
            for (int i = 0; i < fa_tile_c_elements; ++i) scores[t].x[i] = 0.0f;
#pragma unroll
        for (int d = 0; d < dim_tiles; ++d) {
            fa_tile_ab q_tile;
            if constexpr (layout::q_in_lds)
                q_tile = fa_load_operand(q_rows + column * layout::q_row + d * 16);
            else
                q_tile = q_operand[d];
#pragma unroll
            for (int t = 0; t < key_tiles; ++t)
                fa_mma<element>(scores[t], fa_load_operand(k_tile + (t * 16 + column) * layout::k_row + d * 16),
                                q_tile);
        }

        float step_max = fa_neg_inf();
        if constexpr (Spec::softcap)
#pragma unroll
            for (int t = 0; t < key_tiles; ++t)
#pragma unroll
                for (int i = 0; i < fa_tile_c_elements; ++i)
                    scores[t].x[i] = fa_capped(cap, scores[t].x[i] * score_scale);
        // Scaled here unless the soft-cap did it.
        const float scale_here = Spec::softcap ? 1.0f : score_scale;
        // A soft-cap that fixes the frame (fa_capped_frame_fits) needs a row's maximum only to
        // tell a row that sees no key of a masked step from one that sees some.
        const bool fixed_frame = Spec::softcap && fa_capped_frame_fits<element>(cap);
        if (fa_block_masked<Spec>(wave_blocks.unmasked, key0, block_k)) {
            // Only steps that cross some row's limit (the causal diagonal, a window's edge, or
            // len_k) mask.
#pragma unroll
            for (int t = 0; t < key_tiles; ++t)
#pragma unroll
                for (int i = 0; i < fa_tile_c_elements; ++i) {
                    const int key = key0 + 16 * t + fa_tile_c_row(i);
                    const float s = fa_key_visible<Spec>(row_keys, key) ? scores[t].x[i] * scale_here : fa_neg_inf();
                    scores[t].x[i] = s;
                    step_max = fmaxf(step_max, s);
                }
            step_max = fa_column_max(step_max);  // the row's maximum
            if (fixed_frame) step_max = fa_capped_step_max(cap, step_max);
        } else if (fixed_frame) {
            step_max = fa_capped_frame(cap);
        } else {
#pragma unroll
            for (int t = 0; t < key_tiles; ++t)
#pragma unroll
                for (int i = 0; i < fa_tile_c_elements; ++i) {
                    scores[t].x[i] *= scale_here;
                    step_max = fmaxf(step_max, scores[t].x[i]);
                }
            step_max = fa_column_max(step_max);
        }

        // Deferred rescale: a row's lanes share its maximum and take the same decision;
        // the leader reports it.
        float correction;
        if (fa_rescale_frame(p, step_max, margin_log2, frame, correction, row_valid && row_leader)) {
            lane_sum *= correction;
#pragma unroll
            for (int t = 0; t < value_tiles; ++t)
#pragma unroll
                for (int i = 0; i < fa_tile_c_elements; ++i) out[t].x[i] *= correction;
        }
        // A row that has seen no key yet keeps frame -inf; its scores are all -inf too.
        const float base = frame == fa_neg_inf() ? 0.0f : frame;

        // O^T += V^T P^T, one key tile of P at a time.
#pragma unroll
        for (int t = 0; t < key_tiles; ++t) {
            fa_tile_c probabilities;
#pragma unroll
            for (int i = 0; i < fa_tile_c_elements; ++i) {
                probabilities.x[i] = fa_exp2(scores[t].x[i] - base);
                lane_sum += probabilities.x[i];
            }
            const fa_tile_ab p_operand = fa_tile_c_to_b<element>(probabilities);
#pragma unroll
            for (int d = 0; d < value_tiles; ++d)
                fa_mma<element>(out[d], fa_load_operand(v_tile + (d * 16 + column) * layout::v_row + t * 16),
                                p_operand);
        }
    }

    float lse;
    const float inverse = fa_row_normalizer<Spec>(p, head, frame, fa_column_sum(lane_sum), lse);
    if (row_valid) {
        unsigned short* const o_row = o + row * p.o_stride[2];
#pragma unroll
        for (int t = 0; t < value_tiles; ++t)
#pragma unroll
            for (int i = 0; i < fa_tile_c_elements; ++i)
                if (16 * t + fa_tile_c_row(i) < value_dim)  // not a padding dim
                    o_row[16 * t + fa_tile_c_row(i)] = static_cast<unsigned short>(
                        fa_float_to_bits<typename Spec::out_element>(out[t].x[i] * inverse));
        if (p.lse && row_leader) p.lse[fa_lse_index<Spec>(p, sequence, head, row)] = lse;
    }
}
