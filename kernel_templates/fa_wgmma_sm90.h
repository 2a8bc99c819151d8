// fa_wgmma_sm90: flash attention on Hopper's warpgroup MMA (wgmma, sm_90a only).
// A block is Spec::waves / 4 consumer warpgroups of 128 threads and one producer
// warpgroup; blocks are persistent and walk query tiles of Spec::block_q rows (see
// fa_wgmma_block_tile). Consumer warpgroup w owns rows 64w .. 64w+63 of the current
// tile, each of its warps 16 of them, held in the accumulator layout the
// prelude describes: the one mma-sm80 uses, so both families run the same softmax code.
//
// Per key step of Spec::block_k keys, for each consumer warpgroup:
//   S  = Q K^T   one wgmma per 16 head dims, N = block_k, both operands read by the
//                tensor cores from shared memory (Q and K rows are K-major).
//   P  = exp2(S - frame), rounded to the input type. The S accumulators of key tiles
//                2s and 2s+1 are the A fragment of 16-key slice s, as with mma.sync.
//   O += P V     A = P from registers; B = V rows from shared memory read N-major (head
//                dims contiguous), one wgmma per 16 keys and 128 (or 64) head dims.
// No operand passes through registers on its way from shared memory.
//
// The tensor cores run while the softmax does, two ways. Within a warpgroup, step s's
// Q K^T and step s-1's P V are issued together and step s's softmax runs while that
// P V does (FlashAttention-3's intra-warpgroup overlap); it needs S, P and O live at
// once, which is why the producer gives its registers to the consumers (setmaxnreg).
// Between warpgroups, they take turns issuing, round robin through named barriers, so
// one group's softmax runs beside the others' products.
//
// The rescale margin and masking only on steps that reach past the first row's visible
// keys work as in fa_mma_sm80.h, through the same prelude functions. Causal skipping
// is per tile: every warpgroup walks every step the tile's last row needs (so their
// turns pair up), which costs the first groups some fully masked work on the diagonal
// step only.
//
// Shared memory (dynamic; the host picks the stage count and reserves the bytes,
// src/families/wgmma_sm90.cpp, and fa_wgmma_layout checks them): Q, then
// `stages` K, V buffer pairs, each in the prelude's 128-byte swizzle and 1024-byte
// aligned (the allocation carries 1024 bytes of slack for aligning its start), then
// full and empty mbarriers for each stage's K and V, and one that frees Q. Dense calls
// whose tensors TMA can address (p.tensor_maps_ready) are copied by one producer thread
// through tensor maps, the barrier counting bytes; otherwise the producer's 128 threads
// copy with cp.async and each arrives on a full barrier when its copies land. Consumer
// warps arrive on an empty barrier once they are done with the tensor, and only the
// producer waits for that.
// Tensors that are not 16-byte aligned take the element-wise copy.
//
// Batched calls (Spec::kv_layout): a tile's sequence gives its lengths, which decide the
// masks and the key steps; tiles are counted over the longest sequence, and those past
// a shorter one's end have no steps, which producer and consumers both skip. K and V
// blocks step by the row stride from their first key, except paged blocks that span
// pages (page_size < block_k), whose rows the producer looks up one by one.

template <int value, int step>
inline constexpr int fa_wgmma_round_up = ((value + step - 1) / step) * step;

template <class Spec>
struct fa_wgmma_layout {
    // Q and K rows have Spec::head_dim elements and V rows Spec::head_dim_v, each staged
    // in whole 128-byte swizzle rows (64 16-bit or 128 e4m3 elements). Q K^T reads the
    // head dims rounded up to its k step (scored_dim: 16 or 32 elements), whose padding
    // in Q and K holds zeros written once (the copies never write it); P V covers O's
    // columns (value_columns, head_dim_v rounded up to 64), and the columns of O past
    // head_dim_v are never stored.
    // e4m3 (fp8): wgmma reads 8-bit B operands K-major only, so V's rows land in one of
    // two staging buffers and the producer writes each stage's V transposed (Vt: a
    // 128-byte row of block_k keys per column of O, in the key order fa_sm90_pack_e4m3 gives P).
    using element = typename Spec::element;
    static constexpr bool fp8 = fa_same_type<element, fa_e4m3>::value;
    static constexpr int element_bytes = fp8 ? 1 : 2;
    static constexpr int swizzle_elements = 128 / element_bytes;  // a swizzle row's
    static constexpr int chunk_elements = 16 / element_bytes;     // a 16-byte chunk's
    static constexpr int k_step = fa_sm90_k_step<element>;
    static constexpr int staged_dim = fa_wgmma_round_up<Spec::head_dim, swizzle_elements>;
    static constexpr int staged_value_dim = fa_wgmma_round_up<Spec::head_dim_v, swizzle_elements>;
    static constexpr int value_columns = fa_wgmma_round_up<Spec::head_dim_v, 64>;
    static constexpr int scored_dim = fa_wgmma_round_up<Spec::head_dim, k_step>;
    static constexpr int stages = Spec::kv_stages;
    static constexpr int q_bytes = Spec::block_q * staged_dim * element_bytes;
    static constexpr int k_bytes = Spec::block_k * staged_dim * element_bytes;
    static constexpr int v_bytes = fp8 ? value_columns * Spec::block_k : Spec::block_k * staged_value_dim * 2;
    static constexpr int staging_bytes = fp8 ? Spec::block_k * staged_value_dim : 0;  // each of two
    static constexpr int stage_bytes = k_bytes + v_bytes;
    static constexpr int tile_bytes = q_bytes + stages * stage_bytes + 2 * staging_bytes;  // then the mbarriers
    // Full and empty for K and V a stage, Q's, and with e4m3 full and free for each
    // staging buffer.
    static constexpr int barrier_bytes = 8 * (4 * stages + 1 + (fp8 ? 4 : 0));
    static constexpr int alignment = 1024;  // slack for aligning the start
    static constexpr int bytes = alignment + tile_bytes + barrier_bytes;
    static_assert(!fp8 || Spec::block_k == 128, "e4m3's transposed V rows are one 128-byte swizzle row of keys");
    static_assert(bytes <= Spec::shared_bytes, "the host reserves less shared memory than fa_wgmma_layout uses");

