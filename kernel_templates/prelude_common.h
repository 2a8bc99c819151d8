// fa-jit portable prelude, common part: compiles under HIPRTC (AMD) and NVRTC (NVIDIA)
// with no toolkit header, because neither compiler can be assumed to find one on a
// user's machine. Every kernel's source starts with this part; the parts for one
// instruction set (prelude_wmma_tile.h, prelude_nvidia.h, prelude_sm80.h,
// prelude_sm90.h) follow only in the kernels whose family descriptor names them, so an
// edit to one of those re-keys only the kernels that use it.

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

// Launch bounds of the portable kernels: at most `threads` a block. On NVIDIA with a
// minimum of one block per multiprocessor too: given the thread count alone, ptxas held
// fa_scalar to 40 registers and spilled (sm_90a, window and soft-cap), and with the minimum
// it took the 64 it needed. HIP reads a second argument as waves per execution unit, so
// AMD gets the thread count only.
#if FAJIT_NVIDIA
#define FAJIT_PORTABLE_BOUNDS(threads) __launch_bounds__(threads, 1)
#else
#define FAJIT_PORTABLE_BOUNDS(threads) __launch_bounds__(threads)
#endif

// ---- kernel arguments -------------------------------------------------------
// Mirrors src/runtime/kernel_arguments.hpp field for field; both sides assert the
// size so a change to one that misses the other fails to compile.
enum fa_causal_mode { FA_CAUSAL_NONE = 0, FA_CAUSAL_TOP_LEFT = 1, FA_CAUSAL_BOTTOM_RIGHT = 2 };
enum fa_kv_layout { FA_KV_DENSE = 0, FA_KV_RAGGED = 1, FA_KV_PAGED = 2 };

// A CUtensorMap: 128 opaque bytes the host encodes, 64-byte aligned as the driver wants.
struct fa_tensor_map {
    alignas(64) unsigned char bytes[128];
};

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
    // Batched layouts (see the sequences part below); null and 0 for dense calls.
    const int* cu_seqlens_q;  // [batch + 1]
    const int* cu_seqlens_k;  // ragged: [batch + 1]
    const int* block_table;   // paged: [batch, max_pages_per_seq]
    const int* kv_lens;       // paged: [batch]
    // Split-KV decode workspace; null for kernels that do not split.
    float* split_partials;
    unsigned int* split_arrivals;
    int total_q;  // rows of packed q and o
    int total_k;  // ragged: rows of packed k and v
    int max_pages_per_seq;
    int num_pages;
    int num_splits;  // 1 when the key range is not split
    // Model features, each read only by kernels specialized on it (Spec::window,
    // Spec::softcap, Spec::sinks); see the masking and scores parts below.
    const float* sinks;  // [heads_q] natural-log logits that join each row's denominator
    // e4m3 inputs' dequantization factors, null for 1: KV head h's at h % descale_heads
    // (see fa_descale_of).
    const float* q_descale;
    const float* k_descale;
    const float* v_descale;
    int window_left;    // keys a row sees before its diagonal key; -1: unbounded
    int window_right;   // and after it; -1: unbounded
    float softcap;      // c of s <- c tanh(s / c), applied to the scaled scores
    int descale_heads;  // 1 or heads_kv
    // Hopper's tensor maps of Q, K and V [batch, heads, rows, head dim], through which
    // wgmma-sm90 copies dense calls (TMA). The host fills them, and sets ready to 1,
    // for families that read them and tensors TMA can address; else 0 and unread.
    int tensor_maps_ready;
    fa_tensor_map tensor_maps[3];
};
static_assert(sizeof(fa_params) == 704, "fa_params layout changed: update kernel_arguments.hpp too");

// ---- element types: 16-bit floats are raw bits so no toolkit header is needed --
struct fa_f16 {
    unsigned short bits;
};
struct fa_bf16 {
    unsigned short bits;
};
// OCP FP8 E4M3 ("e4m3fn"): exponent bias 7, no infinities, S.1111.111 the one NaN,
// 448 the largest finite value. Inputs only (q, k, v); O is f16 or bf16.
struct fa_e4m3 {
    unsigned char bits;
};

