// fa_decode_split: decode and short chunks, split over the key range (flash-decoding),
// in plain arithmetic for any wave size. Rows, splits and the block's ending are the
// split-KV prelude part's (prelude_split_kv.h).
//
// Waves take turns through the split's keys, a key per lane: each lane scores its key
// against every row, the wave agrees on each row's maximum, and the rows' frames move by
// the rescale-margin rule. Each lane then accumulates its slice of the output's head
// dims (Spec::head_dim_v of them) over the wave's keys. The waves' partials are merged in shared memory.

// Whether every K row can be read in 16-byte chunks: an aligned base and strides of
// whole chunks (8 elements).
FAJIT_DEVICE bool fa_decode_vector_ok(const void* base, const long long* stride) {
    const bool aligned_base = (reinterpret_cast<unsigned long long>(base) & 15u) == 0;
    return aligned_base && stride[0] % 8 == 0 && stride[1] % 8 == 0 && stride[2] % 8 == 0;
}

// Adds the dot products of one key row with every staged query row to score[].
template <class Spec, int rows>
FAJIT_DEVICE void fa_decode_score_key(const typename Spec::element* key_row, bool vector,
                                      const float (*query)[Spec::head_dim], float (&score)[rows]) {
    using element = typename Spec::element;
    if (vector) {
        const fa_u32x4* chunks = reinterpret_cast<const fa_u32x4*>(key_row);
        // Bounded unrolling: fully unrolled at small head dims, the loads of a whole row are
        // hoisted and spill (gfx11, bf16, d=64: 256 VGPRs and 118 spilled). With 16 rows even
        // two chunks' queries (256 values) are too many: ragged and paged K/V spilled 35-65
        // VGPRs at d = 32, 48 and 64 on gfx1151, so 16 rows take a chunk at a time.
#pragma unroll(rows < 16 ? 2 : 1)
        for (int chunk = 0; chunk < Spec::head_dim / 8; ++chunk) {
            const fa_u32x4 bits = chunks[chunk];
            const unsigned int words[4] = {bits.x, bits.y, bits.z, bits.w};
            float key[8];
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                key[2 * w] = fa_to_float(element{static_cast<unsigned short>(words[w] & 0xffffu)});
                key[2 * w + 1] = fa_to_float(element{static_cast<unsigned short>(words[w] >> 16)});
            }
#pragma unroll
            for (int r = 0; r < rows; ++r)
#pragma unroll
                for (int e = 0; e < 8; ++e) score[r] += query[r][8 * chunk + e] * key[e];
        }
        return;
    }
#pragma unroll 1
    for (int d = 0; d < Spec::head_dim; ++d) {
        const float key = fa_to_float(key_row[d]);
#pragma unroll
        for (int r = 0; r < rows; ++r) score[r] += query[r][d] * key;
    }
}

