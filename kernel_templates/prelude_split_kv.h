// fa-jit prelude, split-KV part: how a decode block ends, whatever its register layout.
//
// A decode block owns one KV head of one sequence and one split of its keys. Its
// Spec::block_q rows are that KV head's (query row, query head) pairs: row r is query
// row r / group of query head kv_head * group + r % group, so the whole GQA group
// shares each read of K and V. When its waves have merged their partials into shared
// memory (merged: O relative to frame[r], and each row's sum), fa_split_finish ends the
// block. With one split it writes O and LSE. Otherwise the splits of a (sequence, KV
// head) merge through their LSE, in one of two ways: launched as one thread-block cluster
// (sm_90 on), they read each other's shared memory and each stores some of the rows;
// else each writes its partial to the workspace, and the last to arrive merges them all
// and resets its arrival counter for the next launch.

// Where a decode block works (blockIdx is split, KV head, sequence): its KV head, the
// GQA group, its sequence, the (query row, query head) pairs it packs (the rest of the
// tile's rows are idle; the host never gives a sequence more rows than the tile has, and
// the bound keeps shared memory safe if it did), and its split's share of the keys
// [first, last): blocks of `step` keys from first, of which split s takes blocks s,
// s + splits, s + 2 splits, ... (fa_split_key).
struct fa_split_block {
    int kv_head;
    int group;
    fa_sequence sequence;
    int packed_rows;
    int first, last;
    int split, splits;
};

// The keys run to the sequence's own length, so that one launch serves a batch of any
// lengths and a launch captured in a CUDA graph stays right as the lengths grow; under a
// sliding window they are only those some query row sees, from a whole block, so that a
// paged block never starts mid-page. The splits take the blocks of keys in turn rather
// than one range each: without a window a split's first keys are then known before the
// length is read, so a paged block reads its first block-table entries beside the length
// instead of after it (three dependent reads of memory before the first keys arrive
// become two: ncu at 1 x 32K keys, tools/tiles/decode_mma.md step 27).
template <class Spec>
FAJIT_DEVICE fa_split_block fa_split_block_of(const fa_params& p, int step) {
    fa_split_block block;
    block.kv_head = blockIdx.y;
    block.group = p.heads_q / p.heads_kv;
    block.sequence = fa_sequence_of<Spec>(p, blockIdx.z);
    block.packed_rows = min(block.group * block.sequence.len_q, Spec::block_q);
    const int len_q = block.sequence.len_q, len_k = block.sequence.len_k;
    block.first = 0;
    block.last = len_k;
    if constexpr (Spec::window)
        if (len_q > 0) {
            block.first = fa_visible_range<Spec>(p, 0, len_q, len_k).begin / step * step;
            block.last = fa_visible_range<Spec>(p, len_q - 1, len_q, len_k).end;
        }
    block.split = blockIdx.x;
    block.splits = p.num_splits;
    return block;
}

// The first key of the split's block `index` (0, 1, 2, ... in the split's own order); the
// split's blocks are those whose first key is below block.last.
FAJIT_DEVICE int fa_split_key(const fa_split_block& block, int index, int step) {
    return block.first + (block.split + index * block.splits) * step;
}

// How many of `count` things (0, 1, 2, ...) fall to `taker` of `takers` that take them in
// turn: taker t takes t, t + takers, t + 2 takers, ...
FAJIT_DEVICE int fa_taken_in_turn(int count, int taker, int takers) {
    return count > taker ? (count - taker + takers - 1) / takers : 0;
}

// How many of the split's blocks of `step` keys fall to one of its `workers` (warps or
// waves), worker w taking the split's blocks w, w + workers, w + 2 workers, ... (the
// worker's step s starts at fa_split_key(block, w + s workers, step)).
FAJIT_DEVICE int fa_split_steps(const fa_split_block& block, int step, int worker, int workers) {
    const int blocks = block.last > block.first ? (block.last - block.first + step - 1) / step : 0;
    return fa_taken_in_turn(fa_taken_in_turn(blocks, block.split, block.splits), worker, workers);
}