FAJIT_DEVICE float fa_to_float(float x) { return x; }
FAJIT_DEVICE float fa_to_float(fa_bf16 x) { return __uint_as_float(static_cast<unsigned int>(x.bits) << 16); }
FAJIT_DEVICE float fa_to_float(fa_e4m3 x) {
    const unsigned int exponent = (x.bits >> 3) & 15u, mantissa = x.bits & 7u;
    if ((x.bits & 0x7fu) == 0x7fu) return __uint_as_float(0x7fc00000u);
    const float magnitude = exponent == 0 ? static_cast<float>(mantissa) * (1.0f / 512.0f)  // subnormal: m/8 * 2^-6
                                          : __uint_as_float((exponent + 120u) << 23 | mantissa << 20);
    return x.bits & 0x80u ? -magnitude : magnitude;
}
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

template <class A, class B>
struct fa_same_type {
    static constexpr bool value = false;
};
template <class A>
struct fa_same_type<A, A> {
    static constexpr bool value = true;
};

// e4m3 inputs' dequantization for KV head kv_head: the call computes with q, k and v
// times their factors, so scores take q's times k's and O takes v's. Other dtypes have
// none, and read nothing.
struct fa_descale {
    float scores;
    float values;
};
template <class Spec>
FAJIT_DEVICE fa_descale fa_descale_of(const fa_params& p, int kv_head) {
    if constexpr (!fa_same_type<typename Spec::element, fa_e4m3>::value) return {1.0f, 1.0f};
    const int index = kv_head % p.descale_heads;
    const float q = p.q_descale ? p.q_descale[index] : 1.0f;
    const float k = p.k_descale ? p.k_descale[index] : 1.0f;
    return {q * k, p.v_descale ? p.v_descale[index] : 1.0f};
}

// Raw 16-bit bits <-> float for the 16-bit element types (bits packed into words).
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

// ---- kernel start ---------------------------------------------------------------
// Every kernel calls this first. On sm_90 and later the runtime may launch a kernel as a
// programmatic dependent of the one before it in the stream (Options::programmatic_launch),
// which lets its blocks be placed while that one drains; it must then wait, before it
// reads or writes global memory, until the kernels before it have finished and their
// writes are visible. It also lets the kernel after it launch as early: that one waits in
// turn. A kernel launched the ordinary way passes the wait at once; elsewhere both are
// no-ops.
FAJIT_DEVICE void fa_wait_for_prior_kernels() {
#if FAJIT_NVIDIA && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ---- math ---------------------------------------------------------------------
// Scores are kept in base 2 (pre-multiplied by log2 e) so the exponential is one exp2.
#define FAJIT_LOG2E 1.4426950408889634f
#define FAJIT_LN2 0.6931471805599453f
FAJIT_DEVICE float fa_neg_inf() { return __uint_as_float(0xff800000u); }
FAJIT_DEVICE float fa_exp2(float x) { return exp2f(x); }
FAJIT_DEVICE float fa_log2(float x) { return log2f(x); }

// The scores' factor in log2 units: the softmax scale, with e4m3 inputs' q and k factors.
template <class Spec>
FAJIT_DEVICE float fa_scale_log2(const fa_params& p, int kv_head) {
    return p.scale * fa_descale_of<Spec>(p, kv_head).scores * FAJIT_LOG2E;
}

// 1/x to about one ulp: a hardware approximation, where a correctly rounded division
// would cost several instructions per score.
FAJIT_DEVICE float fa_fast_reciprocal(float x) {
#if FAJIT_AMD
    return __builtin_amdgcn_rcpf(x);
#else
    float result;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x));
    return result;
#endif
}

// ---- scores ---------------------------------------------------------------------
// A soft-cap (Spec::softcap) bends each scaled score s to c tanh(s / c). Scores are in
// log2 units here, so it is applied as c' tanh(s' / c') with c' = c log2 e, which is
// the same number. The kernels that take soft-caps are bound by the special-function
// unit that also computes their exp2, so tanh costs what it asks of that unit:
//   NVIDIA  tanh.approx (sm_75 on), one operation, relative error at most 2^-10.987 (PTX ISA): a
//           capped score moves by at most c 2^-10.987, which the tests allow for.
//           tanh from exp2 and a reciprocal (as on AMD), accurate to 1e-7, cost 1.70x
//           the plain kernel at the seed shape against 1.00x (H200, wgmma-sm90, bf16).
//   AMD     1 - 2 / (1 + exp2(2x log2 e)), accurate to about 1e-7: no tanh instruction
//           (nor on NVIDIA before sm_75).
struct fa_soft_cap {
    float cap_log2;
    float inverse;  // 1 / cap_log2
};
FAJIT_DEVICE fa_soft_cap fa_soft_cap_of(const fa_params& p) {
    const float cap_log2 = p.softcap * FAJIT_LOG2E;
    return {cap_log2, fa_fast_reciprocal(cap_log2)};  // not 1 / x: see fa_row_normalizer
}
FAJIT_DEVICE float fa_tanh(float x) {
#if FAJIT_NVIDIA && __CUDA_ARCH__ >= 750
    float result;
    asm("tanh.approx.f32 %0, %1;" : "=f"(result) : "f"(x));
    return result;
#else
    return 1.0f - 2.0f * fa_fast_reciprocal(1.0f + fa_exp2(2.0f * FAJIT_LOG2E * x));
#endif
}
FAJIT_DEVICE float fa_capped(const fa_soft_cap& cap, float score_log2) {
    return cap.cap_log2 * fa_tanh(score_log2 * cap.inverse);
}

