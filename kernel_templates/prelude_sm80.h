// fa-jit prelude, sm_80 part: the mma.sync and ldmatrix wrappers of the mma-sm80 family.
#if FAJIT_NVIDIA
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
#endif
