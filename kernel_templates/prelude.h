// fa-jit portable prelude: compiles under HIPRTC (AMD) and NVRTC (NVIDIA) with no
// toolkit header, because neither compiler can be assumed to find one on a user's
// machine. Everything a kernel template needs from the target lives here.

#if defined(__HIPCC_RTC__) || defined(__HIP_DEVICE_COMPILE__)
#define FAJIT_AMD 1
#define FAJIT_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE
#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define FAJIT_NVIDIA 1
#define FAJIT_WAVE_SIZE 32
#else
#error "fa-jit kernels compile with HIPRTC or NVRTC only"
#endif

#define FAJIT_DEVICE __device__ __forceinline__

// ---- kernel arguments -------------------------------------------------------
// Mirrors src/runtime/kernel_arguments.hpp field for field; both sides assert the
// size so a change to one that misses the other fails to compile.
enum fa_causal_mode { FA_CAUSAL_NONE = 0, FA_CAUSAL_TOP_LEFT = 1, FA_CAUSAL_BOTTOM_RIGHT = 2 };

struct fa_params {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    float* lse;                          // [batch, heads_q, len_q] natural-log sum-exp, or null
    unsigned long long* debug_counters;  // test builds only (FAJIT_DEBUG_COUNTERS), else null
    long long q_stride[3];               // element strides: batch, head, sequence
    long long k_stride[3];
    long long v_stride[3];
    long long o_stride[3];
    int batch;
    int heads_q;
    int heads_kv;
    int len_q;
    int len_k;
    float scale;  // softmax scale applied to q.k
};
static_assert(sizeof(fa_params) == 168, "fa_params layout changed: update kernel_arguments.hpp too");

// ---- element types: 16-bit floats are raw bits so no toolkit header is needed --
struct fa_f16 {
    unsigned short bits;
};
struct fa_bf16 {
    unsigned short bits;
};

FAJIT_DEVICE float fa_to_float(float x) { return x; }
FAJIT_DEVICE float fa_to_float(fa_bf16 x) { return __uint_as_float(static_cast<unsigned int>(x.bits) << 16); }
FAJIT_DEVICE float fa_to_float(fa_f16 x) {
#if FAJIT_AMD
    return static_cast<float>(__builtin_bit_cast(_Float16, x.bits));
#else
    float result;
    asm("cvt.f32.f16 %0, %1;" : "=f"(result) : "h"(x.bits));
    return result;
#endif
}

template <class T>
FAJIT_DEVICE T fa_from_float(float x);
template <>
FAJIT_DEVICE float fa_from_float<float>(float x) {
    return x;
}
template <>
FAJIT_DEVICE fa_bf16 fa_from_float<fa_bf16>(float x) {
    unsigned int bits = __float_as_uint(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return fa_bf16{0x7fc0};  // NaN stays NaN
    bits += 0x7fffu + ((bits >> 16) & 1u);                           // round to nearest even
    return fa_bf16{static_cast<unsigned short>(bits >> 16)};
}
template <>
FAJIT_DEVICE fa_f16 fa_from_float<fa_f16>(float x) {
#if FAJIT_AMD
    return fa_f16{__builtin_bit_cast(unsigned short, static_cast<_Float16>(x))};
#else
    unsigned short bits;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(x));
    return fa_f16{bits};
#endif
}

// ---- math ---------------------------------------------------------------------
// Scores are kept in base 2 (pre-multiplied by log2 e) so the exponential is one exp2.
#define FAJIT_LOG2E 1.4426950408889634f
#define FAJIT_LN2 0.6931471805599453f
FAJIT_DEVICE float fa_neg_inf() { return __uint_as_float(0xff800000u); }
FAJIT_DEVICE float fa_exp2(float x) { return exp2f(x); }
FAJIT_DEVICE float fa_log2(float x) { return log2f(x); }

// ---- wave primitives ------------------------------------------------------------
FAJIT_DEVICE float fa_shuffle(float value, int source_lane) {
#if FAJIT_AMD
    return __shfl(value, source_lane, FAJIT_WAVE_SIZE);
#else
    return __shfl_sync(0xffffffffu, value, source_lane);
#endif
}