// A capped score lies in [-c', c'], so a row's frame need not follow its maximum: fixed
// at c' - 64, it keeps every P = exp2(score - frame) within [2^(64 - 2c'), 2^64]. Where P
// is rounded to a type with f32's exponent range (bf16), and 2^(64 - 2c') is still a
// normal float (c' <= 95, c <= 65.8: Gemma 2's 50 is), no row needs its maximum and no
// frame moves after a row's first key, so the softmax skips the maximum's reduction
// that sits between each score's tanh and its exponent. A larger cap, and f16 or e4m3
// P, keep the moving frame. O and the sums are f32: P up to 2^64 leaves them 2^64 of
// headroom.
constexpr float fa_capped_frame_headroom = 64.0f;
template <class T>
constexpr bool fa_has_float_range = false;
template <>
constexpr bool fa_has_float_range<fa_bf16> = true;
template <class P>
FAJIT_DEVICE bool fa_capped_frame_fits(const fa_soft_cap& cap) {
    if constexpr (fa_has_float_range<P>)
        return 2.0f * cap.cap_log2 - fa_capped_frame_headroom <= 126.0f;
    else
        return false;
}
FAJIT_DEVICE float fa_capped_frame(const fa_soft_cap& cap) { return cap.cap_log2 - fa_capped_frame_headroom; }
// A fixed-frame row's "maximum" for a step with a mask: the frame where the row saw a key
// (its reduced maximum is finite) and -inf where it saw none, so an empty row stays empty.
FAJIT_DEVICE float fa_capped_step_max(const fa_soft_cap& cap, float reduced_max) {
    return reduced_max == fa_neg_inf() ? fa_neg_inf() : fa_capped_frame(cap);
}

// The softmax's denominator of a row: returns its reciprocal and gives the row's LSE.
// With attention sinks (Spec::sinks) the head's sink logit joins the denominator as one
// more exponential that weighs no value row, so a row that sees no key outputs zeros
// and has LSE = sink. Frame and sum are in log2 units.
template <class Spec>
FAJIT_DEVICE float fa_softmax_normalizer(const fa_params& p, int head, float frame, float sum, float& lse) {
    if constexpr (Spec::sinks) {
        const float sink = p.sinks[head] * FAJIT_LOG2E;
        const float top = fmaxf(frame, sink);
        if (top == fa_neg_inf()) {  // no key and a sink of -inf: nothing at all
            lse = fa_neg_inf();
            return 0.0f;
        }
        const float kept = sum > 0.0f ? fa_exp2(frame - top) : 0.0f;
        const float total = sum * kept + fa_exp2(sink - top);
        lse = (top + fa_log2(total)) * FAJIT_LN2;
        // total is a normal float (at least 1 with a moving frame, whose largest term is
        // exp2(0); at least 2^-126 with a fixed one, fa_capped_frame_fits), where the hardware
        // reciprocal is good to an ulp; NVIDIA's correctly rounded one calls a subroutine,
        // whose saved registers spilled (ptxas, scalar with every feature).
        return kept * fa_fast_reciprocal(total);
    } else {
        // A row that sees no key (Lq > Lk under bottom-right) outputs zeros, not NaN.
        lse = sum > 0.0f ? (frame + fa_log2(sum)) * FAJIT_LN2 : fa_neg_inf();
        return sum > 0.0f ? 1.0f / sum : 0.0f;
    }
}

