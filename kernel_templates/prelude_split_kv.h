// fa-jit prelude, split-KV part: how a decode block ends, whatever its register layout.
//
// A decode block owns one KV head of one sequence and one split of its keys. Its
// Spec::block_q rows are that KV head's (query row, query head) pairs: row r is query
// row r / group of query head kv_head * group + r % group, so the whole GQA group
// shares each read of K and V. When its waves have merged their partials into shared
// memory (merged: O relative to frame[r], and each row's sum), fa_split_finish ends the
// block. With one split it writes O and LSE; otherwise it writes its partial to the
// workspace, and the last split of the (sequence, KV head) to arrive merges them all
// through their LSE and resets its arrival counter for the next launch.

// Where a decode block works (blockIdx is split, KV head, sequence): its KV head, the
// GQA group, its sequence, the (query row, query head) pairs it packs (the rest of the
// tile's rows are idle; the host never gives a sequence more rows than the tile has, and
// the bound keeps shared memory safe if it did), and its split's keys [begin, end).
struct fa_split_block {
    int kv_head;
    int group;
    fa_sequence sequence;
    int packed_rows;
    int begin, end;
};

// The split's keys are whole blocks of `step` keys, so that a paged block never starts
// mid-block, from the sequence's own length, so that one launch serves a batch of any
// lengths and a launch captured in a CUDA graph stays right as the lengths grow. Under
// a sliding window the splits divide only the keys some query row sees.
template <class Spec>
FAJIT_DEVICE fa_split_block fa_split_block_of(const fa_params& p, int step) {
    fa_split_block block;
    block.kv_head = blockIdx.y;
    block.group = p.heads_q / p.heads_kv;
    block.sequence = fa_sequence_of<Spec>(p, blockIdx.z);
    block.packed_rows = min(block.group * block.sequence.len_q, Spec::block_q);
    const int len_q = block.sequence.len_q, len_k = block.sequence.len_k;
    int first = 0, last = len_k;
    if constexpr (Spec::window)
        if (len_q > 0) {
            first = fa_visible_range<Spec>(p, 0, len_q, len_k).begin / step * step;
            last = fa_visible_range<Spec>(p, len_q - 1, len_q, len_k).end;
        }
    const int keys_per_split = ((last - first + p.num_splits - 1) / p.num_splits + step - 1) / step * step;
    block.begin = first + blockIdx.x * keys_per_split;
    block.end = min(last, block.begin + keys_per_split);
    return block;
}

// The query head and query row of packed row r.
FAJIT_DEVICE int fa_packed_head(int kv_head, int group, int r) { return kv_head * group + r % group; }
FAJIT_DEVICE int fa_packed_query_row(int group, int r) { return r / group; }

// One wave writes one row: O normalized (fa_row_normalizer) and its natural-log LSE;
// out[c] holds head dim lane + c * wave size (of O: Spec::head_dim_v).
template <class Spec, int dims_per_lane>
FAJIT_DEVICE void fa_split_store_row(const fa_params& p, const fa_sequence& sequence, int head, int row,
                                     const float (&out)[dims_per_lane], float frame, float sum) {
    using out_element = typename Spec::out_element;
    const int lane = fa_lane();
    float lse;
    const float inverse = fa_row_normalizer<Spec>(p, head, frame, sum, lse);
    out_element* output_row = static_cast<out_element*>(p.o) + fa_row_offset(p.o_stride, sequence, head, row);
    for (int c = 0; c < dims_per_lane; ++c) {
        const int d = lane + c * FAJIT_WAVE_SIZE;
        if (d < Spec::head_dim_v) output_row[d] = fa_from_float<out_element>(out[c] * inverse);
    }
    if (p.lse && lane == 0) p.lse[fa_lse_index<Spec>(p, sequence, head, row)] = lse;
}

// Counts the block's arrival at `counter`, one of `arrivals`, and tells every thread
// whether it was the last; every thread of the block calls it, and `last` is a shared
// flag. The block's writes before the call are visible to the last block after it.
// NVIDIA from sm_70: one thread's acquire-release atomic after a barrier (PTX's release
// is cumulative over what the barrier ordered before it), not a device-wide fence by
// every thread before and after; AMD and older NVIDIA keep the fences.
FAJIT_DEVICE bool fa_block_arrives_last(unsigned int* counter, unsigned int arrivals, bool& last) {
#if FAJIT_NVIDIA && __CUDA_ARCH__ >= 700
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int before;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(counter) : "memory");
        last = before == arrivals - 1;
    }
    __syncthreads();
    return last;
#else
    __threadfence();  // the block's writes are visible device-wide before its arrival is counted
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == arrivals - 1;
    __syncthreads();
    if (last) __threadfence();  // the other blocks' writes are read only after their arrivals
    return last;
#endif
}