FAJIT_DEVICE float fa_shuffle_xor(float value, int lane_mask) {
#if FAJIT_AMD
    return __shfl_xor(value, lane_mask, FAJIT_WAVE_SIZE);
#else
    return __shfl_xor_sync(0xffffffffu, value, lane_mask);
#endif
}

// Orders shared-memory writes of one wave before its lanes read them. Waves of a
// block may diverge (rows past the end), so a block barrier would be wrong here.
FAJIT_DEVICE void fa_wave_sync() {
#if FAJIT_AMD
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
    __syncwarp();
#endif
}

FAJIT_DEVICE float fa_wave_max(float value) {
    for (int mask = FAJIT_WAVE_SIZE / 2; mask > 0; mask /= 2) value = fmaxf(value, fa_shuffle_xor(value, mask));
    return value;
}

FAJIT_DEVICE float fa_wave_sum(float value) {
    for (int mask = FAJIT_WAVE_SIZE / 2; mask > 0; mask /= 2) value += fa_shuffle_xor(value, mask);
    return value;
}

// ---- masking --------------------------------------------------------------------
// Number of keys query row `row` may attend to. Bottom-right aligns the last query
// with the last key (query i of Lq sees keys up to Lk-Lq+i), as chunked prefill needs.
FAJIT_DEVICE int fa_visible_keys(int causal, int row, int len_q, int len_k) {
    long long limit = len_k;
    if (causal == FA_CAUSAL_TOP_LEFT) limit = static_cast<long long>(row) + 1;
    if (causal == FA_CAUSAL_BOTTOM_RIGHT) limit = static_cast<long long>(len_k) - len_q + row + 1;
    return static_cast<int>(limit < 0 ? 0 : (limit > len_k ? len_k : limit));
}

// ---- test instrumentation -------------------------------------------------------
// Counters prove in tests that a code path ran; release builds compile them away.
enum fa_debug_counter { FA_COUNT_FRAME_MOVES = 0, FA_COUNT_FRAME_KEPT = 1 };
FAJIT_DEVICE void fa_count(const fa_params& p, int counter) {
#if FAJIT_DEBUG_COUNTERS
    if (p.debug_counters) atomicAdd(p.debug_counters + counter, 1ull);
#endif
}

// ---- arch primitives: 16x16x16 tile MMA ------------------------------------------
// One tile API, one implementation per arch. The layout is gfx11 WMMA's (wave32);
// on every other target the same functions emulate it lane for lane with warp
// shuffles, so a kernel written against it runs unchanged on an NVIDIA GPU and its
// indexing is exercised there exactly as on gfx11.
//
//   fa_tile_c  16x16 f32 accumulator C. Element v (0..7) of lane l is
//              C[row 2v + l/16][col l%16]: the two half-waves interleave rows.
//   fa_tile_ab 16-bit operand: lane l holds one k-vector x[0..15] of index l%16,
//              packed two per word (element k in bits 16*(k%2) of w[k/2]).
//              As A (16 x 16): A[row l%16][k]. As B (16 x 16): B[k][col l%16].
//              Lanes l and l^16 must hold the same values (gfx11 replicates the
//              operands across the half-waves; the emulation reads each half-wave's
//              own copy, so a kernel that fails to replicate computes wrong rows).
//   fa_mma<T>(c, a, b)             c += a * b, products of T summed in f32.
//   fa_tile_c_to_b<T>(c)           the lane exchange that makes an operand out of an
//              accumulator: lane l gets x[k] = C[k][l%16] for k = 0..15 (rounded to T),
//              i.e. B = C, or read as A, A = C^T. Lane l owns C's even or odd rows
//              (by l/16), so one exchange with lane l^16 completes the k-vector.
//   fa_exchange_halves(x)          the value lane l^16 holds (permlanex16 on gfx11).
#if FAJIT_AMD && (defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__) || \
                  defined(__gfx1150__) || defined(__gfx1151__) || defined(__gfx1152__) || defined(__GFX11__))
#define FAJIT_WMMA_NATIVE 1
#else
#define FAJIT_WMMA_NATIVE 0
#endif