// How a row ends: O is multiplied by what this returns (the softmax's normalizer, times
// v's factor for e4m3 inputs) and LSE is written.
template <class Spec>
FAJIT_DEVICE float fa_row_normalizer(const fa_params& p, int head, float frame, float sum, float& lse) {
    return fa_softmax_normalizer<Spec>(p, head, frame, sum, lse) *
           fa_descale_of<Spec>(p, head / (p.heads_q / p.heads_kv)).values;
}

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
// The keys [begin, end) query row `row` may attend to. Bottom-right aligns the last
// query with the last key (query i of Lq sees keys up to Lk-Lq+i), as chunked prefill
// needs. A sliding window (Spec::window) keeps the keys from window_left before the
// row's diagonal key to window_right after it, -1 leaving that side unbounded; the
// diagonal key is Lk-Lq+i, FlashAttention's alignment, except under a top-left mask,
// where it is i. Both ends only grow with the row, so a block's first row gives its
// first key and its last row its last: the families skip key blocks outside that range
// and mask only the blocks that cross some row's ends. An empty range has begin = end.
struct fa_key_range {
    int begin;
    int end;
};

template <class Spec>
FAJIT_DEVICE fa_key_range fa_visible_range(const fa_params& p, int row, int len_q, int len_k) {
    const long long diagonal = Spec::causal == FA_CAUSAL_TOP_LEFT ? row : static_cast<long long>(len_k) - len_q + row;
    long long end = Spec::causal == FA_CAUSAL_NONE ? len_k : diagonal + 1;
    if constexpr (Spec::window)
        if (p.window_right >= 0 && diagonal + p.window_right + 1 < end) end = diagonal + p.window_right + 1;
    end = end < 0 ? 0 : (end > len_k ? len_k : end);
    // Without a window, begin is the constant 0: kernels short of registers keep no copy.
    if constexpr (!Spec::window) return {0, static_cast<int>(end)};
    long long begin = p.window_left >= 0 ? diagonal - p.window_left : 0;
    begin = begin < 0 ? 0 : (begin > end ? end : begin);
    return {static_cast<int>(begin), static_cast<int>(end)};
}

// A range's begin is tested only under a window: without one it is 0, which a compiler
// cannot prove a key index to pass without a compare per key.
template <class Spec>
FAJIT_DEVICE bool fa_key_visible(const fa_key_range& range, int key) {
    return (!Spec::window || key >= range.begin) && key < range.end;
}

// The blocks of block_k keys that some row of [row0, row0 + rows) sees: `count` blocks
// from block `first`; and the keys [unmasked.begin, unmasked.end) that every row sees,
// so that a block inside them needs no mask. rows >= 1.
struct fa_key_blocks {
    int first;
    int count;
    fa_key_range unmasked;
};
template <class Spec>
FAJIT_DEVICE fa_key_blocks fa_key_blocks_of(const fa_params& p, int row0, int rows, int len_q, int len_k, int block_k) {
    const fa_key_range first_row = fa_visible_range<Spec>(p, row0, len_q, len_k);
    const fa_key_range last_row = fa_visible_range<Spec>(p, row0 + rows - 1, len_q, len_k);
    fa_key_blocks blocks;
    blocks.first = first_row.begin / block_k;
    blocks.count = last_row.end > first_row.begin ? (last_row.end + block_k - 1) / block_k - blocks.first : 0;
    blocks.unmasked = {last_row.begin, first_row.end};
    return blocks;
}

// Whether the block of keys from key0 needs the mask: it reaches outside `unmasked`, the
// keys every row sees (a window's left edge exists only under Spec::window).
template <class Spec>
FAJIT_DEVICE bool fa_block_masked(const fa_key_range& unmasked, int key0, int block_k) {
    return key0 + block_k > unmasked.end || (Spec::window && key0 < unmasked.begin);
}

// ---- sequences: where each sequence of a call lives -------------------------------
// Every family addresses q, k, v, o and lse through these, so each one takes every
// layout its descriptor lists (Spec::kv_layout) with no copy of its loops:
//   dense   batch b is a stride away (len_q, len_k from the arguments);
//   ragged  rows and keys are packed, found through cu_seqlens_q / cu_seqlens_k (the host
//           zeroes the batch strides);
//   paged   rows are packed as for ragged; key j is slot j % page_size of page
//           block_table[b][j / page_size], and k_stride/v_stride are {page, head, slot}.
struct fa_sequence {
    int index;    // within the batch
    int len_q;    // this sequence's query rows
    int len_k;    // and keys
    int q_start;  // row 0's index along q and o's token dimension (0 when dense)
    int k_start;  // key 0's index along k and v's token dimension (ragged; else 0)
};