// The query head and query row of packed row r.
FAJIT_DEVICE int fa_packed_head(int kv_head, int group, int r) { return kv_head * group + r % group; }
FAJIT_DEVICE int fa_packed_query_row(int group, int r) { return r / group; }

// Adjacent elements of O (columns of them) relative to their row's frame, with the row's
// sum: one split's part, or the merge of all of them.
template <int columns>
struct fa_split_part {
    float frame, sum;
    float value[columns];
};

// Stores columns d, d + 1, ... of packed row r of O, normalized (fa_row_normalizer), and
// with column 0 the row's natural-log LSE. The thread that has a part stores it: where a
// wave stored each row from shared memory, the last block of a merge through L2 waited on
// a barrier and a second pass after its merge (the end of a batch-1 launch).
template <class Spec, int columns>
FAJIT_DEVICE void fa_split_store(const fa_params& p, const fa_sequence& sequence, int kv_head, int group, int r,
                                 int d, const fa_split_part<columns>& part) {
    using out_element = typename Spec::out_element;
    const int head = fa_packed_head(kv_head, group, r), row = fa_packed_query_row(group, r);
    float lse;
    const float inverse = fa_row_normalizer<Spec>(p, head, part.frame, part.sum, lse);
    out_element* output_row = static_cast<out_element*>(p.o) + fa_row_offset(p.o_stride, sequence, head, row);
#pragma unroll
    for (int c = 0; c < columns; ++c) output_row[d + c] = fa_from_float<out_element>(part.value[c] * inverse);
    if (p.lse && d == 0) p.lse[fa_lse_index<Spec>(p, sequence, head, row)] = lse;
}

// A pair of floats another block of this launch published before its arrival was counted
// (fa_block_arrives_last): NVIDIA reads it from L2 in one load (.cg: no line of it can sit
// stale in this SM's L1); elsewhere two volatile loads.
FAJIT_DEVICE float2 fa_load_published(const float2* at) {
#if FAJIT_NVIDIA
    float2 value;
    asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(value.x), "=f"(value.y) : "l"(at) : "memory");
    return value;
#else
    const volatile float* pair = reinterpret_cast<const volatile float*>(at);
    return make_float2(pair[0], pair[1]);
#endif
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

// Merges columns of O's elements over the splits through their LSE; part(j) reads split
// j's. The merge is on the launch's critical path, so it reads the splits a chunk at a
// time (chunk splits: fa_split_finish says how many), each chunk's parts unconditional
// and in flight together (a split past the last repeats the last and weighs nothing),
// the running values and total brought to a chunk's larger frame as in the softmax. A
// split with no visible key has sum 0 and frame -inf, and weighs nothing. Both ways of
// merging use it, each column in the same order, so they agree to the bit.
template <int columns, int chunk, class ReadPart>
FAJIT_DEVICE fa_split_part<columns> fa_merge_split_parts(int num_splits, ReadPart part) {
    fa_split_part<columns> result;
    result.frame = fa_neg_inf();
    result.sum = 0.0f;
#pragma unroll
    for (int c = 0; c < columns; ++c) result.value[c] = 0.0f;
    for (int first = 0; first < num_splits; first += chunk) {
        fa_split_part<columns> parts[chunk];
#pragma unroll
        for (int j = 0; j < chunk; ++j) parts[j] = part(min(first + j, num_splits - 1));
        float chunk_largest = result.frame;
#pragma unroll
        for (int j = 0; j < chunk; ++j)
            if (parts[j].sum > 0.0f) chunk_largest = fmaxf(chunk_largest, parts[j].frame);
        if (chunk_largest == fa_neg_inf()) continue;  // no split so far saw a key
        const float correction = result.frame == fa_neg_inf() ? 0.0f : fa_exp2(result.frame - chunk_largest);
        result.sum *= correction;
#pragma unroll
        for (int c = 0; c < columns; ++c) result.value[c] *= correction;
        result.frame = chunk_largest;
#pragma unroll
        for (int j = 0; j < chunk; ++j) {
            const bool weighs = first + j < num_splits && parts[j].sum > 0.0f;
            const float factor = weighs ? fa_exp2(parts[j].frame - result.frame) : 0.0f;
            result.sum += parts[j].sum * factor;
#pragma unroll
            for (int c = 0; c < columns; ++c) result.value[c] += parts[j].value[c] * factor;
        }
    }
    return result;
}