template <class A, class B>
struct fa_same_type {
    static constexpr bool value = false;
};
template <class A>
struct fa_same_type<A, A> {
    static constexpr bool value = true;
};

struct fa_tile_c {
    float x[8];
};
struct fa_tile_ab {
    unsigned int w[8];
};
// 16 bytes moved as one 128-bit load or store.
struct alignas(16) fa_u32x4 {
    unsigned int x, y, z, w;
};

#if FAJIT_WMMA_NATIVE
typedef float fa_v8f __attribute__((ext_vector_type(8)));
typedef short fa_v16s __attribute__((ext_vector_type(16)));
typedef _Float16 fa_v16h __attribute__((ext_vector_type(16)));
#endif

// Lane index within the wave; the kernels launch one-dimensional blocks.
FAJIT_DEVICE int fa_lane() { return static_cast<int>(threadIdx.x) % FAJIT_WAVE_SIZE; }

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

// Raw 16-bit bits <-> float for the element types the tiles carry.
template <class T>
FAJIT_DEVICE float fa_bits_to_float(unsigned int bits) {
    T value;
    value.bits = static_cast<unsigned short>(bits);
    return fa_to_float(value);
}
template <class T>
FAJIT_DEVICE unsigned int fa_float_to_bits(float x) {
    return fa_from_float<T>(x).bits;
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
    const int lane = fa_lane();
    const int half = lane / 16;
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
    const int half = fa_lane() / 16;
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

// ---- NVIDIA sm_80+ primitives: mma.sync, ldmatrix, cp.async ----------------------
// Thin wrappers over PTX for kernels that drive the tensor cores directly (mma-sm80).
// Shared-memory operands are 32-bit shared-window addresses, as the PTX takes them.
#if FAJIT_NVIDIA
FAJIT_DEVICE unsigned int fa_sm80_shared_address(const void* pointer) {
    return static_cast<unsigned int>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes global -> shared without staging in registers. src_bytes < 16
// zero-fills the rest (0: the whole chunk), which is how rows past the end become
// zeros instead of whatever memory follows the tensor.
FAJIT_DEVICE void fa_sm80_cp_async16(unsigned int shared, const void* global, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global), "r"(src_bytes)
                 : "memory");
}
FAJIT_DEVICE void fa_sm80_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` committed groups of this thread are still in flight.
template <int pending>
FAJIT_DEVICE void fa_sm80_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

FAJIT_DEVICE void fa_sm80_store_shared_u16(unsigned int shared, unsigned short value) {
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(shared), "h"(value) : "memory");
}

// Four 8x8 matrices of 16-bit elements; lanes 8i..8i+7 give the row addresses of
// matrix i, and register i receives matrix i: lane l holds row l/4, columns 2(l%4)
// and 2(l%4)+1 (low half first). The .trans form holds rows 2(l%4), 2(l%4)+1 of
// column l/4 instead, i.e. the transposed matrix.
FAJIT_DEVICE void fa_sm80_ldmatrix_x4(unsigned int (&r)[4], unsigned int shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
}
FAJIT_DEVICE void fa_sm80_ldmatrix_x4_trans(unsigned int (&r)[4], unsigned int shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
}

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

// Two floats rounded to nearest into one register of T pairs, lo in the low half.
template <class T>
FAJIT_DEVICE unsigned int fa_sm80_pack2(float lo, float hi) {
    unsigned int packed;
    if constexpr (fa_same_type<T, fa_bf16>::value)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
    return packed;
}

// 2^x in one MUFU instruction; 2^-inf = 0, which masked scores rely on.
FAJIT_DEVICE float fa_sm80_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Copies one 16-byte chunk, or zeros when the row is past the end. Without 16-byte
// alignment cp.async would fault, so such tensors take element-wise copies instead,
// one element at a time: that path holds no registers the fast path would miss.
template <class T>
FAJIT_DEVICE void fa_sm80_copy_chunk(unsigned int target, const T* source, bool valid, bool aligned) {
    if (aligned) {
        fa_sm80_cp_async16(target, source, valid ? 16 : 0);
    } else {
#pragma unroll 1
        for (int e = 0; e < 8; ++e) fa_sm80_store_shared_u16(target + 2 * e, valid ? source[e].bits : 0);
    }
}

// Whether a tensor can be copied in 16-byte chunks: base and every stride aligned.
FAJIT_DEVICE bool fa_sm80_aligned16(const void* pointer, const long long (&stride)[3]) {
    return (reinterpret_cast<unsigned long long>(pointer) % 16 == 0) && stride[0] % 8 == 0 && stride[1] % 8 == 0 &&
           stride[2] % 8 == 0;
}

// ---- softmax on 16-row accumulator tiles ------------------------------------------
// Both NVIDIA tensor-core families hold scores and output in the m16n8 accumulator
// layout (mma.sync's D fragment, which wgmma repeats once per warp of a warpgroup):
// with g = lane/4 and t = lane%4, element 4n + e of a tile is row g + 8(e/2), column
// 8n + 2t + e%2. A row lives in one quad of lanes; index h = e/2 picks the row.

// Sets keys at or past a row's `visible` count to -inf when `masked` (after scaling
// by scale_log2 when `scale_here`), and gives each of the lane's two rows' maxima.
// The mask is a pass of its own behind one branch: folded into the maximum's loop,
// ptxas tested `masked` per score, four instructions each and a third of a step's
// instructions (static count, sm_90a), on the steps without a mask too.
template <int key_tiles, bool scale_here>
FAJIT_DEVICE void fa_sm80_tile_mask_and_reduce(float (&s)[4 * key_tiles], float scale_log2, bool masked,
                                               const int (&visible)[2], int key0, float (&row_max)[2]) {
    const int t = static_cast<int>(threadIdx.x) % 4;
    if constexpr (scale_here)
#pragma unroll
        for (int i = 0; i < 4 * key_tiles; ++i) s[i] *= scale_log2;
    if (masked)
#pragma unroll
        for (int i = 0; i < 4 * key_tiles; ++i)
            if (key0 + 8 * (i / 4) + 2 * t + i % 2 >= visible[(i % 4) / 2]) s[i] = fa_neg_inf();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float largest = fa_neg_inf();
#pragma unroll
        for (int n = 0; n < key_tiles; ++n) largest = fmaxf(largest, fmaxf(s[4 * n + 2 * h], s[4 * n + 2 * h + 1]));
        largest = fmaxf(largest, fa_shuffle_xor(largest, 1));
        row_max[h] = fmaxf(largest, fa_shuffle_xor(largest, 2));
    }
}

// Masks the scores and gives each of the lane's two rows' maxima in log2 units. A
// positive scale is left for fa_sm80_tile_exponentiate to fold into its exponent
// (scaling the maximum of the raw scores gives the maximum of the scaled ones), which
// spares a multiply per score; any other scale is applied here. Returns the factor
// the scores still need.
template <int key_tiles>
FAJIT_DEVICE float fa_sm80_tile_scores(float (&s)[4 * key_tiles], float scale_log2, bool masked,
                                       const int (&visible)[2], int key0, float (&row_max)[2]) {
    if (scale_log2 > 0.0f) {
        fa_sm80_tile_mask_and_reduce<key_tiles, false>(s, scale_log2, masked, visible, key0, row_max);
        for (int h = 0; h < 2; ++h) row_max[h] *= scale_log2;
        return scale_log2;
    }
    fa_sm80_tile_mask_and_reduce<key_tiles, true>(s, scale_log2, masked, visible, key0, row_max);
    return 1.0f;
}

// The deferred rescale (DESIGN section 7) for the lane's two rows, the first being
// `row`: a frame moves only when the step's maximum passes it by more than the margin.
// Returns whether either row moved; `correction` is what O must be scaled by.
FAJIT_DEVICE bool fa_sm80_tile_move_frames(const fa_params& p, int row, float margin_log2,
                                           const float (&row_max)[2], float (&frame)[2], float (&sum)[2],
                                           float (&correction)[2]) {
    const bool reporter = threadIdx.x % 4 == 0;  // one lane per row counts for the tests
    bool moved = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        correction[h] = 1.0f;
        const bool counted = reporter && row + 8 * h < p.len_q && row_max[h] != fa_neg_inf();
        if (row_max[h] > frame[h] + margin_log2) {
            if (counted && frame[h] != fa_neg_inf()) fa_count(p, FA_COUNT_FRAME_MOVES);
            correction[h] = fa_sm80_exp2(frame[h] - row_max[h]);
            frame[h] = row_max[h];
            sum[h] *= correction[h];
            moved = true;
        } else if (counted) {
            fa_count(p, FA_COUNT_FRAME_KEPT);
        }
    }
    return moved;
}

// P = exp2(S * multiplier - frame), in place, added to the running sums. A row with no
// key yet has frame -inf; subtracting 0 instead keeps its masked scores at 0, not NaN.
template <int key_tiles>
FAJIT_DEVICE void fa_sm80_tile_exponentiate(float (&s)[4 * key_tiles], float multiplier, const float (&frame)[2],
                                            float (&sum)[2]) {
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) base[h] = frame[h] == fa_neg_inf() ? 0.0f : frame[h];
#pragma unroll
    for (int i = 0; i < 4 * key_tiles; ++i) {
        s[i] = fa_sm80_exp2(fmaf(s[i], multiplier, -base[(i % 4) / 2]));
        sum[(i % 4) / 2] += s[i];
    }
}

// P rounded to T and packed as A fragments of the P V product: the accumulators of key
// tiles 2s and 2s+1 are exactly the A fragment of 16-key slice s. Kept apart from the
// exponentiation so that a kernel can do that while the previous P V still reads the
// registers this writes.
template <class T, int key_tiles>
FAJIT_DEVICE void fa_sm80_tile_pack(const float (&p)[4 * key_tiles], unsigned int (&probability)[key_tiles / 2][4]) {
#pragma unroll
    for (int n = 0; n < key_tiles; ++n) {
        probability[n / 2][2 * (n % 2)] = fa_sm80_pack2<T>(p[4 * n], p[4 * n + 1]);
        probability[n / 2][2 * (n % 2) + 1] = fa_sm80_pack2<T>(p[4 * n + 2], p[4 * n + 3]);
    }
}

// Normalizes and stores the lane's two rows of O (first row `row`), and their LSE.
template <class T, int dim_tiles>
FAJIT_DEVICE void fa_sm80_tile_store(const fa_params& p, int batch, int head, int row,
                                     const float (&out)[4 * dim_tiles], const float (&frame)[2],
                                     const float (&sum)[2]) {
    const int t = static_cast<int>(threadIdx.x) % 4;
    T* o = static_cast<T*>(p.o) + batch * p.o_stride[0] + head * p.o_stride[1];
    const bool aligned = fa_sm80_aligned16(p.o, p.o_stride);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float total = sum[h];
        total += fa_shuffle_xor(total, 1);
        total += fa_shuffle_xor(total, 2);
        const int r = row + 8 * h;
        if (r >= p.len_q) continue;
        const float inverse = total > 0.0f ? 1.0f / total : 0.0f;
        T* out_row = o + r * p.o_stride[2] + 2 * t;
#pragma unroll
        for (int n = 0; n < dim_tiles; ++n) {
            const float lo = out[4 * n + 2 * h] * inverse;
            const float hi = out[4 * n + 2 * h + 1] * inverse;
            if (aligned) {
                *reinterpret_cast<unsigned int*>(out_row + 8 * n) = fa_sm80_pack2<T>(lo, hi);
            } else {
                out_row[8 * n] = fa_from_float<T>(lo);
                out_row[8 * n + 1] = fa_from_float<T>(hi);
            }
        }
        if (p.lse && t == 0)
            p.lse[(static_cast<long long>(batch) * p.heads_q + head) * p.len_q + r] =
                total > 0.0f ? (frame[h] + fa_log2(total)) * FAJIT_LN2 : fa_neg_inf();
    }
}
#endif

// ---- NVIDIA sm_90a primitives: wgmma ---------------------------------------------
// Warpgroup MMA (four consecutive warps, 128 threads) exists only on sm_90a, so this
// section compiles only there. Shared-memory operands are 64-bit descriptors; the
// accumulators are one m16 tile per warp in the layout described above, and an A
// operand from registers is the mma.sync m16n8k16 A fragment of the warp's 16 rows.
#if FAJIT_NVIDIA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A tile of 16-bit elements in the 128-byte swizzle (what CUTLASS calls the SW128
// atom): 64-element rows of 128 bytes, 16-byte chunk c of row r stored at chunk
// c ^ (r % 8). The hardware applies the XOR to address bits 4-6 from bits 7-9, so the
// tile must start 1024-byte aligned. Wider rows are split into 64-column blocks, each
// stored as its own run of rows.
//   K-major operand (row = M or N index, K contiguous): groups of 8 rows are 1024
//     bytes apart (the stride offset); one instruction's 16 K elements lie inside one
//     128-byte row, so the leading offset is unused (1 by convention), and K slice k
//     starts 32k bytes further (within a row block) or one column block further.
//   N-major operand (row = K index, N contiguous): 8-row groups of K are 1024 bytes
//     apart (stride offset); 64-column blocks of N are `leading` bytes apart.
FAJIT_DEVICE unsigned long long fa_sm90_descriptor(unsigned int shared, unsigned int leading_bytes,
                                                   unsigned int stride_bytes) {
    return static_cast<unsigned long long>((shared >> 4) & 0x3fffu) |
           static_cast<unsigned long long>((leading_bytes >> 4) & 0x3fffu) << 16 |
           static_cast<unsigned long long>((stride_bytes >> 4) & 0x3fffu) << 32 | 1ull << 62;  // 1: 128-byte swizzle
}

// The descriptor of the operand `bytes` further into shared memory. The address field
// is the low 14 bits in 16-byte units and every shared address of a block fits it, so
// the low word takes the sum without a carry: one add per wgmma operand, where a fresh
// descriptor costs about five instructions.
FAJIT_DEVICE unsigned long long fa_sm90_descriptor_plus(unsigned long long descriptor, unsigned int bytes) {
    const unsigned int low = static_cast<unsigned int>(descriptor) + (bytes >> 4);
    return (descriptor & 0xffffffff00000000ull) | low;
}

// Orders this thread's register writes before the next wgmma reads them, and is
// needed before the first wgmma of a sequence.
FAJIT_DEVICE void fa_sm90_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
FAJIT_DEVICE void fa_sm90_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending>
FAJIT_DEVICE void fa_sm90_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// Makes shared memory written through ordinary stores or cp.async visible to wgmma,
// which reads it through the async proxy.
FAJIT_DEVICE void fa_sm90_fence_shared_for_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// mbarriers (64-bit shared-memory words): a phase completes once `count` arrivals
// have been made; waiters name the phase by its parity.
FAJIT_DEVICE void fa_sm90_mbarrier_init(unsigned int barrier, unsigned int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(count) : "memory");
}
FAJIT_DEVICE void fa_sm90_mbarrier_arrive(unsigned int barrier) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(barrier) : "memory");
}
// Arrives once every cp.async this thread has issued so far has landed.
FAJIT_DEVICE void fa_sm90_mbarrier_arrive_after_copies(unsigned int barrier) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(barrier) : "memory");
}
FAJIT_DEVICE void fa_sm90_mbarrier_wait(unsigned int barrier, unsigned int parity) {
    asm volatile(
        "{\n.reg .pred done;\nwait:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra wait;\n}\n" ::"r"(barrier),
        "r"(parity)
        : "memory");
}
// Named barriers (0 is __syncthreads): `count` threads in all, some syncing, some
// only arriving.
FAJIT_DEVICE void fa_sm90_barrier_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
FAJIT_DEVICE void fa_sm90_barrier_arrive(int id, int count) {
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Moves registers between the warpgroups of a block: a warpgroup that only copies
// gives up registers, and those that hold accumulators take them. Every warp of the
// warpgroup executes it; raising waits until enough registers are free.
template <int registers>
FAJIT_DEVICE void fa_sm90_lower_registers() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(registers));
}
template <int registers>
FAJIT_DEVICE void fa_sm90_raise_registers() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(registers));
}

// The compiler sees wgmma as finished when it is issued; tying every accumulator to an
// empty asm after the wait keeps reads of them from moving above it.
template <int count>
FAJIT_DEVICE void fa_sm90_hold(float (&d)[count]) {
#pragma unroll
    for (int i = 0; i < count; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Inline PTX has no loops: the accumulator operand lists are spelled out.
#define FA_SM90_ACC8(d, i)                                                                                        \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define FA_SM90_ACC32(d) FA_SM90_ACC8(d, 0), FA_SM90_ACC8(d, 8), FA_SM90_ACC8(d, 16), FA_SM90_ACC8(d, 24)
#define FA_SM90_ACC64(d) \
    FA_SM90_ACC32(d), FA_SM90_ACC8(d, 32), FA_SM90_ACC8(d, 40), FA_SM90_ACC8(d, 48), FA_SM90_ACC8(d, 56)
#define FA_SM90_REGS32                                                                                                \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31}"
#define FA_SM90_REGS64                                                                                                \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
// D (+)= A B for a 64xN D, both operands K-major in shared memory; `accumulate` 0
// overwrites D.
#define FA_SM90_WGMMA_SS(shape, type, regs, acc, a_op, b_op, flag_op)                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape        \
                 ".f32." type "." type " " regs ", " a_op ", " b_op ", p, 1, 1, 0, 0;\n}\n"                       \
                 : acc                                                                                           \
                 : "l"(a), "l"(b), "r"(accumulate))
// D += A B for a 64xN D, A from registers, B N-major in shared memory (always
// accumulates; the predicate is set from a register because PTX wants one).
#define FA_SM90_WGMMA_RS(shape, type, regs, acc, a_ops, b_op, flag_op)                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape        \
                 ".f32." type "." type " " regs ", " a_ops ", " b_op ", p, 1, 1, 1;\n}\n"                          \
                 : acc                                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

template <class T, int n>
FAJIT_DEVICE void fa_sm90_wgmma_ss(float (&d)[n / 2], unsigned long long a, unsigned long long b, int accumulate) {
    static_assert(n == 64 || n == 128, "wgmma wrappers exist for N = 64 and 128");
    constexpr bool bf16 = fa_same_type<T, fa_bf16>::value;
    if constexpr (n == 64 && bf16)
        FA_SM90_WGMMA_SS("m64n64k16", "bf16", FA_SM90_REGS32, FA_SM90_ACC32(d), "%32", "%33", "%34");
    else if constexpr (n == 64)
        FA_SM90_WGMMA_SS("m64n64k16", "f16", FA_SM90_REGS32, FA_SM90_ACC32(d), "%32", "%33", "%34");
    else if constexpr (bf16)
        FA_SM90_WGMMA_SS("m64n128k16", "bf16", FA_SM90_REGS64, FA_SM90_ACC64(d), "%64", "%65", "%66");
    else
        FA_SM90_WGMMA_SS("m64n128k16", "f16", FA_SM90_REGS64, FA_SM90_ACC64(d), "%64", "%65", "%66");
}

template <class T, int n>
FAJIT_DEVICE void fa_sm90_wgmma_rs(float (&d)[n / 2], const unsigned int (&a)[4], unsigned long long b) {
    static_assert(n == 64 || n == 128, "wgmma wrappers exist for N = 64 and 128");
    constexpr bool bf16 = fa_same_type<T, fa_bf16>::value;
    if constexpr (n == 64 && bf16)
        FA_SM90_WGMMA_RS("m64n64k16", "bf16", FA_SM90_REGS32, FA_SM90_ACC32(d), "{%32, %33, %34, %35}", "%36", "%37");
    else if constexpr (n == 64)
        FA_SM90_WGMMA_RS("m64n64k16", "f16", FA_SM90_REGS32, FA_SM90_ACC32(d), "{%32, %33, %34, %35}", "%36", "%37");
    else if constexpr (bf16)
        FA_SM90_WGMMA_RS("m64n128k16", "bf16", FA_SM90_REGS64, FA_SM90_ACC64(d), "{%64, %65, %66, %67}", "%68", "%69");
    else
        FA_SM90_WGMMA_RS("m64n128k16", "f16", FA_SM90_REGS64, FA_SM90_ACC64(d), "{%64, %65, %66, %67}", "%68", "%69");
}
#endif