// Sequence `index`'s rows [start, start + length) of a packed token dimension of `total`
// rows, from cumulative offsets. The host checks the offsets (FAJIT_CHECK_INDICES);
// unchecked, they are clamped to the tensor, so a bad one makes a wrong sequence but
// never a read or write outside q, k, v, o or lse.
FAJIT_DEVICE void fa_packed_rows(const int* offsets, int index, int total, int& start, int& length) {
    start = min(max(offsets[index], 0), total);
    length = min(max(offsets[index + 1], start), total) - start;
}

template <class Spec>
FAJIT_DEVICE fa_sequence fa_sequence_of(const fa_params& p, int index) {
    fa_sequence s = {index, p.len_q, p.len_k, 0, 0};
    if (Spec::kv_layout != FA_KV_DENSE) fa_packed_rows(p.cu_seqlens_q, index, p.total_q, s.q_start, s.len_q);
    if (Spec::kv_layout == FA_KV_RAGGED) fa_packed_rows(p.cu_seqlens_k, index, p.total_k, s.k_start, s.len_k);
    if (Spec::kv_layout == FA_KV_PAGED) {
        // A length past the sequence's pages would read past its block table row.
        const int capacity = p.max_pages_per_seq * Spec::page_size;
        s.len_k = min(max(p.kv_lens[index], 0), capacity);
    }
    return s;
}

// Element offset of query (or output) row `row` of `head`; stride is q_stride or o_stride.
FAJIT_DEVICE long long fa_row_offset(const long long* stride, const fa_sequence& s, int head, int row) {
    return s.index * stride[0] + head * stride[1] + static_cast<long long>(s.q_start + row) * stride[2];
}

// The block-table entry of the page that holds `key` of sequence s, as the caller gave it.
template <class Spec>
FAJIT_DEVICE int fa_block_table_entry(const fa_params& p, const fa_sequence& s, int key) {
    return p.block_table[static_cast<long long>(s.index) * p.max_pages_per_seq + key / Spec::page_size];
}
// An entry made a page of the cache. The host checks block tables (FAJIT_CHECK_INDICES);
// unchecked, a page out of range still reads inside the cache, never elsewhere.
FAJIT_DEVICE int fa_page_in_cache(const fa_params& p, int entry) {
    return entry < 0 ? 0 : (entry >= p.num_pages ? p.num_pages - 1 : entry);
}
// The page that holds `key` of sequence s: one read of the block table.
template <class Spec>
FAJIT_DEVICE int fa_key_page(const fa_params& p, const fa_sequence& s, int key) {
    return fa_page_in_cache(p, fa_block_table_entry<Spec>(p, s, key));
}

// Element offset of `key`'s row of `kv_head` in its page (fa_key_page).
template <class Spec>
FAJIT_DEVICE long long fa_paged_key_offset(const long long* stride, int page, int kv_head, int key) {
    return page * stride[0] + kv_head * stride[1] + static_cast<long long>(key % Spec::page_size) * stride[2];
}

// Element offset of key (or value) row `key` of `kv_head`; stride is k_stride or v_stride.
template <class Spec>
FAJIT_DEVICE long long fa_key_offset(const fa_params& p, const long long* stride, const fa_sequence& s, int kv_head,
                                     int key) {
    if constexpr (Spec::kv_layout == FA_KV_PAGED) {
        return fa_paged_key_offset<Spec>(stride, fa_key_page<Spec>(p, s, key), kv_head, key);
    } else {
        return s.index * stride[0] + kv_head * stride[1] + static_cast<long long>(s.k_start + key) * stride[2];
    }
}

// Staging loops walk a block of K or V rows. Dense and ragged keys are stride[2] apart
// from key 0's row, which fa_key_rows_start gives once per sequence, and fa_key_row
// steps from it as dense code always has; a paged key is looked up (fa_key_offset), and
// then fa_key_rows_start is the tensor itself.
template <class Spec, class T>
FAJIT_DEVICE const T* fa_key_rows_start(const fa_params& p, const void* tensor, const long long* stride,
                                        const fa_sequence& s, int kv_head) {
    if constexpr (Spec::kv_layout == FA_KV_PAGED)
        return static_cast<const T*>(tensor);
    else
        return static_cast<const T*>(tensor) + fa_key_offset<Spec>(p, stride, s, kv_head, 0);
}
template <class Spec, class T>
FAJIT_DEVICE const T* fa_key_row(const fa_params& p, const T* start, const long long* stride, const fa_sequence& s,
                                 int kv_head, int key) {
    if constexpr (Spec::kv_layout == FA_KV_PAGED)
        return start + fa_key_offset<Spec>(p, stride, s, kv_head, key);
    else
        return start + key * stride[2];
}

