// fa_decode_split: decode and short chunks, split over the key range (flash-decoding).
//
// A block owns one KV head of one sequence and one split of its keys. Its Spec::block_q
// rows are that KV head's (query row, query head) pairs: row r is query row r / group
// of query head kv_head * group + r % group, so the whole GQA group shares each read of
// K and V. Waves take turns through the split's keys, a key per lane: each lane scores
// its key against every row, the wave agrees on each row's maximum, and the rows'
// frames move by the rescale-margin rule. Each lane then accumulates its slice of the
// output's head dims over the wave's keys.
//
// The waves' partials are merged in shared memory. With one split the block writes O
// and LSE; otherwise it writes its partial (O relative to its frame, the frame and the
// sum) to the workspace, and the last split of the (sequence, KV head) to arrive merges
// them all through their LSE and resets its arrival counter for the next launch. A
// split's keys come from the sequence's own length, so one launch serves a batch of
// any lengths, and a launch captured in a CUDA graph stays right as the lengths grow.

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
        // hoisted and spill (gfx11, bf16, d=64: 256 VGPRs and 118 spilled).
#pragma unroll 2
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

// One wave writes one row: O normalized by its sum (zeros for a row that saw no key) and
// its natural-log LSE; out[c] holds head dim lane + c * wave size.
template <class Spec, int dims_per_lane>
FAJIT_DEVICE void fa_decode_store_row(const fa_params& p, const fa_sequence& sequence, int head, int row,
                                      const float (&out)[dims_per_lane], float frame, float sum) {
    using element = typename Spec::element;
    const int lane = fa_lane();
    const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;
    element* output_row = static_cast<element*>(p.o) + fa_row_offset(p.o_stride, sequence, head, row);
    for (int c = 0; c < dims_per_lane; ++c) {
        const int d = lane + c * FAJIT_WAVE_SIZE;
        if (d < Spec::head_dim) output_row[d] = fa_from_float<element>(out[c] * inverse);
    }
    if (p.lse && lane == 0)
        p.lse[fa_lse_index<Spec>(p, sequence, head, row)] = sum > 0.0f ? (frame + fa_log2(sum)) * FAJIT_LN2 : fa_neg_inf();
}

