// fa-jit prelude, MFMA tile part: the 16x16x16 tile MMA of the mfma-gfx9 family.
//
// The same tile API as prelude_wmma_tile.h (the names are documented there), for gfx9's
// MFMA in wave64: v_mfma_f32_16x16x16_f16, and _bf16_1k on gfx90a and later. 16x16x16
// rather than 32x32x8 because the 16-row tile is the one fa_matrix_core.h is written
// for, shared with gfx11; 32x32x8 reads fewer operand bytes per product but needs 32-row
// tiles, another kernel. No MI300 or MI250 has measured the difference here.
//
//   FAJIT_TILE_WAVE 64. fa_tile_group() = lane / 16 (0..3); fa_tile_groups = 4.
//   fa_tile_c  16x16 f32 accumulator: element v (0..3) of lane l is
//              C[fa_tile_c_row(v) = 4(l/16) + v][col l%16].
//   fa_tile_ab 16-bit operand: lane l holds 4 elements of the k-vector of index l%16,
//              k = 4(l/16) + 0..3, two per word. As A: A[row l%16][k]; as B: B[k][col l%16].
//              Nothing is replicated: the four lane groups hold the four k quarters.
//   fa_tile_c_to_b<T>(c)  no exchange at all: lane l's C elements C[4(l/16) + v][l%16]
//              are exactly the B operand's k = 4(l/16) + v of column l%16.
//   fa_column_max/sum     over the lanes l%16 + 16g, g = 0..3 (xor 16, then xor 32).
//   fa_tile_block()       on gfx94x (MI300), blocks renumbered so each XCD runs one
//              contiguous range of (query tile, head, sequence): the hardware deals
//              workgroups to its 8 XCDs round-robin, and without the renumbering every
//              head's blocks would land on all 8 dies and fill each L2 with every head's
//              K/V. Heads next to each other (one GQA group) then share one die's L2.
//
// Emulation on NVIDIA. A wave64 is a pair of warps, 64 threads, one per lane, so a kernel
// runs with the lane indexing it has on gfx9; every cross-lane step goes through a
// per-wave scratch area in shared memory between two named barriers of the pair
// (bar.sync 1 + wave, 64 threads). The other way, one warp holding two lanes per thread,
// would make every kernel loop over its lanes, and the kernel would no longer be the
// one that runs on gfx9. The emulation also renumbers blocks as on gfx94x, so the tests
// there exercise the renumbering.
#if FAJIT_AMD && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define FAJIT_MFMA_NATIVE 1
#elif FAJIT_NVIDIA
#define FAJIT_MFMA_NATIVE 0
#else
#error "mfma-gfx9 compiles for gfx90a, gfx940, gfx941, gfx942 or (emulated) NVIDIA"
#endif
#if !FAJIT_MFMA_NATIVE || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define FAJIT_XCDS 8
#else
#define FAJIT_XCDS 1
#endif

#define FAJIT_TILE_WAVE 64
constexpr int fa_tile_groups = 4;
constexpr int fa_tile_c_elements = 4;

struct fa_tile_c {
    float x[4];
};
struct fa_tile_ab {
    unsigned int w[2];
};
struct alignas(8) fa_u32x2 {
    unsigned int x, y;
};
#if FAJIT_MFMA_NATIVE
typedef float fa_v4f __attribute__((ext_vector_type(4)));
typedef short fa_v4s __attribute__((ext_vector_type(4)));
typedef _Float16 fa_v4h __attribute__((ext_vector_type(4)));
#endif

FAJIT_DEVICE int fa_tile_lane() { return static_cast<int>(threadIdx.x) % FAJIT_TILE_WAVE; }
FAJIT_DEVICE int fa_tile_wave() { return static_cast<int>(threadIdx.x) / FAJIT_TILE_WAVE; }
FAJIT_DEVICE int fa_tile_group() { return fa_tile_lane() / 16; }
FAJIT_DEVICE int fa_tile_c_row(int v) { return 4 * fa_tile_group() + v; }

// Block i goes to XCD i % 8 as its (i / 8)-th; the XCDs' shares, in order, tile the
// grid. A bijection for any block count.
FAJIT_DEVICE fa_block_coordinates fa_tile_block() {
    const int blocks_x = static_cast<int>(gridDim.x), blocks_y = static_cast<int>(gridDim.y);
    int index = static_cast<int>(blockIdx.x) +
                blocks_x * (static_cast<int>(blockIdx.y) + blocks_y * static_cast<int>(blockIdx.z));
    if (FAJIT_XCDS > 1) {
        const int count = blocks_x * blocks_y * static_cast<int>(gridDim.z);
        const int xcd = index % FAJIT_XCDS, share = count / FAJIT_XCDS, extra = count % FAJIT_XCDS;
        index = xcd * share + min(xcd, extra) + index / FAJIT_XCDS;
    }
    return {index % blocks_x, (index / blocks_x) % blocks_y, index / (blocks_x * blocks_y)};
}

#if FAJIT_MFMA_NATIVE
FAJIT_DEVICE void fa_tile_wave_sync() { fa_wave_sync(); }