    // Spec::waves / 4 consumer warpgroups and one producer warpgroup. The block starts
    // with `launch_registers` a thread, what the launch bounds leave (ptxas gives the
    // kernel exactly that, at most 240; tests/mma checks it). The producer, which only
    // copies, gives back all but `producer_registers`, and the consumers share the
    // freed ones, at most 240 each (setmaxnreg counts in multiples of 8). Raising
    // waits until the registers are free, so asking for more than the pool holds
    // would hang the block. With one consumer warpgroup the pool has registers to spare
    // and the producer keeps 96: at 56 its loop over tiles spilled.
    static constexpr int groups = Spec::waves / 4;
    static constexpr int consumers = Spec::waves * 32;
    static constexpr int threads = consumers + 128;
    static constexpr int launch_registers = 65536 / threads / 8 * 8 > 240 ? 240 : 65536 / threads / 8 * 8;
    // e4m3's producer also transposes V: at 56 it spilled at d=32 and 64 (sm_90a ptxas).
    // Ragged or paged K/V with a window and a soft-cap spilled 8-24 bytes at 56 from d=184
    // (both 16-bit types; paged with dv=128) and nothing at 48, the consumers getting 224
    // either way (ptxas 13); elsewhere 48 spilled where dv != d over ragged K/V (4-52
    // bytes: d=24-64 with dv=16 or 64-128, d=152-160 with dv=256; 16 with window and cap
    // at d=40-64, dv=128) and 56 did not.
    static constexpr bool wide_batched_window_and_cap =
        Spec::kv_layout != FA_KV_DENSE && Spec::window && Spec::softcap && Spec::head_dim > 128;
    static constexpr int producer_registers = groups == 1 ? 96 : fp8 ? 72 : wide_batched_window_and_cap ? 48 : 56;
    static constexpr int consumer_registers_that_fit =
        (launch_registers * threads - 128 * producer_registers) / consumers / 8 * 8;
    static constexpr int consumer_registers = consumer_registers_that_fit > 240 ? 240 : consumer_registers_that_fit;

    // Byte offset of 16-byte chunk `chunk` of row `row` in a tile of `rows` rows: one
    // run of 128-byte rows per 64 head dims, chunks XOR-ed with the row's low 3 bits.
    static FAJIT_DEVICE unsigned int offset(int rows, int row, int chunk) {
        return static_cast<unsigned int>(((chunk / 8) * rows + row) * 128 + ((chunk % 8) ^ (row % 8)) * 16);
    }
};

// A row copy's threads per row of `chunks` 16-byte chunks (fa_wgmma_copy_rows): rounded
// up to a power of two, for rows up to 512 bytes.
template <int chunks>
inline constexpr int fa_wgmma_copy_slots = chunks <= 2    ? 2
                                           : chunks <= 4  ? 4
                                           : chunks <= 8  ? 8
                                           : chunks <= 16 ? 16
                                                          : 32;

// Copies `rows` rows of row_dim elements from each of `count` tensors (rows past
// `valid_rows` as zeros) into swizzled tiles `tile[i]` of `rows` rows; the producer
// warpgroup's thread `thread` of 128 does its share. The producer's warps share the
// schedulers with the consumers', so a copy must cost few instructions: alignment and
// whether every row is valid are template arguments, decided once per call, and the
// unrolled loop walks one offset per tensor, the shared offsets being constants.
// Testing both per copy left the consumers waiting for full stages: D=128 f16 causal
// ran 384 / 502 / 489 TFLOP/s at Lk 2K / 8K / 16K against 432 / 577 / 574 (H200).
// `source` is an fa_nv_strided_rows or fa_nv_key_block; rows a block of keys looks up
// (source.looked_up) are looked up only when valid.
template <class Spec, int row_dim, int rows, int count, bool aligned, bool all_valid, class Rows>
FAJIT_DEVICE void fa_wgmma_copy_rows(int thread, const unsigned int (&tile)[count], const Rows& source,
                                     int valid_rows) {
    using layout = fa_wgmma_layout<Spec>;
    // Threads take a row's 16-byte chunks, a power of two of chunk slots a row so that
    // the slots tile the 128 threads; the slots past row_dim copy nothing.
    constexpr int row_chunks = row_dim / layout::chunk_elements;
    constexpr int chunks = fa_wgmma_copy_slots<row_chunks>;
    constexpr int rows_per_pass = 128 / chunks;
    static_assert(rows % rows_per_pass == 0, "a copy's passes cover its rows");
    const int first_row = thread / chunks;
    const int chunk = thread % chunks;
    if (chunk >= row_chunks) return;
    long long element_offset[count];
#pragma unroll
    for (int c = 0; c < count; ++c)
        element_offset[c] = first_row * source.row_stride[c] + chunk * layout::chunk_elements;
    // Unrolled further only where no row is tested; fully, it spills the producer.
    constexpr int unrolled = aligned && all_valid ? 8 : 2;
#pragma unroll unrolled
    for (int pass = 0; pass < rows / rows_per_pass; ++pass) {
        const int row = first_row + pass * rows_per_pass;
        const bool valid = all_valid || row < valid_rows;
        const unsigned int offset = layout::offset(rows, row, chunk);
#pragma unroll
        for (int c = 0; c < count; ++c) {
            long long at = valid ? element_offset[c] : 0;
            if constexpr (Rows::looked_up) at = valid ? source.offset(c, row) + chunk * layout::chunk_elements : 0;
            fa_nv_copy_chunk(tile[c] + offset, source.first[c] + at, valid, aligned);
            element_offset[c] += rows_per_pass * source.row_stride[c];
        }
    }
}