template <class Spec>
__global__ void __launch_bounds__(Spec::waves* FAJIT_WAVE_SIZE) fa_decode_split(fa_params p) {
    using element = typename Spec::element;
    constexpr int lanes = FAJIT_WAVE_SIZE;
    constexpr int rows = Spec::block_q;
    constexpr int head_dim = Spec::head_dim;
    constexpr int waves = Spec::waves;
    constexpr int dims_per_lane = (head_dim + lanes - 1) / lanes;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;

    __shared__ float query[rows][head_dim];    // pre-scaled by scale * log2(e)
    __shared__ float merged[rows][head_dim];   // the block's O, relative to block_frame
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
    const int kv_head = blockIdx.y;
    const int split = blockIdx.x;
    const int group = p.heads_q / p.heads_kv;
    const fa_sequence sequence = fa_sequence_of<Spec>(p, blockIdx.z);
    // The rest of the block's rows are idle; the host never gives a sequence more rows
    // than the tile has, and the bound keeps shared memory safe if it did.
    const int packed_rows = min(group * sequence.len_q, rows);

    const int keys_per_split = ((sequence.len_k + p.num_splits - 1) / p.num_splits + lanes - 1) / lanes * lanes;
    const int split_begin = split * keys_per_split;
    const int split_end = min(sequence.len_k, split_begin + keys_per_split);

    const element* q = static_cast<const element*>(p.q);
    const element* k = static_cast<const element*>(p.k);
    const element* v = static_cast<const element*>(p.v);
    const float scale_log2 = p.scale * FAJIT_LOG2E;
    for (int i = threadIdx.x; i < rows * head_dim; i += blockDim.x) {
        const int r = i / head_dim, d = i % head_dim;
        float value = 0.0f;
        if (r < packed_rows)
            value = fa_to_float(q[fa_row_offset(p.q_stride, sequence, kv_head * group + r % group, r / group) + d]) *
                    scale_log2;
        query[r][d] = value;
        merged[r][d] = 0.0f;
    }
    if (threadIdx.x < rows) block_sum[threadIdx.x] = 0.0f;
    __syncthreads();

    int visible[rows];  // keys each row may see (0 for idle rows)
    float frame[rows], lane_sum[rows], out[rows][dims_per_lane];
#pragma unroll
    for (int r = 0; r < rows; ++r) {
        visible[r] = r < packed_rows ? fa_visible_keys(Spec::causal, r / group, sequence.len_q, sequence.len_k) : 0;
        frame[r] = fa_neg_inf();
        lane_sum[r] = 0.0f;
#pragma unroll
        for (int c = 0; c < dims_per_lane; ++c) out[r][c] = 0.0f;
    }
    const bool k_vector = fa_decode_vector_ok(p.k, p.k_stride);

    // Loops over keys stay rolled: unrolled, the compiler hoists whole steps' loads and
    // spills (gfx11, bf16: 256 VGPRs and 113 spilled at d=72).
#pragma unroll 1
    for (int key0 = split_begin + wave * lanes; key0 < split_end; key0 += waves * lanes) {
        // The staged queries are read afresh each step: at small head dims the compiler would
        // otherwise keep all of them in registers across the loop and spill (gfx11, d=16,
        // bq=16: 256 VGPRs, 155 spilled).
        asm volatile("" ::: "memory");
        const int key = key0 + lane;
        float score[rows];
#pragma unroll
        for (int r = 0; r < rows; ++r) score[r] = 0.0f;
        if (key < split_end)
            fa_decode_score_key<Spec, rows>(k + fa_key_offset<Spec>(p, p.k_stride, sequence, kv_head, key), k_vector,
                                            query, score);
        float weight[rows];
#pragma unroll
        for (int r = 0; r < rows; ++r) {
            const float s = key < visible[r] && key < split_end ? score[r] : fa_neg_inf();
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
        const int keys_here = min(lanes, split_end - key0);
#pragma unroll 1
        for (int source = 0; source < keys_here; ++source) {
            const element* value_row = v + fa_key_offset<Spec>(p, p.v_stride, sequence, kv_head, key0 + source);
            float value[dims_per_lane];
#pragma unroll
            for (int c = 0; c < dims_per_lane; ++c) {
                const int d = lane + c * lanes;
                value[c] = d < head_dim ? fa_to_float(value_row[d]) : 0.0f;
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
            if (d < head_dim) atomicAdd(&merged[r][d], out[r][c] * factor);
        }
        if (lane == 0) atomicAdd(&block_sum[r], lane_sum[r] * factor);
    }
    __syncthreads();

    if (p.num_splits == 1) {
        for (int r = wave; r < packed_rows; r += waves) {
            float row_out[dims_per_lane];
            for (int c = 0; c < dims_per_lane; ++c) {
                const int d = lane + c * lanes;
                row_out[c] = d < head_dim ? merged[r][d] : 0.0f;
            }
            fa_decode_store_row<Spec, dims_per_lane>(p, sequence, kv_head * group + r % group, r / group, row_out,
                                                     block_frame[r], block_sum[r]);
        }
        return;
    }

    // Several splits: publish this one's partial, and let the last to arrive merge them.
    constexpr int partial_floats = rows * (head_dim + 2);
    const long long pair = static_cast<long long>(blockIdx.z) * p.heads_kv + kv_head;
    float* partials = p.split_partials + pair * p.num_splits * partial_floats;
    float* mine = partials + split * partial_floats;
    for (int i = threadIdx.x; i < rows * head_dim; i += blockDim.x) mine[i] = merged[i / head_dim][i % head_dim];
    if (threadIdx.x < rows) {
        mine[rows * head_dim + threadIdx.x] = block_frame[threadIdx.x];
        mine[rows * head_dim + rows + threadIdx.x] = block_sum[threadIdx.x];
    }
    __threadfence();  // the partial is visible device-wide before the arrival is counted
    __syncthreads();
    if (threadIdx.x == 0)
        merges_splits = atomicAdd(p.split_arrivals + pair, 1u) == static_cast<unsigned int>(p.num_splits) - 1;
    __syncthreads();
    if (!merges_splits) return;
    __threadfence();  // the other splits' partials are read only after their arrivals

    // Volatile: the partials were written by other blocks during this launch.
    const volatile float* all = partials;
    for (int r = wave; r < packed_rows; r += waves) {
        float largest = fa_neg_inf();
        for (int s = 0; s < p.num_splits; ++s)
            if (all[s * partial_floats + rows * head_dim + rows + r] > 0.0f)
                largest = fmaxf(largest, all[s * partial_floats + rows * head_dim + r]);
        float total = 0.0f, row_out[dims_per_lane];
        for (int c = 0; c < dims_per_lane; ++c) row_out[c] = 0.0f;
        for (int s = 0; s < p.num_splits; ++s) {
            const volatile float* partial = all + s * partial_floats;
            const float split_sum = partial[rows * head_dim + rows + r];
            if (!(split_sum > 0.0f)) continue;  // a split with no visible key
            const float factor = fa_exp2(partial[rows * head_dim + r] - largest);
            total += split_sum * factor;
            for (int c = 0; c < dims_per_lane; ++c) {
                const int d = lane + c * lanes;
                if (d < head_dim) row_out[c] += partial[r * head_dim + d] * factor;
            }
        }
        fa_decode_store_row<Spec, dims_per_lane>(p, sequence, kv_head * group + r % group, r / group, row_out, largest,
                                                 total);
    }
    if (threadIdx.x == 0) p.split_arrivals[pair] = 0u;  // ready for the next launch
}
