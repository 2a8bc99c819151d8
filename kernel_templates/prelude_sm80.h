// fa-jit prelude, sm_80 part: the mma.sync wrappers and the shared tiles of
// the sm_80 kernels (mma-sm80 and decode-mma).
#if FAJIT_NVIDIA
// d += a * b for a 16x16 A (row-major fragment) and a 16x8 B (column fragment), f32
// accumulation. With g = lane/4 and t = lane%4:
//   a[0]: A[g][2t..2t+1]   a[1]: A[g+8][2t..2t+1]   a[2]: A[g][2t+8..]   a[3]: A[g+8][2t+8..]
//   b[0]: B[2t..2t+1][g]   b[1]: B[2t+8..2t+9][g]
//   d[0..1]: D[g][2t..2t+1]                          d[2..3]: D[g+8][2t..2t+1]
template <class T>
FAJIT_DEVICE void fa_sm80_mma_m16n8k16(float* d, const unsigned int (&a)[4], unsigned int b0, unsigned int b1) {
    static_assert(sizeof(T) == 2, "mma operands are 16-bit");
    if constexpr (fa_same_type<T, fa_bf16>::value)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
            "{%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
            "{%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The head dim the m16n8k16 tiles cover: head_dim rounded up to 16, since Q K^T steps
// over it 16 at a time and O's columns come in pairs of 8-column tiles. The dims past
// head_dim are zeros in the shared tiles (fa_sm80_load_rows), so they add nothing to
// Q K^T, and the O columns they give are never stored.
template <int head_dim>
inline constexpr int fa_sm80_padded_dim = (head_dim + 15) / 16 * 16;

// Shared tiles of rows of head_dim 16-bit elements, as both sm_80 kernels stage Q, K
// and V. A row is padded_dim/8 16-byte chunks, stored with one chunk of padding: the row
// pitch is then an odd multiple of 16 bytes, so the 8 rows one ldmatrix phase reads
// (same chunk of 8 consecutive rows) start in 8 distinct 16-byte bank groups and every
// ldmatrix is conflict-free. An XOR swizzle (chunk ^ row % 8) would save the padding,
// but its addresses cannot fold into immediate offsets: at d=128 with 16-row warps
// ptxas needed about 40 more registers for the XOR-ed offsets (it spilled under a
// 168-register cap the padded layout met), while the skewed pitch makes every
// fragment address a lane base plus a constant.
template <int head_dim>
struct fa_sm80_rows {
    static constexpr int chunks = fa_sm80_padded_dim<head_dim> / 8;  // 16-byte chunks per row
    static constexpr int data_chunks = head_dim / 8;                 // the rest are zeros
    static constexpr int pitch = (chunks + 1) * 16;
    static FAJIT_DEVICE unsigned int offset(int row, int chunk) {
        return static_cast<unsigned int>(row * (chunks + 1) + chunk) * 16u;
    }
};

// The same tiles with the XOR swizzle instead of the padding, for rows of a multiple of 8
// chunks: chunk c of row r is stored at chunk c ^ (r % 8) of its 128-byte group, so an
// ldmatrix phase (same chunk of 8 consecutive rows) still meets 8 distinct bank groups,
// and every 128-byte line of a row lands on one 128-byte line of shared memory. With the
// padded pitch a warp's 16-byte copies of a line straddled shared lines: per cp.async L2
// saw 10.5 requests and 24 sectors where 4 and 16 carry the data (ncu, H200, decode-mma,
// 16 x 8K keys; a pitch padded to 128 bytes gave 4 and 16, but conflicted ldmatrix).
// decode-mma, which has registers to spare for the XOR-ed addresses, stages with it
// (fa_sm80_streaming_rows).
template <int head_dim>
struct fa_sm80_swizzled_rows {
    static constexpr int chunks = fa_sm80_padded_dim<head_dim> / 8;
    static constexpr int data_chunks = head_dim / 8;
    static constexpr int pitch = chunks * 16;
    static_assert(chunks % 8 == 0, "the swizzle permutes whole 128-byte groups of chunks");
    static FAJIT_DEVICE unsigned int offset(int row, int chunk) {
        return static_cast<unsigned int>(row * chunks + (chunk ^ (row % 8))) * 16u;
    }
};

// decode-mma's tiles of rows of head_dim: swizzled where a row is whole 128-byte groups
// (padded dims 64, 128, 192 and 256), else padded. The host's layout (decode_mma.cpp)
// sizes them the same way.
template <int head_dim, bool swizzled = fa_sm80_padded_dim<head_dim> % 64 == 0>
struct fa_sm80_streaming_rows_of {
    using type = fa_sm80_rows<head_dim>;
};
template <int head_dim>
struct fa_sm80_streaming_rows_of<head_dim, true> {
    using type = fa_sm80_swizzled_rows<head_dim>;
};
template <int head_dim>
using fa_sm80_streaming_rows = typename fa_sm80_streaming_rows_of<head_dim>::type;

// The walk of fa_sm80_load_rows, with 16-byte copies or (not `aligned`) element copies.
template <class TileRows, int threads, int rows, int count, bool streaming, bool aligned, class Rows>
FAJIT_DEVICE void fa_sm80_walk_rows(const unsigned int (&tile)[count], const Rows& source, int valid_rows, int my_row,
                                    int chunk) {
    using tile_rows = TileRows;
    constexpr int rows_per_pass = threads / tile_rows::chunks;
    constexpr int passes = (rows + rows_per_pass - 1) / rows_per_pass;
    long long element_offset[count];
#pragma unroll
    for (int c = 0; c < count; ++c) element_offset[c] = my_row * source.row_stride[c] + chunk * 8;
#pragma unroll((streaming && aligned) ? passes : 1)
    for (int pass = 0; pass < passes; ++pass) {
        const int row = my_row + pass * rows_per_pass;
        if (rows % rows_per_pass != 0 && row >= rows) break;
        const bool valid = row < valid_rows && chunk < tile_rows::data_chunks;
#pragma unroll
        for (int c = 0; c < count; ++c) {
            long long at = valid ? element_offset[c] : 0;
            if constexpr (Rows::looked_up) at = valid ? source.offset(c, row) + chunk * 8 : 0;
            fa_nv_copy_chunk<streaming>(tile[c] + tile_rows::offset(row, chunk), source.first[c] + at, valid, aligned);
            element_offset[c] += rows_per_pass * source.row_stride[c];
        }
    }
}

// Copies `rows` rows of TileRows (fa_sm80_rows or fa_sm80_swizzled_rows) from each of
// `count` tensors (`source`, an fa_nv_strided_rows or fa_nv_key_block; rows past
// `valid_rows`, and the padding dims, as zeros) into shared tiles `tile[i]`, by
// `threads` threads of which this is `thread`. Each thread owns one 16-byte column of
// the rows and walks down them with stepped addresses. Rows a block of keys looks up
// (source.looked_up) are looked up only when valid.
// `streaming`: decode-mma's walk, where each warp copies a small block that it alone
// reads, once: the walk unrolls (rolled, its branches and address arithmetic were half
// of that kernel's issue stalls, ncu, H200, 16 x 8K keys) and each copy asks L2 for its
// whole line (fa_nv_cp_async16). mma-sm80 keeps the walk rolled, since it runs while
// the O accumulator holds half the registers and unrolled its hoisted addresses pushed
// that kernel into spilling. Alignment is one branch around the walk, never a test per
// copy; the element-wise walk of unaligned tensors stays rolled (unrolled, it spilled at
// d=80 paged, sm_90a ptxas, and took 45 more registers at d=72).
template <class TileRows, int threads, int rows, int count, bool streaming = false, class Rows>
FAJIT_DEVICE void fa_sm80_load_rows(const unsigned int (&tile)[count], const Rows& source, int valid_rows, bool aligned,
                                    int thread) {
    using tile_rows = TileRows;
    const int my_row = thread / tile_rows::chunks;
    const int chunk = thread % tile_rows::chunks;
    if (my_row >= threads / tile_rows::chunks) return;  // leftover threads idle
    if (aligned)
        fa_sm80_walk_rows<TileRows, threads, rows, count, streaming, true>(tile, source, valid_rows, my_row, chunk);
    else
        fa_sm80_walk_rows<TileRows, threads, rows, count, streaming, false>(tile, source, valid_rows, my_row, chunk);
}

// One block of K and V rows from key0 (in `page`, fa_nv_block_page) into their shared
// tiles (KeyRows and ValueRows, of Spec::head_dim and Spec::head_dim_v), by the `threads`
// threads of the copy (this one is `thread`): K and V rows of one width share a pass, V
// rows of a head dim of their own take another.
template <class Spec, class KeyRows, class ValueRows, int threads, int block_k, bool streaming = false>
FAJIT_DEVICE void fa_sm80_load_key_block(const fa_params& p, const fa_sequence& sequence, int kv_head, int key0,
                                         int page, int valid_rows, const typename Spec::element* k,
                                         const typename Spec::element* v, unsigned int k_tile, unsigned int v_tile,
                                         bool aligned, int thread) {
    if constexpr (Spec::head_dim_v == Spec::head_dim) {
        fa_sm80_load_rows<KeyRows, threads, block_k, 2, streaming>(
            {k_tile, v_tile},
            fa_nv_key_block_in_page<Spec, block_k, 2>(p, sequence, kv_head, key0, page, {k, v},
                                                      {p.k_stride, p.v_stride}),
            valid_rows, aligned, thread);
    } else {
        fa_sm80_load_rows<KeyRows, threads, block_k, 1, streaming>(
            {k_tile}, fa_nv_key_block_in_page<Spec, block_k, 1>(p, sequence, kv_head, key0, page, {k}, {p.k_stride}),
            valid_rows, aligned, thread);
        fa_sm80_load_rows<ValueRows, threads, block_k, 1, streaming>(
            {v_tile}, fa_nv_key_block_in_page<Spec, block_k, 1>(p, sequence, kv_head, key0, page, {v}, {p.v_stride}),
            valid_rows, aligned, thread);
    }
}

// The two products of a step of the sm_80 kernels, on `m_tiles` 16-row tiles whose rows
// are held as A fragments, against K and V staged as KeyRows and ValueRows tiles
// (fa_sm80_rows or fa_sm80_swizzled_rows: either way the 8 rows of a phase are 8
// consecutive rows from a multiple of 8, so their swizzle is row % 8 = matrix_row). ldmatrix row
// addresses: lane l serves row `matrix_row` (l%8) of matrix `matrix` (l/8).
//
// S += A K^T over the dims of one 16-dim slice: per pair of 8-key tiles one ldmatrix of
// K rows (matrices: keys of tile n / n+1 (bit 1), dims +0 / +8 (bit 0)), shared by the
// row tiles.
template <class T, class KeyRows, int m_tiles, int key_tiles>
FAJIT_DEVICE void fa_sm80_add_scores(float (&score)[m_tiles][4 * key_tiles], const unsigned int (&a)[m_tiles][4],
                                     unsigned int k_tile, int slice, int matrix, int matrix_row) {
    using tile_rows = KeyRows;
#pragma unroll
    for (int n = 0; n < key_tiles; n += 2) {
        unsigned int b[4];
        fa_nv_ldmatrix_x4(b, k_tile + tile_rows::offset(8 * n + 8 * (matrix / 2) + matrix_row, 2 * slice + matrix % 2));
#pragma unroll
        for (int m = 0; m < m_tiles; ++m) {
            fa_sm80_mma_m16n8k16<T>(&score[m][4 * n], a[m], b[0], b[1]);
            fa_sm80_mma_m16n8k16<T>(&score[m][4 * n + 4], a[m], b[2], b[3]);
        }
    }
}

// O += P V over the keys of one 16-key slice of P (A fragments): per pair of 8-dim tiles
// one ldmatrix.trans of V rows (matrices: keys +0 / +8 of the slice (bit 0), dim tile
// n / n+1 (bit 1)), shared by the row tiles.
template <class T, class ValueRows, int m_tiles, int dim_tiles, int key_slices>
FAJIT_DEVICE void fa_sm80_add_pv(float (&out)[m_tiles][4 * dim_tiles],
                                 const unsigned int (&probability)[m_tiles][key_slices][4], unsigned int v_tile,
                                 int slice, int matrix, int matrix_row) {
    using tile_rows = ValueRows;
#pragma unroll
    for (int n = 0; n < dim_tiles; n += 2) {
        unsigned int b[4];
        fa_nv_ldmatrix_x4_trans(b,
                                v_tile + tile_rows::offset(16 * slice + 8 * (matrix % 2) + matrix_row, n + matrix / 2));
#pragma unroll
        for (int m = 0; m < m_tiles; ++m) {
            fa_sm80_mma_m16n8k16<T>(&out[m][4 * n], probability[m][slice], b[0], b[1]);
            fa_sm80_mma_m16n8k16<T>(&out[m][4 * n + 4], probability[m][slice], b[2], b[3]);
        }
    }
}
#endif