template <class Spec, int row_dim, int rows, int count, class Rows>
FAJIT_DEVICE void fa_wgmma_load_rows(int thread, const unsigned int (&tile)[count], const Rows& source, int valid_rows,
                                     bool aligned) {
    if (!aligned)
        fa_wgmma_copy_rows<Spec, row_dim, rows, count, false, false>(thread, tile, source, valid_rows);
    else if (valid_rows >= rows)
        fa_wgmma_copy_rows<Spec, row_dim, rows, count, true, true>(thread, tile, source, valid_rows);
    else
        fa_wgmma_copy_rows<Spec, row_dim, rows, count, true, false>(thread, tile, source, valid_rows);
}

// e4m3: `threads` producer threads (whole warps) write the staged V rows (block_k keys
// of staged_value_dim bytes, swizzled like every tile) into a stage's Vt, whose row d
// holds head dim d of the block's keys, K position 16b + 4c + i being key
// 16b + 2c + i%2 + 8(i/2) (the order P's registers hold them in, fa_sm90_pack_e4m3).
// A warp takes a unit of 16 keys by 32 head dims: one ldmatrix.trans reads it as four
// 8x8 matrices of byte pairs (keys +0 / +8, dims +0 / +16), which leaves lane
// (g = lane/4, c = lane%4) keys 2c, 2c+1 of dims 2g, 2g+1 in each register; two byte
// permutes per register pair make the words of dims 2g and 2g+1 over keys 2c, 2c+1,
// 2c+8, 2c+9, i.e. K positions 4c..4c+3, and one stmatrix writes them as rows of Vt.
// Lanes with g >= 4 swap the two words, so each stored matrix holds dims 2r (r < 4) and
// 2r + 1 (r >= 4), eight distinct swizzle rows: neither instruction has bank conflicts.
// Two shared-memory instructions a warp and unit: the transpose shares the issue slots
// and the shared-memory pipe with the consumers' wgmma (tools/tiles/wgmma_sm90.md).
template <class Spec>
FAJIT_DEVICE void fa_wgmma_transpose_values(int thread, int threads, unsigned int staging, unsigned int transposed) {
    using layout = fa_wgmma_layout<Spec>;
    constexpr int key_blocks = Spec::block_k / 16;
    constexpr int units = key_blocks * (layout::value_columns / 32);
    const int lane = thread % 32, matrix = lane / 8, row = lane % 8;
    const bool swapped = lane / 4 >= 4;
    const unsigned int even_selector = swapped ? 0x7531u : 0x6420u, odd_selector = swapped ? 0x6420u : 0x7531u;
    // The head dim of Vt row `row` of stored matrix `matrix`, within the unit's 32.
    const int stored_dim = 16 * (matrix / 2) + 2 * row + ((matrix % 2) ^ (row >= 4 ? 1 : 0));
#pragma unroll 1
    for (int unit = thread / 32; unit < units; unit += threads / 32) {
        const int key_block = unit % key_blocks, dim_block = unit / key_blocks;
        unsigned int pairs[4];
        fa_nv_ldmatrix_x4_trans(pairs, staging + layout::offset(Spec::block_k, 16 * key_block + 8 * (matrix % 2) + row,
                                                                2 * dim_block + matrix / 2));
        const unsigned int words[4] = {
            __byte_perm(pairs[0], pairs[1], even_selector), __byte_perm(pairs[0], pairs[1], odd_selector),
            __byte_perm(pairs[2], pairs[3], even_selector), __byte_perm(pairs[2], pairs[3], odd_selector)};
        fa_sm90_stmatrix_x4(transposed + layout::offset(layout::value_columns, 32 * dim_block + stored_dim, key_block),
                            words);
    }
}

// The order in which a call's blocks walk its (head, batch) pairs' query tiles
// (fa_wgmma_block_tile). With G blocks, block b takes the tiles b, 2G-1-b, 2G+b,
// 4G-1-b, ... of the order: the rounds alternate direction, so a block with one of the
// longer tiles of a round gets one of the shorter tiles of the next, and the blocks end
// close together.
// - FA_HEAD_BY_HEAD (non-causal dense calls): tiles are all alike, so one pair at a time;
//   the blocks running at once then share a few heads' K and V through L2. Taking every
//   pair of a tile row first instead had 132 blocks stream 128 heads' K/V from memory at
//   once (f16, 2K x 2K, batch 8, 16 heads: about 3.5 TB/s, 0.76x cuDNN).
// - FA_LONGEST_FIRST (causal, windowed and batched calls): every pair's last query tile,
//   then every pair's tile before it, ...: under a causal mask the longest go first.
// - FA_CHUNKED (causal dense calls whose longest-first rounds would hold fewer than 8
//   tiles of a KV head at once): head by head in chunks of two rounds (2G tiles), longest
//   first within a chunk, so a chunk's two rounds pair its k-th longest tile with its
//   k-th shortest, and its K/V prefixes are a few heads' (top-left, 2K x 2K, batch 8,
//   16 heads read about 1.1 GB a call from memory in longest-first order, L2 hit 34%).
enum fa_wgmma_order { FA_LONGEST_FIRST, FA_HEAD_BY_HEAD, FA_CHUNKED };
template <class Spec>
FAJIT_DEVICE fa_wgmma_order fa_wgmma_tile_order(const fa_params& p) {
    if constexpr (Spec::kv_layout != FA_KV_DENSE || Spec::window)
        return FA_LONGEST_FIRST;
    else if constexpr (Spec::causal == FA_CAUSAL_NONE)
        return FA_HEAD_BY_HEAD;
    else
        return static_cast<int>(gridDim.x) * (p.heads_q / p.heads_kv) < 8 * p.heads_q * p.batch ? FA_CHUNKED
                                                                                                : FA_LONGEST_FIRST;
}