// Index of a row's natural-log sum-exp: [batch, heads_q, len_q] dense, [heads_q, total_q] packed.
template <class Spec>
FAJIT_DEVICE long long fa_lse_index(const fa_params& p, const fa_sequence& s, int head, int row) {
    if (Spec::kv_layout != FA_KV_DENSE) return static_cast<long long>(head) * p.total_q + s.q_start + row;
    return (static_cast<long long>(s.index) * p.heads_q + head) * p.len_q + row;
}

// ---- test instrumentation -------------------------------------------------------
// Counters prove in tests that a code path ran; release builds compile them away.
// Every family counts each row's rescale decision once (fa_rescale_frame):
//   FA_COUNT_FRAME_MOVES  a frame that already existed moved, so O and the sum were rescaled;
//   FA_COUNT_FRAME_KEPT   the step's maximum rose above the frame but by no more than the
//                         margin, so the rescale was skipped.
enum fa_debug_counter { FA_COUNT_FRAME_MOVES = 0, FA_COUNT_FRAME_KEPT = 1 };
FAJIT_DEVICE void fa_count(const fa_params& p, int counter) {
#if FAJIT_DEBUG_COUNTERS
    if (p.debug_counters) atomicAdd(p.debug_counters + counter, 1ull);
#endif
}

// ---- deferred rescale (DESIGN section 7) ------------------------------------------
// One row's decision for one key step, in log2 units: the frame moves to the step's
// maximum only when that passes it by more than the margin, so exp2(score - frame)
// stays below exp(margin). Returns whether it moved; `correction` is then what O and
// the running sum must be scaled by (0 for a row's first keys, whose frame was -inf).
// `reports` names the one lane per row that counts the decision for the tests.
FAJIT_DEVICE bool fa_rescale_frame(const fa_params& p, float step_max, float margin_log2, float& frame,
                                   float& correction, bool reports) {
    if (step_max > frame + margin_log2) {
        if (reports && frame != fa_neg_inf()) fa_count(p, FA_COUNT_FRAME_MOVES);
        correction = fa_exp2(frame - step_max);
        frame = step_max;
        return true;
    }
    if (reports && step_max > frame) fa_count(p, FA_COUNT_FRAME_KEPT);
    correction = 1.0f;
    return false;
}

// ---- small shared types -----------------------------------------------------------
// 16 bytes moved as one 128-bit load or store.
struct alignas(16) fa_u32x4 {
    unsigned int x, y, z, w;
};

// Lane index within the wave; the kernels launch one-dimensional blocks.
FAJIT_DEVICE int fa_lane() { return static_cast<int>(threadIdx.x) % FAJIT_WAVE_SIZE; }

// Eight consecutive 16-bit elements from global memory; one 128-bit load when the
// tensor's base and row stride allow it (block-uniform), else element by element.
FAJIT_DEVICE fa_u32x4 fa_load8(const unsigned short* source, bool vector_ok) {
    if (vector_ok) return *reinterpret_cast<const fa_u32x4*>(source);
    fa_u32x4 value;
    value.x = source[0] | (static_cast<unsigned int>(source[1]) << 16);
    value.y = source[2] | (static_cast<unsigned int>(source[3]) << 16);
    value.z = source[4] | (static_cast<unsigned int>(source[5]) << 16);
    value.w = source[6] | (static_cast<unsigned int>(source[7]) << 16);
    return value;
}

// Whether rows of 16-bit elements from `base` at `row_stride` take 128-bit loads.
FAJIT_DEVICE bool fa_vector_ok(const void* base, long long row_stride) {
    return ((reinterpret_cast<unsigned long long>(base) | static_cast<unsigned long long>(row_stride * 2)) & 15u) == 0;
}

// The block a kernel works on (query tile, head, sequence), for kernels whose tile part
// may order blocks differently from the grid (fa_tile_block).
struct fa_block_coordinates {
    int x, y, z;
};
