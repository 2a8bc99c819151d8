// fa-jit prelude, WMMA tile part: the 16x16x16 tile MMA of the wmma-gfx11 family.
//
// One tile API, one implementation per arch: prelude_mfma_tile.h gives the same names for
// gfx9's MFMA, and fa_matrix_core.h is written against them. The layout is gfx11 WMMA's
// (wave32); on every other target the same functions emulate it lane for lane with warp
// shuffles, so a kernel written against it runs unchanged on an NVIDIA GPU and its
// indexing is exercised there exactly as on gfx11.
//
//   FAJIT_TILE_WAVE 32: lanes of the wave the tiles live in. fa_tile_lane(), fa_tile_wave().
//   fa_tile_group() lane / 16; fa_tile_groups (2) lanes share each column of a C tile.
//   fa_tile_c  16x16 f32 accumulator C. Element v (0..7) of lane l is
//              C[fa_tile_c_row(v) = 2v + l/16][col l%16]: the two half-waves interleave rows.
//   fa_tile_ab 16-bit operand: lane l holds one k-vector x[0..15] of index l%16,
//              packed two per word (element k in bits 16*(k%2) of w[k/2]).
//              As A (16 x 16): A[row l%16][k]. As B (16 x 16): B[k][col l%16].
//              Lanes l and l^16 must hold the same values (gfx11 replicates the
//              operands across the half-waves; the emulation reads each half-wave's
//              own copy, so a kernel that fails to replicate computes wrong rows).
//   fa_load_operand(row)        the operand of a 16-element run in LDS (this lane's part).
//   fa_global_operand(row, n, vector_ok)  the same from global memory, of whose 16
//              elements the first n (0, 8 or 16) are data and the rest read as zeros.
//   fa_mma<T>(c, a, b)          c += a * b, products of T summed in f32.
//   fa_tile_c_to_b<T>(c)        the lane exchange that makes an operand out of an
//              accumulator: lane l gets x[k] = C[k][l%16] for k = 0..15 (rounded to T),
//              i.e. B = C, or read as A, A = C^T. Lane l owns C's even or odd rows
//              (by l/16), so one exchange with lane l^16 completes the k-vector.
//   fa_column_max(x), fa_column_sum(x)  over the lanes that share this lane's column.
//   fa_tile_wave_sync()         orders one wave's LDS writes before its reads.
//   fa_tile_block()             the block's coordinates: the grid's own on gfx11.
#if FAJIT_AMD && (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
                  defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1152__) || defined(__GFX11__))
#define FAJIT_WMMA_NATIVE 1
#else
#define FAJIT_WMMA_NATIVE 0
#endif

struct fa_tile_c {
    float x[8];
};
struct fa_tile_ab {
    unsigned int w[8];
};
#if FAJIT_WMMA_NATIVE
typedef float fa_v8f __attribute__((ext_vector_type(8)));
typedef short fa_v16s __attribute__((ext_vector_type(16)));
typedef _Float16 fa_v16h __attribute__((ext_vector_type(16)));
#endif

#define FAJIT_TILE_WAVE 32
constexpr int fa_tile_groups = 2;
constexpr int fa_tile_c_elements = 8;