#if FAJIT_NVIDIA && __CUDA_ARCH__ >= 900
// Thread-block clusters (sm_90 on). A launch without one is a cluster of one block.
FAJIT_DEVICE int fa_cluster_blocks() {
    unsigned int blocks;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
    return static_cast<int>(blocks);
}
// Every thread of every block of the cluster: the shared-memory writes before it are
// visible to the cluster's reads after it.
FAJIT_DEVICE void fa_cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address in the cluster's block `rank` of this block's shared-window address `local`.
FAJIT_DEVICE unsigned int fa_cluster_address(unsigned int local, int rank) {
    unsigned int remote;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}
FAJIT_DEVICE float fa_cluster_load(unsigned int remote) {
    float value;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(remote) : "memory");
    return value;
}

// The splits launched as one cluster (its x extent, so the cluster rank is blockIdx.x, the
// split) merge through distributed shared memory: no partial goes through L2 and no block
// waits on an arrival counter, the end of the launch that batch 1 pays for. Block b merges
// and stores rows b, b + splits, ... from every split's merged, frame and sum where they
// lie. An element a thread: two (as through L2) took registers enough to spill (4 bytes at
// d=64 with every feature, sm_90a). The passes unroll only while they are few (one row
// tile of 8 warps at any head dim): unrolled with the store in each, one warp's 40 passes at
// d=160 took 254 registers where 199 had sufficed, and spilled.
template <class Spec, int chunk>
FAJIT_DEVICE void fa_merge_in_cluster(const fa_params& p, const fa_sequence& sequence, int kv_head, int packed_rows,
                                      float (*merged)[Spec::head_dim_v], float* frame, float* sum) {
    constexpr int value_dim = Spec::head_dim_v;
    constexpr int threads = Spec::waves * FAJIT_WAVE_SIZE;
    // Two splits or more, so a block merges at most half the rows (rounded up).
    constexpr int per_thread = ((Spec::block_q + 1) / 2 * value_dim + threads - 1) / threads;
    constexpr int unrolled_passes = per_thread <= 8 ? per_thread : 1;
    const int splits = p.num_splits, rank = static_cast<int>(blockIdx.x);
    const int rows_here = fa_taken_in_turn(packed_rows, rank, splits);
    const int group = p.heads_q / p.heads_kv;
    const auto shared_address = [](const void* at) { return static_cast<unsigned int>(__cvta_generic_to_shared(at)); };
    fa_cluster_barrier();  // every split's rows complete (each block's barrier made them so within it)
#pragma unroll(unrolled_passes)
    for (int k = 0; k < per_thread; ++k) {
        const int i = static_cast<int>(threadIdx.x) + k * threads;
        if (i >= rows_here * value_dim) continue;
        const int r = rank + splits * (i / value_dim), d = i % value_dim;
        // One mapped address a split, and offsets from it: an address mapped per load took
        // registers enough to spill (4 bytes at d=64 with every feature, sm_90a).
        const unsigned int base = shared_address(merged);
        const unsigned int at_frame = shared_address(&frame[r]) - base, at_sum = shared_address(&sum[r]) - base,
                           at_value = shared_address(&merged[r][d]) - base;
        const fa_split_part<1> element = fa_merge_split_parts<1, chunk>(splits, [&](int j) {
            const unsigned int split = fa_cluster_address(base, j);
            return fa_split_part<1>{fa_cluster_load(split + at_frame), fa_cluster_load(split + at_sum),
                                    {fa_cluster_load(split + at_value)}};
        });
        fa_split_store<Spec, 1>(p, sequence, kv_head, group, r, d, element);
    }
    fa_cluster_barrier();  // every block done reading the others before any leaves
}
#endif

