// fa-jit prelude, sm_90a part: warpgroup MMA (wgmma), mbarriers and register reallocation.
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
// Tensor memory access (TMA): one thread copies a box of a tensor into shared memory,
// described by a tensor map the host encoded (fa_params::tensor_maps, a kernel
// parameter's address), in the 128-byte swizzle the map names; rows and columns past
// the tensor's ends land as zeros. The bytes landing count down the transaction count
// the barrier was told to expect, so one arrival with the expected bytes stands for
// every copy of a fill.
FAJIT_DEVICE void fa_sm90_mbarrier_arrive_expecting(unsigned int barrier, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}
// Box (x, y, z, w): columns x.. (the head dims), rows y.., head z, batch w.
FAJIT_DEVICE void fa_sm90_tensor_copy(unsigned int target, const fa_tensor_map& map, int x, int y, int z, int w,
                                      unsigned int barrier) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
        "%5}], [%6];\n" ::"r"(target),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y), "r"(z), "r"(w), "r"(barrier)
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
#define FA_SM90_ACC8(d, i)                                                                                      \
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
// overwrites D. `immediates` are the scales of A and B (1: as they are) and, for 16-bit
// types, their transposes (0: K-major); 8-bit types are K-major only and take none.
#define FA_SM90_WGMMA_SS(shape, type, immediates, regs, acc, a_op, b_op, flag_op)                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape ".f32." type \
                 "." type " " regs ", " a_op ", " b_op ", p, " immediates ";\n}\n"                                    \
                 : acc                                                                                                \
                 : "l"(a), "l"(b), "r"(accumulate))
// D += A B for a 64xN D, A from registers, B in shared memory (always accumulates; the
// predicate is set from a register because PTX wants one). 16-bit B is read N-major
// (the last immediate, 1); 8-bit B can only be K-major.
#define FA_SM90_WGMMA_RS(shape, type, immediates, regs, acc, a_ops, b_op, flag_op)                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape ".f32." type \
                 "." type " " regs ", " a_ops ", " b_op ", p, " immediates ";\n}\n"                                   \
                 : acc                                                                                                \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

// One instruction's K: 16 elements of 16-bit types, 32 of e4m3 (32 bytes either way).
template <class T>
inline constexpr int fa_sm90_k_step = fa_same_type<T, fa_e4m3>::value ? 32 : 16;

template <class T, int n>
FAJIT_DEVICE void fa_sm90_wgmma_ss(float (&d)[n / 2], unsigned long long a, unsigned long long b, int accumulate) {
    static_assert(n == 64 || n == 128, "wgmma wrappers exist for N = 64 and 128");
    constexpr bool bf16 = fa_same_type<T, fa_bf16>::value, e4m3 = fa_same_type<T, fa_e4m3>::value;
    if constexpr (n == 64 && e4m3)
        FA_SM90_WGMMA_SS("m64n64k32", "e4m3", "1, 1", FA_SM90_REGS32, FA_SM90_ACC32(d), "%32", "%33", "%34");
    else if constexpr (n == 64 && bf16)
        FA_SM90_WGMMA_SS("m64n64k16", "bf16", "1, 1, 0, 0", FA_SM90_REGS32, FA_SM90_ACC32(d), "%32", "%33", "%34");
    else if constexpr (n == 64)
        FA_SM90_WGMMA_SS("m64n64k16", "f16", "1, 1, 0, 0", FA_SM90_REGS32, FA_SM90_ACC32(d), "%32", "%33", "%34");
    else if constexpr (e4m3)
        FA_SM90_WGMMA_SS("m64n128k32", "e4m3", "1, 1", FA_SM90_REGS64, FA_SM90_ACC64(d), "%64", "%65", "%66");
    else if constexpr (bf16)
        FA_SM90_WGMMA_SS("m64n128k16", "bf16", "1, 1, 0, 0", FA_SM90_REGS64, FA_SM90_ACC64(d), "%64", "%65", "%66");
    else
        FA_SM90_WGMMA_SS("m64n128k16", "f16", "1, 1, 0, 0", FA_SM90_REGS64, FA_SM90_ACC64(d), "%64", "%65", "%66");
}