// A block's n-th query tile in the call's order (fa_wgmma_tile_order). Batched calls
// count tiles over the longest sequence (p.len_q); a tile past its own sequence's len_q
// is empty.
struct fa_wgmma_tile {
    int row0, head;
    fa_sequence sequence;  // read only for valid tiles
    bool valid;
    bool empty;  // past the sequence's last row: nothing to load or store
};
struct fa_wgmma_tile_index {
    int pair;        // batch * heads_q + head
    int query_tile;  // the tile's first row over block_q
};
// FA_CHUNKED's t-th tile: the tiles t's chunk holds in head-by-head order (pair * query_tiles
// + query_tile) taken by query tile from the last, pairs in order within a query tile. The
// last chunk takes the tiles left over (up to two rounds more): a short chunk of its own
// would end the call on its longest tiles. The consumers wait on this between tiles, so
// its loop holds no division.
FAJIT_DEVICE fa_wgmma_tile_index fa_wgmma_chunked_tile(int t, int chunk_tiles, int query_tiles, int tiles) {
    const int chunks = max(1, tiles / chunk_tiles), chunk = min(t / chunk_tiles, chunks - 1);
    const int chunk_begin = chunk * chunk_tiles, chunk_end = chunk == chunks - 1 ? tiles : chunk_begin + chunk_tiles;
    // With chunk_begin = first * query_tiles + first_tile and chunk_end = end * query_tiles +
    // end_tile, the chunk holds query tile q of the pairs from first + (q < first_tile) up to
    // end + (q < end_tile), that one excluded.
    const int first = chunk_begin / query_tiles, first_tile = chunk_begin - first * query_tiles;
    const int end = chunk_end / query_tiles, end_tile = chunk_end - end * query_tiles;
    int rank = t - chunk_begin;
#pragma unroll 1
    for (int query_tile = query_tiles - 1;; --query_tile) {
        const int first_pair = first + (query_tile < first_tile);
        const int pairs = end + (query_tile < end_tile) - first_pair;
        if (rank < pairs) return {first_pair + rank, query_tile};
        rank -= pairs;
    }
}
template <class Spec>
FAJIT_DEVICE fa_wgmma_tile fa_wgmma_block_tile(const fa_params& p, int n) {
    const int blocks = static_cast<int>(gridDim.x);
    const int block = static_cast<int>(blockIdx.x);
    const int t = n * blocks + (n % 2 == 0 ? block : blocks - 1 - block);
    const int query_tiles = (p.len_q + Spec::block_q - 1) / Spec::block_q;
    const int pairs = p.heads_q * p.batch;
    const int tiles = query_tiles * pairs;
    fa_wgmma_tile tile = {0, 0, {}, t < tiles, false};
    if (!tile.valid) return tile;
    const fa_wgmma_order order = fa_wgmma_tile_order<Spec>(p);
    const fa_wgmma_tile_index index =
        order == FA_HEAD_BY_HEAD ? fa_wgmma_tile_index{t / query_tiles, query_tiles - 1 - t % query_tiles}
        : order == FA_CHUNKED    ? fa_wgmma_chunked_tile(t, 2 * blocks, query_tiles, tiles)
                                 : fa_wgmma_tile_index{t % pairs, query_tiles - 1 - t / pairs};
    tile.row0 = index.query_tile * Spec::block_q;
    tile.head = index.pair % p.heads_q;
    tile.sequence = fa_sequence_of<Spec>(p, index.pair / p.heads_q);
    tile.empty = tile.row0 >= tile.sequence.len_q;
    return tile;
}

// Persistent: the grid is at most one block per multiprocessor (src/families/wgmma_sm90.cpp),
// and each block walks its query tiles in turn. The producer fills the next tile's Q and
// first K, V while the consumers finish the last steps of a tile and store it, so a
// tile starts with no launch and with its first copies already under way.
// The producer's walk over its block's tiles and their key steps, counting fills:
// `tile_begins(tile, kv_head)` once the tile's Q may be overwritten (the consumers passed
// q_empty for the previous tile), then `step_copies(tile, kv_head, step, key0, fill)` for
// each of its key blocks (`key_blocks(tile)`).
template <class Spec, class KeyBlocks, class TileBegins, class StepCopies>
FAJIT_DEVICE void fa_wgmma_walk_fills(const fa_params& p, unsigned int q_empty, const KeyBlocks& key_blocks,
                                      const TileBegins& tile_begins, const StepCopies& step_copies) {
    int fill = 0;
    int q_fills = 0;
#pragma unroll 1
    for (int n = 0;; ++n) {
        const fa_wgmma_tile tile = fa_wgmma_block_tile<Spec>(p, n);
        if (!tile.valid) break;
        const fa_key_blocks blocks = key_blocks(tile);
        if (blocks.count == 0) continue;
        const int kv_head = tile.head / (p.heads_q / p.heads_kv);
        if (q_fills > 0) fa_sm90_mbarrier_wait(q_empty, (q_fills - 1) % 2);
        ++q_fills;
        tile_begins(tile, kv_head);
#pragma unroll 1
        for (int step = 0; step < blocks.count; ++step, ++fill)
            step_copies(tile, kv_head, step, (blocks.first + step) * Spec::block_k, fill);
    }
}