FAJIT_DEVICE float fa_column_max(float x) {
    x = fmaxf(x, __shfl_xor(x, 16, 64));
    return fmaxf(x, __shfl_xor(x, 32, 64));
}
FAJIT_DEVICE float fa_column_sum(float x) {
    x += __shfl_xor(x, 16, 64);
    return x + __shfl_xor(x, 32, 64);
}
#else
// The two warps of this lane's wave meet (named barrier 1 + wave; 0 is __syncthreads').
FAJIT_DEVICE void fa_tile_wave_sync() { asm volatile("bar.sync %0, 64;" ::"r"(1 + fa_tile_wave()) : "memory"); }

// Four words per lane of each wave (the operands of one product); at most 8 waves.
FAJIT_DEVICE unsigned int* fa_wave_scratch() {
    __shared__ unsigned int scratch[8][FAJIT_TILE_WAVE * 4];
    return scratch[fa_tile_wave()];
}

// The values of the four lanes of this lane's column, in lane-group order.
FAJIT_DEVICE void fa_column_values(float x, float (&values)[4]) {
    float* const scratch = reinterpret_cast<float*>(fa_wave_scratch());
    const int lane = fa_tile_lane();
    scratch[lane] = x;
    fa_tile_wave_sync();
    for (int g = 0; g < 4; ++g) values[g] = scratch[lane % 16 + 16 * g];
    fa_tile_wave_sync();  // read before the next step writes
}
// Combined in the order the xor-16-then-32 exchange combines them on gfx9.
FAJIT_DEVICE float fa_column_max(float x) {
    float v[4];
    fa_column_values(x, v);
    return fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
}
FAJIT_DEVICE float fa_column_sum(float x) {
    float v[4];
    fa_column_values(x, v);
    return (v[0] + v[1]) + (v[2] + v[3]);
}
#endif

// This lane's quarter of a 16-element run: elements 4g .. 4g + 3, one 64-bit read.
FAJIT_DEVICE fa_tile_ab fa_load_operand(const unsigned short* row) {
    const fa_u32x2 words = reinterpret_cast<const fa_u32x2*>(row + 4 * fa_tile_group())[0];
    return {{words.x, words.y}};
}

// `data` is 0, 8 or 16, so a quarter is all data or all padding.
FAJIT_DEVICE fa_tile_ab fa_global_operand(const unsigned short* row, int data, bool vector_ok) {
    const int k0 = 4 * fa_tile_group();
    if (k0 >= data) return {{0u, 0u}};
    const unsigned short* const source = row + k0;
    if (vector_ok) return fa_load_operand(row);
    return {{source[0] | (static_cast<unsigned int>(source[1]) << 16),
             source[2] | (static_cast<unsigned int>(source[3]) << 16)}};
}

#if !FAJIT_MFMA_NATIVE
// Lane l computes C[4g + v][n] for g = l/16, n = l%16: row 4g + v of A is spread over
// lanes 4g + v + 16j (k quarter j), column n of B over lanes n + 16j. Kept out of line,
// as the WMMA emulation is.
template <class T>
__device__ __attribute__((noinline)) fa_tile_c fa_mma_emulated(fa_tile_c c, fa_tile_ab a, fa_tile_ab b) {
    unsigned int* const scratch = fa_wave_scratch();
    const int lane = fa_tile_lane();
    scratch[4 * lane + 0] = a.w[0], scratch[4 * lane + 1] = a.w[1];
    scratch[4 * lane + 2] = b.w[0], scratch[4 * lane + 3] = b.w[1];
    fa_tile_wave_sync();
    const int n = lane % 16;
    for (int v = 0; v < 4; ++v) {
        const int m = fa_tile_c_row(v);
        float sum = 0.0f;
        for (int k = 0; k < 16; ++k) {
            const int shift = 16 * (k % 2), word = (k % 4) / 2;
            const unsigned int a_bits = scratch[4 * (m + 16 * (k / 4)) + word] >> shift;
            const unsigned int b_bits = scratch[4 * (n + 16 * (k / 4)) + 2 + word] >> shift;
            sum += fa_bits_to_float<T>(a_bits & 0xffffu) * fa_bits_to_float<T>(b_bits & 0xffffu);
        }
        c.x[v] += sum;
    }
    fa_tile_wave_sync();  // every lane has read before the next product writes
    return c;
}
#endif

template <class T>
FAJIT_DEVICE void fa_mma(fa_tile_c& c, const fa_tile_ab& a, const fa_tile_ab& b) {
    static_assert(sizeof(T) == 2, "tile operands are 16-bit");
#if FAJIT_MFMA_NATIVE
    fa_v4f accumulator = __builtin_bit_cast(fa_v4f, c);
    if constexpr (fa_same_type<T, fa_bf16>::value)
        accumulator = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(fa_v4s, a),
                                                                __builtin_bit_cast(fa_v4s, b), accumulator, 0, 0, 0);
    else
        accumulator = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(fa_v4h, a),
                                                            __builtin_bit_cast(fa_v4h, b), accumulator, 0, 0, 0);
    c = __builtin_bit_cast(fa_tile_c, accumulator);
#else
    c = fa_mma_emulated<T>(c, a, b);
#endif
}

// C's elements, rounded to T, are the operand as they stand.
template <class T>
FAJIT_DEVICE fa_tile_ab fa_tile_c_to_b(const fa_tile_c& c) {
    return {{fa_float_to_bits<T>(c.x[0]) | (fa_float_to_bits<T>(c.x[1]) << 16),
             fa_float_to_bits<T>(c.x[2]) | (fa_float_to_bits<T>(c.x[3]) << 16)}};
}