// A is the warp's 16 rows of P in the mma.sync A layout of the type: m16n8k16's for
// 16-bit types (fa_m16n8_pack), m16n8k32's for e4m3 (fa_sm90_pack_e4m3).
template <class T, int n>
FAJIT_DEVICE void fa_sm90_wgmma_rs(float (&d)[n / 2], const unsigned int (&a)[4], unsigned long long b) {
    static_assert(n == 64 || n == 128, "wgmma wrappers exist for N = 64 and 128");
    constexpr bool bf16 = fa_same_type<T, fa_bf16>::value, e4m3 = fa_same_type<T, fa_e4m3>::value;
    if constexpr (n == 64 && e4m3)
        FA_SM90_WGMMA_RS("m64n64k32", "e4m3", "1, 1", FA_SM90_REGS32, FA_SM90_ACC32(d), "{%32, %33, %34, %35}", "%36",
                         "%37");
    else if constexpr (n == 64 && bf16)
        FA_SM90_WGMMA_RS("m64n64k16", "bf16", "1, 1, 1", FA_SM90_REGS32, FA_SM90_ACC32(d), "{%32, %33, %34, %35}",
                         "%36", "%37");
    else if constexpr (n == 64)
        FA_SM90_WGMMA_RS("m64n64k16", "f16", "1, 1, 1", FA_SM90_REGS32, FA_SM90_ACC32(d), "{%32, %33, %34, %35}", "%36",
                         "%37");
    else if constexpr (e4m3)
        FA_SM90_WGMMA_RS("m64n128k32", "e4m3", "1, 1", FA_SM90_REGS64, FA_SM90_ACC64(d), "{%64, %65, %66, %67}", "%68",
                         "%69");
    else if constexpr (bf16)
        FA_SM90_WGMMA_RS("m64n128k16", "bf16", "1, 1, 1", FA_SM90_REGS64, FA_SM90_ACC64(d), "{%64, %65, %66, %67}",
                         "%68", "%69");
    else
        FA_SM90_WGMMA_RS("m64n128k16", "f16", "1, 1, 1", FA_SM90_REGS64, FA_SM90_ACC64(d), "{%64, %65, %66, %67}",
                         "%68", "%69");
}

// ---- e4m3 operands ------------------------------------------------------------------
// P as the A operand of an e4m3 wgmma. The m16n8k32 A fragment gives a lane (g = lane/4,
// t = lane%4) the four bytes of K positions 4t..4t+3 (register 0: row g, 1: row g+8)
// and 16+4t.. (registers 2 and 3), while the m16n8 accumulators of S give it keys
// 2t, 2t+1 of each 8-key tile. Rather than moving bytes between lanes, each lane packs
// its own: 32-key slice s's registers 0 and 1 hold key tiles 4s and 4s+1, registers 2
// and 3 tiles 4s+2 and 4s+3, so K position 4t+i of the slice's first half is key
// 2t + i%2 + 8(i/2), and the same 16 further in the second half. V's transposed rows are
// written in that key order (fa_wgmma_transpose_values), so the product sums the same
// pairs.

// Four floats rounded to e4m3 (saturating to +-448) in one register, a in the low byte.
FAJIT_DEVICE unsigned int fa_sm90_pack4_e4m3(float a, float b, float c, float d) {
    unsigned short low, high;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(low) : "f"(b), "f"(a));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(high) : "f"(d), "f"(c));
    return static_cast<unsigned int>(low) | static_cast<unsigned int>(high) << 16;
}

template <int key_tiles>
FAJIT_DEVICE void fa_sm90_pack_e4m3(const float (&p)[4 * key_tiles], unsigned int (&probability)[key_tiles / 4][4]) {
#pragma unroll
    for (int s = 0; s < key_tiles / 4; ++s) {
        const float* first = p + 16 * s;  // tiles 4s, 4s+1: rows g (elements 0, 1) and g+8 (2, 3)
        const float* second = first + 8;  // tiles 4s+2, 4s+3
        probability[s][0] = fa_sm90_pack4_e4m3(first[0], first[1], first[4], first[5]);
        probability[s][1] = fa_sm90_pack4_e4m3(first[2], first[3], first[6], first[7]);
        probability[s][2] = fa_sm90_pack4_e4m3(second[0], second[1], second[4], second[5]);
        probability[s][3] = fa_sm90_pack4_e4m3(second[2], second[3], second[6], second[7]);
    }
}

// Four 8x8 matrices of 16-bit elements stored from registers, the inverse of
// fa_nv_ldmatrix_x4: lanes 8i..8i+7 give the row addresses of matrix i, and lane l's
// register i is row l/4, columns 2(l%4) and 2(l%4)+1 (low half first) of matrix i.
FAJIT_DEVICE void fa_sm90_stmatrix_x4(unsigned int shared, const unsigned int (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(shared), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}
#endif