// Ends the block (see the top of this part); every thread of the block calls it, after
// a barrier that makes merged, frame and sum complete. merges_splits is a shared flag.
// Only the packed rows are published, merged and stored: the tile's idle rows never are.
// merge_chunk: the splits whose parts a thread has in flight at once, in either merge
// (the same in both, so that they agree to the bit).
template <class Spec, int merge_chunk>
FAJIT_DEVICE void fa_split_finish(const fa_params& p, const fa_sequence& sequence, int kv_head, int packed_rows,
                                  float (*merged)[Spec::head_dim_v], float* frame, float* sum, bool& merges_splits) {
    constexpr int rows = Spec::block_q;
    constexpr int value_dim = Spec::head_dim_v;  // O's
    // A thread stores (and through L2 merges) two adjacent columns of a row: O's head dims
    // are multiples of 8, so rows hold whole pairs. 4 rows of 128 (GQA 4 at batch 1) are
    // one pass of 256 threads with every load of the merge in flight, where an element a
    // thread took two passes, each a round trip to L2 on the launch's last block.
    constexpr int pairs = value_dim / 2;  // of a row
    const int group = p.heads_q / p.heads_kv;

    if (p.num_splits > 1) {
#if FAJIT_NVIDIA && __CUDA_ARCH__ >= 900
        if (fa_cluster_blocks() == p.num_splits) {
            fa_merge_in_cluster<Spec, merge_chunk>(p, sequence, kv_head, packed_rows, merged, frame, sum);
            return;
        }
#endif
        // Publish this split's partial (its rows' values as pairs, then each row's frame and
        // sum as a pair), and let the last to arrive merge them all and store the rows.
        constexpr int partial_pairs = rows * (pairs + 1);
        const long long pair_of_heads = static_cast<long long>(blockIdx.z) * p.heads_kv + kv_head;
        float2* partials = reinterpret_cast<float2*>(p.split_partials) + pair_of_heads * p.num_splits * partial_pairs;
        float2* mine = partials + blockIdx.x * partial_pairs;
        for (int i = threadIdx.x; i < packed_rows * pairs; i += blockDim.x) {
            const int r = i / pairs, d = 2 * (i % pairs);
            mine[i] = make_float2(merged[r][d], merged[r][d + 1]);
        }
        if (threadIdx.x < packed_rows)
            mine[rows * pairs + threadIdx.x] = make_float2(frame[threadIdx.x], sum[threadIdx.x]);
        if (!fa_block_arrives_last(p.split_arrivals + pair_of_heads, static_cast<unsigned int>(p.num_splits),
                                   merges_splits))
            return;
        for (int i = threadIdx.x; i < packed_rows * pairs; i += blockDim.x) {
            const int r = i / pairs;
            const fa_split_part<2> element = fa_merge_split_parts<2, merge_chunk>(p.num_splits, [&](int j) {
                const float2* split = partials + j * partial_pairs;
                const float2 frame_and_sum = fa_load_published(split + rows * pairs + r);
                const float2 values = fa_load_published(split + i);
                return fa_split_part<2>{frame_and_sum.x, frame_and_sum.y, {values.x, values.y}};
            });
            fa_split_store<Spec, 2>(p, sequence, kv_head, group, r, 2 * (i % pairs), element);
        }
        if (threadIdx.x == 0) p.split_arrivals[pair_of_heads] = 0u;  // ready for the next launch
        return;
    }

    for (int i = threadIdx.x; i < packed_rows * pairs; i += blockDim.x) {
        const int r = i / pairs, d = 2 * (i % pairs);
        fa_split_store<Spec, 2>(p, sequence, kv_head, group, r, d,
                                fa_split_part<2>{frame[r], sum[r], {merged[r][d], merged[r][d + 1]}});
    }
}
