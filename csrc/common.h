/* common.h: status codes, the error message buffer and small numeric helpers shared by every
 * op family in csrc/. Pure C: no Python.h here (only module.c and bind_*.c see Python).
 *
 * Convention: every C-core entry point returns an int status (GB_OK on success). On failure it
 * calls gb_error(status, fmt, ...) which records a message in a thread-local buffer; the binding
 * turns (status, message) into a Python exception. Library code never exit()s or abort()s.
 */
#ifndef GLMBENCH_COMMON_H
#define GLMBENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

enum {
    GB_OK = 0,
    GB_EVALUE = 1,   /* bad value or shape: ValueError */
    GB_ETYPE = 2,    /* bad dtype: TypeError */
    GB_ENOMEM = 3,   /* allocation failed: MemoryError */
    GB_EFULL = 4,    /* a cache or buffer is full: ValueError naming the capacity */
    GB_EINTERNAL = 5 /* a bug: RuntimeError */
};

/* Record an error message (printf-style) and return `status` so callers can write
 * `return gb_error(GB_EVALUE, "...", ...);`. */
int gb_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message recorded on this thread. */
const char *gb_last_error(void);

/* Weight storage formats understood by the linear/MoE kernels. Values are part of the Python
 * contract (glmbench/ops.py maps names to them). */
enum {
    GB_F32 = 0,
    GB_F16 = 1,
    GB_BF16 = 2,  /* stored as uint16, the high half of an IEEE float32 */
    GB_Q8_0 = 8,  /* ggml block formats (csrc/quant.c) */
    GB_Q4_0 = 9
};

static inline float gb_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}

/* Round-to-nearest-even, as torch and ggml do; NaN stays NaN. */
static inline uint16_t gb_f32_to_bf16(float f) {
    union { uint32_t u; float f; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)((v.u + rounding) >> 16);
}

float gb_f16_to_f32(uint16_t h);
uint16_t gb_f32_to_f16(float f);

#endif
