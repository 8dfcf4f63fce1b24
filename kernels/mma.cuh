/* mma.cuh: one warp-level tensor-core instruction, mma.sync m16n8k16 (bf16 in, fp32 accumulate;
 * sm_80 and later), and the fragment layout its callers rely on (PTX ISA, "Matrix Fragments for
 * mma.m16n8k16 with floating point type"): with g = lane / 4 and c = lane % 4,
 *   A (16 x 16, row-major)  a0 = A[g][2c..2c+1]   a1 = A[g+8][2c..]   a2 = A[g][2c+8..]   a3 = A[g+8][2c+8..]
 *   B (16 x 8, k x n)       b0 = B[2c..2c+1][g]   b1 = B[2c+8..2c+9][g]
 *   C (16 x 8, fp32)        c0, c1 = C[g][2c..2c+1]   c2, c3 = C[g+8][2c..2c+1]
 * Each a/b register holds two bf16, the lower k in the low half. */
#pragma once
#include <stdint.h>

__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two bf16 from two addresses into one register (low half first). */
__device__ __forceinline__ uint32_t pack2(const uint16_t *lo, const uint16_t *hi) {
    return (uint32_t)*lo | ((uint32_t)*hi << 16);
}