// Ends the block (see the top of this part); every thread of the block calls it, after
// a barrier that makes merged, frame and sum complete. merges_splits is a shared flag.
// Only the packed rows are published and merged: the tile's idle rows are never stored.
template <class Spec>
FAJIT_DEVICE void fa_split_finish(const fa_params& p, const fa_sequence& sequence, int kv_head, int packed_rows,
                                  float (*merged)[Spec::head_dim_v], float* frame, float* sum, bool& merges_splits) {
    constexpr int lanes = FAJIT_WAVE_SIZE;
    constexpr int rows = Spec::block_q;
    constexpr int value_dim = Spec::head_dim_v;  // O's
    constexpr int dims_per_lane = (value_dim + lanes - 1) / lanes;
    const int lane = fa_lane();
    const int wave = static_cast<int>(threadIdx.x) / lanes;
    const int waves = static_cast<int>(blockDim.x) / lanes;
    const int group = p.heads_q / p.heads_kv;

    if (p.num_splits > 1) {
        // Publish this split's partial, and let the last to arrive merge them all into
        // merged, frame and sum, which then end the block as one split's would.
        constexpr int partial_floats = rows * (value_dim + 2);
        const long long pair = static_cast<long long>(blockIdx.z) * p.heads_kv + kv_head;
        float* partials = p.split_partials + pair * p.num_splits * partial_floats;
        float* mine = partials + blockIdx.x * partial_floats;
        for (int i = threadIdx.x; i < packed_rows * value_dim; i += blockDim.x)
            mine[i] = merged[i / value_dim][i % value_dim];
        if (threadIdx.x < packed_rows) {
            mine[rows * value_dim + threadIdx.x] = frame[threadIdx.x];
            mine[rows * value_dim + rows + threadIdx.x] = sum[threadIdx.x];
        }
        if (!fa_block_arrives_last(p.split_arrivals + pair, static_cast<unsigned int>(p.num_splits), merges_splits))
            return;

        // A thread an element of O: the merge is on the launch's critical path, so every
        // thread takes part, and it reads the splits a chunk at a time in one pass, each
        // chunk's frames, sums and values unconditional and in flight together (a split
        // past the last repeats the last and weighs nothing), the running value and total
        // brought to a chunk's larger frame as in the softmax. Volatile: the partials were
        // written by other blocks during this launch. A split with no visible key has sum
        // 0 and frame -inf, and weighs nothing.
        constexpr int chunk = 16;
        const volatile float* all = partials;
        for (int i = threadIdx.x; i < packed_rows * value_dim; i += blockDim.x) {
            const int r = i / value_dim, d = i % value_dim;
            float largest = fa_neg_inf(), total = 0.0f, value = 0.0f;
            for (int first = 0; first < p.num_splits; first += chunk) {
                float split_frame[chunk], split_sum[chunk], split_value[chunk];
#pragma unroll
                for (int j = 0; j < chunk; ++j) {
                    const volatile float* split = all + min(first + j, p.num_splits - 1) * partial_floats;
                    split_frame[j] = split[rows * value_dim + r];
                    split_sum[j] = split[rows * value_dim + rows + r];
                    split_value[j] = split[r * value_dim + d];
                }
                float chunk_largest = largest;
#pragma unroll
                for (int j = 0; j < chunk; ++j)
                    if (split_sum[j] > 0.0f) chunk_largest = fmaxf(chunk_largest, split_frame[j]);
                if (chunk_largest == fa_neg_inf()) continue;  // no split so far saw a key
                const float correction = largest == fa_neg_inf() ? 0.0f : fa_exp2(largest - chunk_largest);
                total *= correction;
                value *= correction;
                largest = chunk_largest;
#pragma unroll
                for (int j = 0; j < chunk; ++j) {
                    const bool weighs = first + j < p.num_splits && split_sum[j] > 0.0f;
                    const float factor = weighs ? fa_exp2(split_frame[j] - largest) : 0.0f;
                    total += split_sum[j] * factor;
                    value += split_value[j] * factor;
                }
            }
            merged[r][d] = value;
            if (d == 0) {
                frame[r] = largest;
                sum[r] = total;
            }
        }
        if (threadIdx.x == 0) p.split_arrivals[pair] = 0u;  // ready for the next launch
        __syncthreads();
    }

    for (int r = wave; r < packed_rows; r += waves) {
        float row_out[dims_per_lane];
        for (int c = 0; c < dims_per_lane; ++c) {
            const int d = lane + c * lanes;
            row_out[c] = d < value_dim ? merged[r][d] : 0.0f;
        }
        fa_split_store_row<Spec, dims_per_lane>(p, sequence, fa_packed_head(kv_head, group, r),
                                                fa_packed_query_row(group, r), row_out, frame[r], sum[r]);
    }
}
