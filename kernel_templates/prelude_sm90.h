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
// overwrites D.
#define FA_SM90_WGMMA_SS(shape, type, regs, acc, a_op, b_op, flag_op)                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape ".f32." type \
                 "." type " " regs ", " a_op ", " b_op ", p, 1, 1, 0, 0;\n}\n"                                        \
                 : acc                                                                                                \
                 : "l"(a), "l"(b), "r"(accumulate))
// D += A B for a 64xN D, A from registers, B N-major in shared memory (always
// accumulates; the predicate is set from a register because PTX wants one).
#define FA_SM90_WGMMA_RS(shape, type, regs, acc, a_ops, b_op, flag_op)                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " flag_op ", 0;\nwgmma.mma_async.sync.aligned." shape ".f32." type \
                 "." type " " regs ", " a_ops ", " b_op ", p, 1, 1, 1;\n}\n"                                          \
                 : acc                                                                                                \
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