template <class Spec>
__global__ void __launch_bounds__(fa_wgmma_layout<Spec>::threads, 1)
    fa_wgmma_sm90(const __grid_constant__ fa_params p) {
    fa_wait_for_prior_kernels();
    using element = typename Spec::element;
    using layout = fa_wgmma_layout<Spec>;
    constexpr int block_q = Spec::block_q;
    constexpr int block_k = Spec::block_k;
    constexpr int stages = layout::stages;
    constexpr int groups = layout::groups;
    constexpr int head_dim = Spec::head_dim;
    constexpr int value_dim = Spec::head_dim_v;
    constexpr bool fp8 = layout::fp8;
    constexpr int value_columns = layout::value_columns;             // O's columns
    constexpr int dim_slices = layout::scored_dim / layout::k_step;  // k steps of Q K^T
    constexpr int key_tiles = block_k / 8;                           // 8-column tiles of S
    constexpr int key_slices = block_k / layout::k_step;             // k steps of P V
    constexpr int out_n = value_columns % 128 == 0 ? 128 : 64;       // head dims one P V wgmma covers
    constexpr int out_chunks = value_columns / out_n;
    constexpr float margin_log2 = Spec::rescale_margin * FAJIT_LOG2E;
    // The MUFU unit gives 16 exp2s a clock an SM against 4096 f16 FLOPs of wgmma, so
    // where Q K^T and P V take 256 FLOPs a score or fewer (D=64) its exp2 takes as long
    // as its products: one of every 4 moves to the FMA unit there (tools/tiles/wgmma_sm90.md:
    // 1-6% faster at d=32-64 in f16 and bf16 on an H200 and an H100; 2 or 3 of 4 were
    // slower, as was any share for the soft-cap's second MUFU result at D=128, and e4m3
    // 1% slower). Both head dims at most 64, not their sum: d=24 and 32 with dv=96
    // spilled 60 bytes in bf16 with window, cap and sinks.
    constexpr int exp2_on_fma = head_dim <= 64 && value_dim <= 64 && !fp8 ? 1 : 0;

    extern __shared__ __align__(128) unsigned char fa_wgmma_shared[];
    const unsigned int shared = (fa_nv_shared_address(fa_wgmma_shared) + (layout::alignment - 1)) &
                                ~static_cast<unsigned int>(layout::alignment - 1);
    const unsigned int q_tile = shared;
    const auto k_tile = [&](int stage) { return shared + layout::q_bytes + stage * layout::stage_bytes; };
    const auto v_tile = [&](int stage) { return k_tile(stage) + layout::k_bytes; };
    // e4m3: V's rows before their transpose, in one of two buffers.
    const auto staging = [&](int buffer) { return k_tile(stages) + buffer * layout::staging_bytes; };
    // Barriers of tensor `keys` or `values` of a stage. full: the stage's K (or V) has
    // landed, every producer thread's copies; empty: every consumer warp is done reading
    // it. A step's P V runs beside the next step's Q K^T, so a stage's K is done a half
    // step before its V. With two stages, K and V need barriers of their own, so that
    // the producer can refill K meanwhile (d=256: 426 TFLOP/s at Lk=16K against 341
    // with one barrier pair). With three or more, one pair serves both, and a stage is
    // released once its V is done. Fills are counted over all of a block's tiles: fill
    // f goes to stage f % stages, and its barriers' phase parity is f / stages % 2.
    // A tile's Q lands with its first fill; q_empty tells the producer that every
    // consumer warp has done the tile's last Q K^T, so the next tile's Q may overwrite it.
    // e4m3 keeps K's and V's barriers apart at any stage count: V is ready only once the
    // producer has transposed it, well after K has landed. With tensor maps fill f's V
    // goes to staging buffer f % 2: staged(buffer) completes a phase when the rows are in
    // it, staging_free(buffer) when they have been transposed and it may take fill f + 2.
    constexpr int kv_barriers = stages >= 3 && !fp8 ? 1 : 2;
    constexpr int keys = 0, values = 1;
    const auto barrier = [&](int index) { return shared + layout::tile_bytes + 8u * index; };
    const auto full = [&](int tensor, int fill) { return barrier((tensor % kv_barriers) * stages + fill % stages); };
    const auto empty = [&](int tensor, int fill) {
        return barrier((2 + tensor % kv_barriers) * stages + fill % stages);
    };
    const unsigned int q_empty = barrier(4 * stages);
    const auto staged = [&](int buffer) { return barrier(4 * stages + 1 + buffer); };
    const auto staging_free = [&](int buffer) { return barrier(4 * stages + 3 + buffer); };
    // With tensor maps, e4m3's producer splits: thread 0 issues every copy, warps 1-3
    // transpose (fa_wgmma_walk_fills' comment below); with cp.async all 128 copy, then
    // transpose.
    constexpr int transposers = 96;
    const bool tensor_copies = Spec::kv_layout == FA_KV_DENSE && p.tensor_maps_ready;
    if constexpr (layout::scored_dim > Spec::head_dim) {
        // The one 16-byte chunk of k-step padding, in each row of Q and of every stage's K.
        constexpr int padding = Spec::head_dim / layout::chunk_elements;
        for (int row = static_cast<int>(threadIdx.x); row < block_q + stages * block_k;
             row += static_cast<int>(blockDim.x))
            fa_nv_zero_shared16(row < block_q ? q_tile + layout::offset(block_q, row, padding)
                                              : k_tile((row - block_q) / block_k) +
                                                    layout::offset(block_k, (row - block_q) % block_k, padding));
        fa_sm90_fence_shared_for_async();  // written by plain stores, read by wgmma
    }
    if (threadIdx.x == 0) {
#pragma unroll
        for (int stage = 0; stage < stages; ++stage)
#pragma unroll
            for (int tensor = 0; tensor < kv_barriers; ++tensor) {
                // e4m3's V: every producer thread arrives once it has written its share.
                const bool transposed = fp8 && tensor == values;
                fa_sm90_mbarrier_init(full(tensor, stage), !tensor_copies ? 128 : transposed ? transposers : 1);
                fa_sm90_mbarrier_init(empty(tensor, stage), Spec::waves);
            }
        fa_sm90_mbarrier_init(q_empty, Spec::waves);
        if constexpr (fp8)
            for (int buffer = 0; buffer < 2; ++buffer) {
                fa_sm90_mbarrier_init(staged(buffer), tensor_copies ? 1 : 128);
                fa_sm90_mbarrier_init(staging_free(buffer), transposers);
            }
    }
    __syncthreads();

    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int group = warp / 4;
    // A tile's key blocks: those its rows see, none for an empty tile.
    const auto key_blocks = [&](const fa_wgmma_tile& tile) {
        const int len_q = tile.sequence.len_q, len_k = tile.sequence.len_k;
        if (tile.empty) return fa_key_blocks{0, 0, {0, 0}};
        return fa_key_blocks_of<Spec>(p, tile.row0, min(block_q, len_q - tile.row0), len_q, len_k, block_k);
    };

    // A stage is refilled only after this.
    const auto wait_released = [&](int tensor, int fill) {
        if (fill >= stages) fa_sm90_mbarrier_wait(empty(tensor, fill), (fill / stages - 1) % 2);
    };

    // e4m3: once a fill's V rows are in staging buffer `buffer` (its phase of that
    // parity), each of `threads` producer threads writes its share of them transposed
    // into the stage and arrives on the stage's full barrier.
    const auto transpose_staged = [&](int thread, int threads, int fill, int buffer, int parity) {
        if constexpr (fp8) {
            fa_sm90_mbarrier_wait(staged(buffer), parity);
            wait_released(values, fill);
            fa_wgmma_transpose_values<Spec>(thread, threads, staging(buffer), v_tile(fill % stages));
            fa_sm90_fence_shared_for_async();  // plain stores, read by wgmma
            fa_sm90_mbarrier_arrive(full(values, fill));
        }
    };

    // The producer with tensor maps: thread 0 copies Q with a tile's first K (and V),
    // every fill's bytes announced to its full barrier first. With e4m3, V goes to the
    // fill's staging buffer once the transposers have freed it (two fills back), and
    // warps 1-3 transpose it while thread 0 goes on copying, so the copies stay a fill
    // ahead. A box is one swizzle row of head dims wide, so a tile takes one per 64
    // (16-bit) or 128 (e4m3).
    const auto copy_by_tensor_maps = [&](int thread) {
        constexpr int box_columns = layout::swizzle_elements;
        const auto copy_boxes = [&](unsigned int target, const fa_tensor_map& map, int columns, int rows, int row0,
                                    int head, int batch, unsigned int landed) {
#pragma unroll
            for (int c = 0; c < columns / box_columns; ++c)
                fa_sm90_tensor_copy(target + c * rows * 128u, map, box_columns * c, row0, head, batch, landed);
        };
        fa_wgmma_walk_fills<Spec>(
            p, q_empty, key_blocks, [](const fa_wgmma_tile&, int) {},
            [&](const fa_wgmma_tile& tile, int kv_head, int step, int key0, int fill) {
                const int batch = tile.sequence.index;
                if (thread == 0) {
                    const unsigned int with_q = step == 0 ? layout::q_bytes : 0u;
                    const unsigned int keys_landed = full(keys, fill);
                    wait_released(keys, fill);
                    fa_sm90_mbarrier_arrive_expecting(
                        keys_landed, with_q + layout::k_bytes + (kv_barriers == 1 ? layout::v_bytes : 0u));
                    if (step == 0)
                        copy_boxes(q_tile, p.tensor_maps[0], layout::staged_dim, block_q, tile.row0, tile.head, batch,
                                   keys_landed);
                    copy_boxes(k_tile(fill % stages), p.tensor_maps[1], layout::staged_dim, block_k, key0, kv_head,
                               batch, keys_landed);
                    if constexpr (fp8) {
                        const int buffer = fill % 2;
                        if (fill >= 2) fa_sm90_mbarrier_wait(staging_free(buffer), (fill / 2 - 1) % 2);
                        fa_sm90_mbarrier_arrive_expecting(staged(buffer), layout::staging_bytes);
                        copy_boxes(staging(buffer), p.tensor_maps[2], layout::staged_value_dim, block_k, key0, kv_head,
                                   batch, staged(buffer));
                    } else {
                        if constexpr (kv_barriers == 2) {
                            wait_released(values, fill);
                            fa_sm90_mbarrier_arrive_expecting(full(values, fill), layout::v_bytes);
                        }
                        copy_boxes(v_tile(fill % stages), p.tensor_maps[2], layout::staged_value_dim, block_k, key0,
                                   kv_head, batch, full(values, fill));
                    }
                }
                if (thread >= 32) {
                    transpose_staged(thread - 32, transposers, fill, fill % 2, fill / 2 % 2);
                    fa_sm90_mbarrier_arrive(staging_free(fill % 2));
                }
            });
    };

    if (group == groups) {
        // The producer: per tile, Q with step 0's K and V, then each step's K and V into
        // its stage once the consumers have released the stage's previous fill.
        fa_sm90_lower_registers<layout::producer_registers>();
        const int thread = static_cast<int>(threadIdx.x) - layout::consumers;
        if (tensor_copies) {
            if (thread == 0 || (fp8 && thread >= 32)) copy_by_tensor_maps(thread);
            return;
        }
        const bool aligned = fa_nv_aligned16<element>(p.q, p.q_stride) && fa_nv_aligned16<element>(p.k, p.k_stride) &&
                             fa_nv_aligned16<element>(p.v, p.v_stride);
        // Element-wise copies are plain stores, which an ordinary arrival releases.
        const auto arrive_loaded = [&](unsigned int landed) {
            if (aligned)
                fa_sm90_mbarrier_arrive_after_copies(landed);
            else
                fa_sm90_mbarrier_arrive(landed);
        };
        // A tile's rows: Q from its first row, K and V from the sequence's first key.
        const element* k = nullptr;
        const element* v = nullptr;
        const auto tile_begins = [&](const fa_wgmma_tile& tile, int kv_head) {
            const fa_sequence& sequence = tile.sequence;
            const element* q =
                static_cast<const element*>(p.q) + fa_row_offset(p.q_stride, sequence, tile.head, tile.row0);
            k = fa_key_rows_start<Spec, element>(p, p.k, p.k_stride, sequence, kv_head);
            v = fa_key_rows_start<Spec, element>(p, p.v, p.v_stride, sequence, kv_head);
            fa_wgmma_load_rows<Spec, head_dim, block_q, 1>(thread, {q_tile},
                                                           fa_nv_strided_rows<element, 1>{{q}, {p.q_stride[2]}},
                                                           sequence.len_q - tile.row0, aligned);
        };
        const auto step_copies = [&](const fa_wgmma_tile& tile, int kv_head, int, int key0, int fill) {
            const fa_sequence& sequence = tile.sequence;
            const int valid_keys = sequence.len_k - key0;
            const auto load_keys = [&] {
                fa_wgmma_load_rows<Spec, head_dim, block_k, 1>(
                    thread, {k_tile(fill % stages)},
                    fa_nv_key_block_of<Spec, block_k, 1>(p, sequence, kv_head, key0, {k}, {p.k_stride}), valid_keys,
                    aligned);
            };
            const auto load_values = [&] {
                fa_wgmma_load_rows<Spec, value_dim, block_k, 1>(
                    thread, {fp8 ? staging(0) : v_tile(fill % stages)},
                    fa_nv_key_block_of<Spec, block_k, 1>(p, sequence, kv_head, key0, {v}, {p.v_stride}), valid_keys,
                    aligned);
            };
            // One pass over a step's rows copies K and V when they share barriers and a
            // row width; the separate passes K and V need otherwise measured slower at
            // d=128 (301 / 385 / 400 TFLOP/s against 337 / 452 / 462 at Lk 2K / 8K / 16K).
            if constexpr (kv_barriers == 1) {
                wait_released(keys, fill);
                if constexpr (value_dim == head_dim) {
                    fa_wgmma_load_rows<Spec, head_dim, block_k, 2>(
                        thread, {k_tile(fill % stages), v_tile(fill % stages)},
                        fa_nv_key_block_of<Spec, block_k, 2>(p, sequence, kv_head, key0, {k, v},
                                                             {p.k_stride, p.v_stride}),
                        valid_keys, aligned);
                } else {
                    load_keys();
                    load_values();
                }
                arrive_loaded(full(keys, fill));
            } else if constexpr (fp8) {
                wait_released(keys, fill);
                load_keys();
                arrive_loaded(full(keys, fill));
                load_values();  // into staging buffer 0, which the last transpose is done with
                arrive_loaded(staged(0));
                transpose_staged(thread, 128, fill, 0, fill % 2);
                fa_sm90_barrier_sync(1 + groups, 128);  // every thread is done with the buffer
            } else {
                wait_released(keys, fill);
                load_keys();
                arrive_loaded(full(keys, fill));
                wait_released(values, fill);
                load_values();
                arrive_loaded(full(values, fill));
            }
        };
        fa_wgmma_walk_fills<Spec>(p, q_empty, key_blocks, tile_begins, step_copies);
        fa_nv_cp_async_wait<0>();  // no copy may still target shared memory at exit
        return;
    }
    fa_sm90_raise_registers<layout::consumer_registers>();

    // Warpgroups take turns issuing their products, round robin: group g waits at named
    // barrier 1 + g for group g - 1 to pass it on. One group's softmax then runs while
    // the others' products do, instead of all waiting on the tensor cores at once. Every
    // group walks every step of every tile, so the turns pair up; the first is group 0's.
    const auto my_turn = [&] {
        if constexpr (groups > 1) fa_sm90_barrier_sync(1 + group, 256);
    };
    const auto pass_turn = [&] {
        if constexpr (groups > 1) fa_sm90_barrier_arrive(1 + (group + 1) % groups, 256);
    };
    if (group == groups - 1) pass_turn();

    // Waiters fence once for whatever they waited for; a warp releases through one
    // lane, after the wgmma wait that its whole warpgroup passed.
    const auto wait_loaded = [&](int tensor, int fill) {
        fa_sm90_mbarrier_wait(full(tensor, fill), (fill / stages) % 2);
    };
    const auto release = [&](unsigned int barrier) {
        if (lane == 0) fa_sm90_mbarrier_arrive(barrier);
    };
    // Every operand's descriptor is one of these moved by a byte offset.
    const unsigned long long my_q = fa_sm90_descriptor(q_tile + 64u * 128u * group, 16, 1024);
    const unsigned long long first_k = fa_sm90_descriptor(k_tile(0), 16, 1024);
    // V: N-major rows of keys (16-bit), or e4m3's Vt, K-major like K.
    const unsigned long long first_v =
        fp8 ? fa_sm90_descriptor(v_tile(0), 16, 1024) : fa_sm90_descriptor(v_tile(0), block_k * 128u, 1024);
    const auto stage_bytes = [&](int fill) { return static_cast<unsigned int>(fill % stages * layout::stage_bytes); };
    // S = Q K^T, committed as one group. k step s (head dims 16s.. of 16-bit types, 32s..
    // of e4m3) is 32 bytes of a row: column block s/4, 32(s%4) bytes in.
    const auto issue_scores = [&](int fill, float(&score)[block_k / 2]) {
        const unsigned long long k_stage = fa_sm90_descriptor_plus(first_k, stage_bytes(fill));
#pragma unroll
        for (int s = 0; s < dim_slices; ++s) {
            const unsigned int column = (s / 4) * 128u, within = (s % 4) * 32u;
            const unsigned long long a = fa_sm90_descriptor_plus(my_q, column * block_q + within);
            const unsigned long long b = fa_sm90_descriptor_plus(k_stage, column * block_k + within);
            fa_sm90_wgmma_ss<element, block_k>(score, a, b, s > 0);
        }
        fa_sm90_commit();
    };
    float out[value_columns / 2];
    // O += P V, committed as one group. 16-bit: keys 16s .. 16s+15 are rows 16s.. of V;
    // head dims c*out_n.. start column block c*out_n/64, and the column blocks of one
    // wgmma are block_k rows apart. e4m3: head dims c*out_n.. are rows c*out_n.. of Vt,
    // and k step s (32 keys) is 32 bytes of each.
    const auto value_offset = [](int s, int c) {
        if constexpr (fp8) return static_cast<unsigned int>(c * out_n * 128 + s * 32);
        return static_cast<unsigned int>((c * out_n / 64) * block_k * 128 + s * 16 * 128);
    };
    const auto issue_output = [&](int fill, const unsigned int(&probability)[key_slices][4]) {
        const unsigned long long v_stage = fa_sm90_descriptor_plus(first_v, stage_bytes(fill));
#pragma unroll
        for (int s = 0; s < key_slices; ++s)
#pragma unroll
            for (int c = 0; c < out_chunks; ++c) {
                const unsigned long long b = fa_sm90_descriptor_plus(v_stage, value_offset(s, c));
                fa_sm90_wgmma_rs<element, out_n>(*reinterpret_cast<float(*)[out_n / 2]>(&out[c * out_n / 2]),
                                                 probability[s], b);
            }
        fa_sm90_commit();
    };
    const auto rescale = [&](const float(&correction)[2]) {
#pragma unroll
        for (int i = 0; i < value_columns / 2; ++i) out[i] *= correction[(i % 4) / 2];
    };
    // P rounded to the inputs' type, in the A layout of P V's wgmma.
    const auto pack = [](const float(&score)[block_k / 2], unsigned int(&probability)[key_slices][4]) {
        if constexpr (fp8)
            fa_sm90_pack_e4m3<key_tiles>(score, probability);
        else
            fa_m16n8_pack<element, key_tiles>(score, probability);
    };
    int first_fill = 0;  // the fill of the tile's step 0
#pragma unroll 1
    for (int n = 0;; ++n) {
        const fa_wgmma_tile tile = fa_wgmma_block_tile<Spec>(p, n);
        if (!tile.valid) break;
        const fa_key_blocks blocks = key_blocks(tile);
        const int steps = blocks.count;
        const int len_q = tile.sequence.len_q, len_k = tile.sequence.len_k;
        const int my_row = tile.row0 + 64 * group + 16 * (warp % 4) + lane / 4;  // and my_row + 8
        const int kv_head = tile.head / (p.heads_q / p.heads_kv);
        float frame[2] = {fa_neg_inf(), fa_neg_inf()};
        float sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int i = 0; i < value_columns / 2; ++i) out[i] = 0.0f;

        // Masks, moves frames and turns S into unrounded P in place; returns whether O
        // must be rescaled by `correction` before the next P V.
        const auto softmax = [&](int step, float(&score)[block_k / 2], float(&correction)[2]) {
            const int key0 = (blocks.first + step) * block_k;
            const bool masked = fa_block_masked<Spec>(blocks.unmasked, key0, block_k);
            fa_key_range visible[2];
#pragma unroll
            for (int h = 0; h < 2; ++h)
                visible[h] = masked ? fa_visible_range<Spec>(p, my_row + 8 * h, len_q, len_k) : fa_key_range{0, 0};
            float row_max[2];
            const float multiplier =
                fa_m16n8_scores<Spec, key_tiles, true>(p, kv_head, score, masked, visible, key0, row_max);
            const bool moved = fa_m16n8_move_frames(p, len_q, my_row, margin_log2, row_max, frame, sum, correction);
            fa_m16n8_exponentiate<key_tiles, exp2_on_fma>(score, multiplier, frame, sum);
            return __any_sync(0xffffffffu, moved);
        };

        // Step s's Q K^T is issued in the same turn as step s-1's P V, and step s's softmax
        // runs while that P V does: step s's P is packed, and O rescaled, only after that
        // P V is waited for, since the tensor cores read P and O from registers until then.
        // The first Q K^T and the last P V are peeled out of the loop, so that no wgmma in
        // it sits behind a condition (ptxas would serialize them all, advisory C7518).
        float score[block_k / 2];
        unsigned int probability[key_slices][4];
        float correction[2];
        bool moved = false;
        if (steps > 0) {
            wait_loaded(keys, first_fill);  // and the tile's Q
            fa_sm90_fence_shared_for_async();
            my_turn();
            fa_sm90_fence();
            issue_scores(first_fill, score);
            pass_turn();
            fa_sm90_wait<0>();
            fa_sm90_hold(score);
            if constexpr (kv_barriers == 2) release(empty(keys, first_fill));
            if (steps == 1) release(q_empty);
            moved = softmax(0, score, correction);
            pack(score, probability);
        }
#pragma unroll 1
        for (int step = 1; step < steps; ++step) {
            const int fill = first_fill + step;
            wait_loaded(keys, fill);  // with one barrier pair a stage, its V too
            if constexpr (kv_barriers == 2) wait_loaded(values, fill - 1);
            fa_sm90_fence_shared_for_async();
            if (moved) rescale(correction);
            my_turn();
            fa_sm90_fence();
            issue_scores(fill, score);
            issue_output(fill - 1, probability);
            pass_turn();
            fa_sm90_wait<1>();
            fa_sm90_hold(score);
            if constexpr (kv_barriers == 2) release(empty(keys, fill));
            if (step == steps - 1) release(q_empty);
            moved = softmax(step, score, correction);
            fa_sm90_wait<0>();
            fa_sm90_hold(out);
            fa_sm90_hold(score);
            release(empty(values, fill - 1));
            pack(score, probability);
        }
        if (steps > 0) {
            const int fill = first_fill + steps - 1;
            if constexpr (kv_barriers == 2) wait_loaded(values, fill);
            fa_sm90_fence_shared_for_async();
            if (moved) rescale(correction);
            fa_sm90_fence();
            issue_output(fill, probability);
            fa_sm90_wait<0>();
            fa_sm90_hold(out);
            release(empty(values, fill));
        }
        first_fill += steps;
        fa_m16n8_store<Spec, value_columns / 8>(p, tile.sequence, tile.head, my_row, out, frame, sum);
    }
    if (group == 0) my_turn();  // takes the last group's last pass, so no arrival outlives the block
}