FAJIT_DEVICE int fa_tile_lane() { return static_cast<int>(threadIdx.x) % FAJIT_TILE_WAVE; }
FAJIT_DEVICE int fa_tile_wave() { return static_cast<int>(threadIdx.x) / FAJIT_TILE_WAVE; }
FAJIT_DEVICE int fa_tile_group() { return fa_tile_lane() / 16; }
FAJIT_DEVICE int fa_tile_c_row(int v) { return 2 * v + fa_tile_group(); }
FAJIT_DEVICE void fa_tile_wave_sync() { fa_wave_sync(); }
FAJIT_DEVICE fa_block_coordinates fa_tile_block() {
    return {static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
}

FAJIT_DEVICE unsigned int fa_shuffle_u32(unsigned int value, int source_lane) {
#if FAJIT_AMD
    return static_cast<unsigned int>(__shfl(static_cast<int>(value), source_lane, FAJIT_WAVE_SIZE));
#else
    return __shfl_sync(0xffffffffu, value, source_lane);
#endif
}

FAJIT_DEVICE unsigned int fa_exchange_halves(unsigned int value) {
#if FAJIT_WMMA_NATIVE
    // Identity selects: lane i of one 16-lane row reads lane i of the other row.
    return __builtin_amdgcn_permlanex16(value, value, 0x76543210u, 0xfedcba98u, false, false);
#elif FAJIT_AMD
    return static_cast<unsigned int>(__shfl_xor(static_cast<int>(value), 16, FAJIT_WAVE_SIZE));
#else
    return __shfl_xor_sync(0xffffffffu, value, 16);
#endif
}

FAJIT_DEVICE float fa_exchange_halves(float value) {
    return __uint_as_float(fa_exchange_halves(__float_as_uint(value)));
}

FAJIT_DEVICE float fa_column_max(float x) { return fmaxf(x, fa_exchange_halves(x)); }
FAJIT_DEVICE float fa_column_sum(float x) { return x + fa_exchange_halves(x); }

FAJIT_DEVICE fa_tile_ab fa_operand_of(const fa_u32x4& low, const fa_u32x4& high) {
    fa_tile_ab operand;
    operand.w[0] = low.x, operand.w[1] = low.y, operand.w[2] = low.z, operand.w[3] = low.w;
    operand.w[4] = high.x, operand.w[5] = high.y, operand.w[6] = high.z, operand.w[7] = high.w;
    return operand;
}

// Two 128-bit reads.
FAJIT_DEVICE fa_tile_ab fa_load_operand(const unsigned short* row) {
    return fa_operand_of(reinterpret_cast<const fa_u32x4*>(row)[0], reinterpret_cast<const fa_u32x4*>(row)[1]);
}

FAJIT_DEVICE fa_tile_ab fa_global_operand(const unsigned short* row, int data, bool vector_ok) {
    const fa_u32x4 zero = {0u, 0u, 0u, 0u};
    return fa_operand_of(data >= 8 ? fa_load8(row, vector_ok) : zero, data >= 16 ? fa_load8(row + 8, vector_ok) : zero);
}

#if !FAJIT_WMMA_NATIVE
// Emulation. Lane l computes C[2v + h][n] for h = l/16, n = l%16. Its own B register
// is column n of this half-wave's copy; row m of A comes from lane m + 16h, the
// half-wave's own copy of A's row m. Kept out of line: a kernel issues dozens of
// tile products per step and inlining each (64 shuffles, 256 conversions) multiplies
// compile time and code size for no gain in what the emulation is for.
template <class T>
__device__ __attribute__((noinline)) fa_tile_c fa_mma_emulated(fa_tile_c c, fa_tile_ab a, fa_tile_ab b) {
    // Dependent on T so wave64 targets, which never instantiate it, still compile the prelude.
    static_assert(FAJIT_WAVE_SIZE == 32 || sizeof(T) == 0, "the WMMA emulation needs 32-lane waves");
    const int half = fa_tile_group();
    float column[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) column[k] = fa_bits_to_float<T>(b.w[k / 2] >> (16 * (k % 2)));
#pragma unroll
    for (int v = 0; v < 8; ++v) {
        const int source = 2 * v + half + 16 * half;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const unsigned int pair = fa_shuffle_u32(a.w[j], source);
            sum += fa_bits_to_float<T>(pair & 0xffffu) * column[2 * j];
            sum += fa_bits_to_float<T>(pair >> 16) * column[2 * j + 1];
        }
        c.x[v] += sum;
    }
    return c;
}
#endif

template <class T>
FAJIT_DEVICE void fa_mma(fa_tile_c& c, const fa_tile_ab& a, const fa_tile_ab& b) {
    static_assert(sizeof(T) == 2, "tile operands are 16-bit");
#if FAJIT_WMMA_NATIVE
    fa_v8f accumulator = __builtin_bit_cast(fa_v8f, c);
    if constexpr (fa_same_type<T, fa_bf16>::value)
        accumulator = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(__builtin_bit_cast(fa_v16s, a),
                                                                  __builtin_bit_cast(fa_v16s, b), accumulator);
    else
        accumulator = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(fa_v16h, a),
                                                                 __builtin_bit_cast(fa_v16h, b), accumulator);
    c = __builtin_bit_cast(fa_tile_c, accumulator);
#else
    c = fa_mma_emulated<T>(c, a, b);
#endif
}

// Operand x[k] = C[k][l%16] rounded to T. Lane l holds rows 2v + l/16 of C, so it keeps
// its own parity of k and takes the other from lane l^16: four 32-bit exchanges per tile.
template <class T>
FAJIT_DEVICE fa_tile_ab fa_tile_c_to_b(const fa_tile_c& c) {
    const int half = fa_tile_group();
    unsigned int mine[4];
    for (int j = 0; j < 4; ++j) mine[j] = fa_float_to_bits<T>(c.x[2 * j]) | (fa_float_to_bits<T>(c.x[2 * j + 1]) << 16);
    fa_tile_ab out;
    for (int j = 0; j < 4; ++j) {
        // mine[j] holds rows 4j + half and 4j + 2 + half; theirs the other parity.
        const unsigned int theirs = fa_exchange_halves(mine[j]);
        const unsigned int even = half == 0 ? mine[j] : theirs;  // rows 4j, 4j+2
        const unsigned int odd = half == 0 ? theirs : mine[j];   // rows 4j+1, 4j+3
        out.w[2 * j] = (even & 0xffffu) | (odd << 16);
        out.w[2 * j + 1] = (even >> 16) | (odd & 0xffff0000u);
    }
    return out;
}