template <class Spec>
__global__ void FAJIT_PORTABLE_BOUNDS(Spec::waves* FAJIT_WAVE_SIZE) fa_decode_split(fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    constexpr int lanes = FAJIT_WAVE_SIZE;
    constexpr int rows = Spec::block_q;
    constexpr int head_dim = Spec::head_dim;
    constexpr int value_dim = Spec::head_dim_v;  // of V and O
    constexpr int waves = Spec::waves;
    constexpr int dims_per_lane = (value_dim + lanes - 1) / lanes;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;

    __shared__ float query[rows][head_dim];    // pre-scaled by scale * log2(e)
    __shared__ float merged[rows][value_dim];  // the block's O, relative to block_frame
    __shared__ float wave_frames[waves][rows];
    __shared__ float block_frame[rows];
    __shared__ float block_sum[rows];
    __shared__ bool merges_splits;
    static_assert(sizeof(query) + sizeof(merged) + sizeof(wave_frames) + sizeof(block_frame) + sizeof(block_sum) +
                          sizeof(merges_splits) <=
                      Spec::shared_bytes,
                  "the host counts less shared memory than fa_decode_split uses");

    const int lane = fa_lane();
    const int wave = static_cast<int>(threadIdx.x) / lanes;
    const fa_split_block block = fa_split_block_of<Spec>(p, lanes);
    const int kv_head = block.kv_head, group = block.group, packed_rows = block.packed_rows;
    const int last_key = block.last;
    const fa_sequence& sequence = block.sequence;

    const element* q = static_cast<const element*>(p.q);
    const element* k = static_cast<const element*>(p.k);
    const element* v = static_cast<const element*>(p.v);
    const float scale_log2 = fa_scale_log2<Spec>(p, kv_head);
    for (int i = threadIdx.x; i < rows * head_dim; i += blockDim.x) {
        const int r = i / head_dim, d = i % head_dim;
        float value = 0.0f;
        if (r < packed_rows)
            value = fa_to_float(q[fa_row_offset(p.q_stride, sequence, fa_packed_head(kv_head, group, r),
                                                fa_packed_query_row(group, r)) +
                                  d]) *
                    scale_log2;
        query[r][d] = value;
    }
    for (int i = threadIdx.x; i < rows * value_dim; i += blockDim.x) merged[i / value_dim][i % value_dim] = 0.0f;
    if (threadIdx.x < rows) block_sum[threadIdx.x] = 0.0f;
    __syncthreads();

    fa_key_range visible[rows];  // keys of the split each row may see (none for idle rows)
    float frame[rows], lane_sum[rows], out[rows][dims_per_lane];
#pragma unroll
    for (int r = 0; r < rows; ++r) {
        visible[r] = r < packed_rows
                         ? fa_visible_range<Spec>(p, fa_packed_query_row(group, r), sequence.len_q, sequence.len_k)
                         : fa_key_range{0, 0};
        visible[r].end = min(visible[r].end, last_key);  // one compare a key, not two
        frame[r] = fa_neg_inf();
        lane_sum[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < dims_per_lane; ++c) out[r][c] = 0.0f;
    }
    const bool k_vector = fa_decode_vector_ok(p.k, p.k_stride);
    const fa_soft_cap cap = fa_soft_cap_of(p);
    const int steps = fa_split_steps(block, lanes, wave, waves);

    // Loops over keys stay rolled: unrolled, the compiler hoists whole steps' loads and
    // spills (gfx11, bf16: 256 VGPRs and 113 spilled at d=72).
#pragma unroll 1
    for (int step = 0; step < steps; ++step) {
        const int key0 = fa_split_key(block, wave + step * waves, lanes);
        // The staged queries are read afresh each step: at small head dims the compiler would
        // otherwise keep all of them in registers across the loop and spill (gfx11, d=16,
        // bq=16: 256 VGPRs, 155 spilled).
        asm volatile("" ::: "memory");
        const int key = key0 + lane;
        float score[rows];
#pragma unroll
        for (int r = 0; r < rows; ++r) score[r] = 0.0f;
        if (key < last_key)
            fa_decode_score_key<Spec, rows>(k + fa_key_offset<Spec>(p, p.k_stride, sequence, kv_head, key), k_vector,
                                            query, score);
        if constexpr (Spec::softcap) {
#pragma unroll
            for (int r = 0; r < rows; ++r) score[r] = fa_capped(cap, score[r]);
        }
        float weight[rows];
#pragma unroll
        for (int r = 0; r < rows; ++r) {
            const float s = fa_key_visible<Spec>(visible[r], key) ? score[r] : fa_neg_inf();
            const float step_max = fa_wave_max(s);
            // Deferred rescale: the wave takes each row's decision; lane 0 reports it.
            float correction;
            if (fa_rescale_frame(p, step_max, margin_log2, frame[r], correction, lane == 0 && r < packed_rows)) {
                lane_sum[r] *= correction;
#pragma unroll
                for (int c = 0; c < dims_per_lane; ++c) out[r][c] *= correction;
            }
            // A row that has seen no key yet keeps frame -inf: its weights stay 0, not NaN.
            weight[r] = s == fa_neg_inf() ? 0.0f : fa_exp2(s - frame[r]);
            lane_sum[r] += weight[r];
        }
        const int keys_here = min(lanes, last_key - key0);
#pragma unroll 1
        for (int source = 0; source < keys_here; ++source) {
            const element* value_row = v + fa_key_offset<Spec>(p, p.v_stride, sequence, kv_head, key0 + source);
            float value[dims_per_lane];
#pragma unroll
            for (int c = 0; c < dims_per_lane; ++c) {
                const int d = lane + c * lanes;
                value[c] = d < value_dim ? fa_to_float(value_row[d]) : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < rows; ++r) {
                const float w = fa_shuffle(weight[r], source);
#pragma unroll
                for (int c = 0; c < dims_per_lane; ++c) out[r][c] += w * value[c];
            }
        }
    }

    // Merge the waves: every partial is brought to the block's frame, the largest of theirs.
#pragma unroll
    for (int r = 0; r < rows; ++r) {
        lane_sum[r] = fa_wave_sum(lane_sum[r]);
        if (lane == 0) wave_frames[wave][r] = frame[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < rows; ++r) {
        float largest = fa_neg_inf();
        for (int w = 0; w < waves; ++w) largest = fmaxf(largest, wave_frames[w][r]);
        if (wave == 0 && lane == 0) block_frame[r] = largest;
        const float factor = frame[r] == fa_neg_inf() ? 0.0f : fa_exp2(frame[r] - largest);
        if (factor == 0.0f) continue;
        for (int c = 0; c < dims_per_lane; ++c) {
            const int d = lane + c * lanes;
            if (d < value_dim) atomicAdd(&merged[r][d], out[r][c] * factor);
        }
        if (lane == 0) atomicAdd(&block_sum[r], lane_sum[r] * factor);
    }
    __syncthreads();

    // A merge's chunk of 16 splits in flight (no variant of this family spills with it).
    fa_split_finish<Spec, 16>(p, sequence, kv_head, packed_rows, merged, block_frame, block_sum, merges_splits);
}
