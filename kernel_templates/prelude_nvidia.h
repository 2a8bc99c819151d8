// fa-jit prelude, NVIDIA part (sm_80 and later): cp.async copies, conversions, and the
// softmax on the m16n8 accumulator layout that both NVIDIA tensor-core families use
// (mma.sync's D fragment, which wgmma repeats once per warp of a warpgroup).
// Thin wrappers over PTX; shared-memory operands are 32-bit shared-window addresses,
// as the PTX takes them.
#if FAJIT_NVIDIA
FAJIT_DEVICE unsigned int fa_nv_shared_address(const void* pointer) {
    return static_cast<unsigned int>(__cvta_generic_to_shared(pointer));
}

// Copies 16 bytes global -> shared without staging in registers. src_bytes < 16
// zero-fills the rest (0: the whole chunk), which is how rows past the end become
// zeros instead of whatever memory follows the tensor. `whole_lines` adds the L2::128B
// hint, which has L2 fetch a missed 128-byte line whole: decode-mma's copies ran 1.5-2%
// faster with it (H200, graph replay, two runs each at 16 x 8K and 128 x 8K keys), the
// prefill kernels' 0.3-0.75% slower (seed shape, wgmma-sm90 and mma-sm80, two runs each).
template <bool whole_lines = false>
FAJIT_DEVICE void fa_nv_cp_async16(unsigned int shared, const void* global, int src_bytes) {
    if constexpr (whole_lines)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global),
                     "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global), "r"(src_bytes)
                     : "memory");
}
FAJIT_DEVICE void fa_nv_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` committed groups of this thread are still in flight.
template <int pending>
FAJIT_DEVICE void fa_nv_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// Four 8x8 matrices of 16-bit elements; lanes 8i..8i+7 give the row addresses of
// matrix i, and register i receives matrix i: lane l holds row l/4, columns 2(l%4)
// and 2(l%4)+1 (low half first). The .trans form holds rows 2(l%4), 2(l%4)+1 of
// column l/4 instead, i.e. the transposed matrix.
FAJIT_DEVICE void fa_nv_ldmatrix_x4(unsigned int (&r)[4], unsigned int shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
}
FAJIT_DEVICE void fa_nv_ldmatrix_x4_trans(unsigned int (&r)[4], unsigned int shared) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
}

FAJIT_DEVICE void fa_nv_store_shared_u16(unsigned int shared, unsigned short value) {
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(shared), "h"(value) : "memory");
}
FAJIT_DEVICE void fa_nv_store_shared_u8(unsigned int shared, unsigned char value) {
    asm volatile("st.shared.u8 [%0], %1;\n" ::"r"(shared), "r"(static_cast<unsigned int>(value)) : "memory");
}
FAJIT_DEVICE void fa_nv_zero_shared16(unsigned int shared) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(shared), "r"(0u) : "memory");
}

// Two floats rounded to nearest into one register of T pairs, lo in the low half.
template <class T>
FAJIT_DEVICE unsigned int fa_nv_pack2(float lo, float hi) {
    unsigned int packed;
    if constexpr (fa_same_type<T, fa_bf16>::value)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(hi), "f"(lo));
    return packed;
}

// 2^x in one MUFU instruction; 2^-inf = 0, which masked scores rely on.
FAJIT_DEVICE float fa_nv_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// 2^x for x <= 127 on the FMA and integer units, for kernels whose MUFU unit is the
// bottleneck (fa_m16n8_exponentiate). x = n + f with n an integer and |f| <= 1/2:
// adding 1.5 2^23 rounds x to n in the sum's low mantissa bits, 2^f is a cubic (minimax
// with 2^0 = 1 exactly, relative error 1.0e-4: below half an ulp of f16 P, 2.4e-4), and
// n is added to its exponent field. x is clamped at -127, where f = 0 and the exponent
// wraps to exactly +0, so a masked score's 2^-inf is 0 as with fa_nv_exp2.
FAJIT_DEVICE float fa_nv_exp2_on_fma(float x) {
    const float rounder = 12582912.0f;  // 1.5 2^23
    const float clamped = fmaxf(x, -127.0f);
    const float shifted = clamped + rounder;
    const float f = clamped - (shifted - rounder);
    const float power = fmaf(fmaf(fmaf(0.05500876f, f, 0.24221139f), f, 0.69328302f), f, 1.0f);
    return __int_as_float(__float_as_int(power) + (__float_as_int(shifted) << 23));
}

// Copies one 16-byte chunk (`whole_lines`: fa_nv_cp_async16's), or zeros when the row is
// past the end. Without 16-byte alignment cp.async would fault, so such tensors take
// element-wise copies instead, one element at a time: that path holds no registers the
// fast path would miss.
template <bool whole_lines = false, class T>
FAJIT_DEVICE void fa_nv_copy_chunk(unsigned int target, const T* source, bool valid, bool aligned) {
    if (aligned) {
        fa_nv_cp_async16<whole_lines>(target, source, valid ? 16 : 0);
    } else if constexpr (sizeof(T) == 1) {
#pragma unroll 1
        for (int e = 0; e < 16; ++e) fa_nv_store_shared_u8(target + e, valid ? source[e].bits : 0);
    } else {
#pragma unroll 1
        for (int e = 0; e < 8; ++e) fa_nv_store_shared_u16(target + 2 * e, valid ? source[e].bits : 0);
    }
}

// The rows a staging loop copies from each of `count` tensors. fa_nv_strided_rows: row
// r is first[c] + r * row_stride[c], stepped with no work per row (Q, and K or V blocks
// within one page). fa_nv_key_block: a block of keys; when it may span pages
// (`looked_up`), first[c] is the tensor and row r is looked up (fa_key_offset).
template <class T, int count>
struct fa_nv_strided_rows {
    static constexpr bool looked_up = false;
    const T* first[count];
    long long row_stride[count];
};

template <class Spec, int rows, int count>
struct fa_nv_key_block {
    // A block of `rows` keys starts at a multiple of `rows`, so with pages at least that
    // large it lies in one page (as every dense and ragged block does: one stride apart).
    static constexpr bool looked_up = Spec::kv_layout == FA_KV_PAGED && Spec::page_size < rows;
    const typename Spec::element* first[count];
    long long row_stride[count];
    const fa_params& p;
    const fa_sequence& sequence;
    const long long* stride[count];  // k_stride or v_stride
    int kv_head, key0;

    FAJIT_DEVICE long long offset(int c, int row) const {
        return fa_key_offset<Spec>(p, stride[c], sequence, kv_head, key0 + row);
    }
};

// Whether a block of `rows` keys of this spec needs its page looked up (one block-table
// read, fa_key_page) before its rows can be addressed: paged, in pages that hold it.
template <class Spec, int rows>
inline constexpr bool fa_nv_block_in_one_page = (Spec::kv_layout == FA_KV_PAGED) && (Spec::page_size >= rows);

// The block of keys from key0 of `count` K or V tensors (start: fa_key_rows_start of
// each; stride: its k_stride or v_stride). page: key0's page where
// fa_nv_block_in_one_page (read ahead by a caller that hides the read's latency behind
// other work); ignored otherwise.
template <class Spec, int rows, int count>
FAJIT_DEVICE fa_nv_key_block<Spec, rows, count> fa_nv_key_block_in_page(
    const fa_params& p, const fa_sequence& sequence, int kv_head, int key0, int page,
    const typename Spec::element* const (&start)[count], const long long* const (&stride)[count]) {
    using key_block = fa_nv_key_block<Spec, rows, count>;
    key_block block = {{}, {}, p, sequence, {}, kv_head, key0};
#pragma unroll
    for (int c = 0; c < count; ++c) {
        if constexpr (key_block::looked_up)
            block.first[c] = start[c];
        else if constexpr (fa_nv_block_in_one_page<Spec, rows>)
            block.first[c] = start[c] + fa_paged_key_offset<Spec>(stride[c], page, kv_head, key0);
        else
            block.first[c] = fa_key_row<Spec>(p, start[c], stride[c], sequence, kv_head, key0);
        block.row_stride[c] = stride[c][2];
        block.stride[c] = stride[c];
    }
    return block;
}

// key0's page where a block of `rows` keys needs one (fa_nv_block_in_one_page), else 0.
template <class Spec, int rows>
FAJIT_DEVICE int fa_nv_block_page(const fa_params& p, const fa_sequence& sequence, int key0) {
    if constexpr (fa_nv_block_in_one_page<Spec, rows>)
        return fa_key_page<Spec>(p, sequence, key0);
    else
        return 0;
}

// The same, reading key0's page itself.
template <class Spec, int rows, int count>
FAJIT_DEVICE fa_nv_key_block<Spec, rows, count> fa_nv_key_block_of(const fa_params& p, const fa_sequence& sequence,
                                                                   int kv_head, int key0,
                                                                   const typename Spec::element* const (&start)[count],
                                                                   const long long* const (&stride)[count]) {
    return fa_nv_key_block_in_page<Spec, rows, count>(p, sequence, kv_head, key0,
                                                      fa_nv_block_page<Spec, rows>(p, sequence, key0), start, stride);
}

// Whether a tensor of T can be copied in 16-byte chunks: base and every stride (in
// elements) aligned. That covers every row of every layout: a paged row is the base plus
// page, head and slot strides, a ragged one the base plus head and token strides.
template <class T>
FAJIT_DEVICE bool fa_nv_aligned16(const void* pointer, const long long (&stride)[3]) {
    constexpr long long chunk = 16 / sizeof(T);
    return (reinterpret_cast<unsigned long long>(pointer) % 16 == 0) && stride[0] % chunk == 0 &&
           stride[1] % chunk == 0 && stride[2] % chunk == 0;
}

// ---- softmax on 16-row accumulator tiles ------------------------------------------
// Both NVIDIA tensor-core families hold scores and output in the m16n8 accumulator
// layout (mma.sync's D fragment, which wgmma repeats once per warp of a warpgroup):
// with g = lane/4 and t = lane%4, element 4n + e of a tile is row g + 8(e/2), column
// 8n + 2t + e%2. A row lives in one quad of lanes; index h = e/2 picks the row.

// Sets keys outside a row's `visible` range to -inf when `masked` (after scaling by
// scale_log2 when `scale_here`), and gives each of the lane's two rows' maxima. The
// mask is a pass of its own behind one branch: folded into the maximum's loop, ptxas
// tested `masked` per score, four instructions each and a third of a step's
// instructions (static count, sm_90a), on the steps without a mask too.
template <class Spec, int key_tiles, bool scale_here>
FAJIT_DEVICE void fa_m16n8_mask_and_reduce(float (&s)[4 * key_tiles], float scale_log2, bool masked,
                                           const fa_key_range (&visible)[2], int key0, float (&row_max)[2]) {
    const int t = static_cast<int>(threadIdx.x) % 4;
    if constexpr (scale_here)
#pragma unroll
        for (int i = 0; i < 4 * key_tiles; ++i) s[i] *= scale_log2;
    if (masked)
#pragma unroll
        for (int i = 0; i < 4 * key_tiles; ++i) {
            if (!fa_key_visible<Spec>(visible[(i % 4) / 2], key0 + 8 * (i / 4) + 2 * t + i % 2)) s[i] = fa_neg_inf();
        }
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
// positive scale is left for fa_m16n8_exponentiate to fold into its exponent
// (scaling the maximum of the raw scores gives the maximum of the scaled ones), which
// spares a multiply per score; any other scale, and a soft-cap (fa_capped), are applied
// here. With `cap_in_exponent` a soft-cap's c' is left to the exponent like a positive
// scale (tanh keeps the order and c' > 0) and scale / c' is one factor, two multiplies
// a score fewer: wgmma-sm90's seed shape with a cap took 0.495 ms against 0.523 with
// only the one factor (H200). mma-sm80 keeps fa_capped, since the run-time factor costs
// it the register that, with window, cap and sinks at once, tips it into spilling. Where
// the cap allows a fixed frame (fa_capped_frame_fits), the maxima are that frame and
// blocks without a mask reduce nothing.
// Returns the factor the scores still need. kv_head picks e4m3 inputs' factors.
template <class Spec, int key_tiles, bool cap_in_exponent = false>
FAJIT_DEVICE float fa_m16n8_scores(const fa_params& p, int kv_head, float (&s)[4 * key_tiles], bool masked,
                                   const fa_key_range (&visible)[2], int key0, float (&row_max)[2]) {
    const float scale_log2 = fa_scale_log2<Spec>(p, kv_head);
    if constexpr (Spec::softcap) {
        const fa_soft_cap cap = fa_soft_cap_of(p);
        if constexpr (cap_in_exponent) {
            const float to_tanh = scale_log2 * cap.inverse;
#pragma unroll
            for (int i = 0; i < 4 * key_tiles; ++i) s[i] = fa_tanh(s[i] * to_tanh);
        } else {
#pragma unroll
            for (int i = 0; i < 4 * key_tiles; ++i) s[i] = fa_capped(cap, s[i] * scale_log2);
        }
        const float multiplier = cap_in_exponent ? cap.cap_log2 : 1.0f;
        if (fa_capped_frame_fits<typename Spec::element>(cap)) {
            // A fixed frame: only a block with a mask can hold a row that sees no key.
            if (masked) {
                fa_m16n8_mask_and_reduce<Spec, key_tiles, false>(s, 1.0f, true, visible, key0, row_max);
                for (int h = 0; h < 2; ++h) row_max[h] = fa_capped_step_max(cap, row_max[h]);
            } else {
                row_max[0] = row_max[1] = fa_capped_frame(cap);
            }
            return multiplier;
        }
        fa_m16n8_mask_and_reduce<Spec, key_tiles, false>(s, 1.0f, masked, visible, key0, row_max);
        for (int h = 0; h < 2; ++h) row_max[h] *= multiplier;
        return multiplier;
    }
    if (scale_log2 > 0.0f) {
        fa_m16n8_mask_and_reduce<Spec, key_tiles, false>(s, scale_log2, masked, visible, key0, row_max);
        for (int h = 0; h < 2; ++h) row_max[h] *= scale_log2;
        return scale_log2;
    }
    fa_m16n8_mask_and_reduce<Spec, key_tiles, true>(s, scale_log2, masked, visible, key0, row_max);
    return 1.0f;
}

// The deferred rescale (DESIGN section 7) for the lane's two rows, the first being
// `row`: a frame moves only when the step's maximum passes it by more than the margin.
// Returns whether either row moved; `correction` is what O must be scaled by. Rows at
// or past the sequence's len_q do not report.
FAJIT_DEVICE bool fa_m16n8_move_frames(const fa_params& p, int len_q, int row, float margin_log2,
                                       const float (&row_max)[2], float (&frame)[2], float (&sum)[2],
                                       float (&correction)[2]) {
    const bool reporter = threadIdx.x % 4 == 0;  // one lane of a row's quad
    bool moved = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const bool reports = reporter && row + 8 * h < len_q;
        if (fa_rescale_frame(p, row_max[h], margin_log2, frame[h], correction[h], reports)) {
            sum[h] *= correction[h];
            moved = true;
        }
    }
    return moved;
}

// P = exp2(S * multiplier - frame), in place, added to the running sums. A row with no
// key yet has frame -inf; subtracting 0 instead keeps its masked scores at 0, not NaN.
// `on_fma` of every 4 scores take fa_nv_exp2_on_fma instead of the MUFU unit, for a
// kernel whose products are short enough for the MUFU unit to hold them up.
template <int key_tiles, int on_fma = 0>
FAJIT_DEVICE void fa_m16n8_exponentiate(float (&s)[4 * key_tiles], float multiplier, const float (&frame)[2],
                                        float (&sum)[2]) {
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) base[h] = frame[h] == fa_neg_inf() ? 0.0f : frame[h];
#pragma unroll
    for (int i = 0; i < 4 * key_tiles; ++i) {
        const float exponent = fmaf(s[i], multiplier, -base[(i % 4) / 2]);
        s[i] = i % 4 < on_fma ? fa_nv_exp2_on_fma(exponent) : fa_nv_exp2(exponent);
        sum[(i % 4) / 2] += s[i];
    }
}

// P rounded to T and packed as A fragments of the P V product: the accumulators of key
// tiles 2s and 2s+1 are exactly the A fragment of 16-key slice s. Kept apart from the
// exponentiation so that a kernel can do that while the previous P V still reads the
// registers this writes.
template <class T, int key_tiles>
FAJIT_DEVICE void fa_m16n8_pack(const float (&p)[4 * key_tiles], unsigned int (&probability)[key_tiles / 2][4]) {
#pragma unroll
    for (int n = 0; n < key_tiles; ++n) {
        probability[n / 2][2 * (n % 2)] = fa_nv_pack2<T>(p[4 * n], p[4 * n + 1]);
        probability[n / 2][2 * (n % 2) + 1] = fa_nv_pack2<T>(p[4 * n + 2], p[4 * n + 3]);
    }
}

// Normalizes and stores the lane's two rows of O (first row `row` of the sequence), and
// their LSE; rows at or past the sequence's len_q are not stored, nor the tiles of dims
// past Spec::head_dim_v (a kernel's padding to its instruction shape).
template <class Spec, int dim_tiles>
FAJIT_DEVICE void fa_m16n8_store(const fa_params& p, const fa_sequence& sequence, int head, int row,
                                 const float (&out)[4 * dim_tiles], const float (&frame)[2], const float (&sum)[2]) {
    using T = typename Spec::out_element;
    const int t = static_cast<int>(threadIdx.x) % 4;
    T* o = static_cast<T*>(p.o) + fa_row_offset(p.o_stride, sequence, head, 0);
    const bool aligned = fa_nv_aligned16<T>(p.o, p.o_stride);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float total = sum[h];
        total += fa_shuffle_xor(total, 1);
        total += fa_shuffle_xor(total, 2);
        const int r = row + 8 * h;
        if (r >= sequence.len_q) continue;
        float lse;
        const float inverse = fa_row_normalizer<Spec>(p, head, frame[h], total, lse);
        T* out_row = o + r * p.o_stride[2] + 2 * t;
#pragma unroll
        for (int n = 0; n < Spec::head_dim_v / 8; ++n) {
            const float lo = out[4 * n + 2 * h] * inverse;
            const float hi = out[4 * n + 2 * h + 1] * inverse;
            if (aligned) {
                *reinterpret_cast<unsigned int*>(out_row + 8 * n) = fa_nv_pack2<T>(lo, hi);
            } else {
                out_row[8 * n] = fa_from_float<T>(lo);
                out_row[8 * n + 1] = fa_from_float<T>(hi);
            }
        }
        if (p.lse && t == 0) p.lse[fa_lse_index<Spec>(p, sequence, head, r)] = lse;
    }
}
#endif
