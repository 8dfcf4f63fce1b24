/* bench.h: this machine's ceilings, measured in C so the numbers do not depend on NumPy. */
#ifndef GLMBENCH_BENCH_H
#define GLMBENCH_BENCH_H
#include <stdint.h>

/* STREAM-like triad a[i] = b[i] + s * c[i] over three float32 arrays of n elements each, OpenMP
 * over i (first-touch initialised by the same threads). Best of `reps` runs. Bytes counted as
 * STREAM does: 12 per element (read b, read c, write a; write-allocate traffic not counted).
 * *read_gbs gets a read-only sum over b and c (8 bytes per element, AVX-512 loads into independent
 * accumulators where compiled for it), the pattern a decode GEMV sees. */
int gb_bench_bandwidth(int64_t n, int reps, double *triad_gbs, double *read_gbs);

/* gb_bench_bandwidth's triad and read-only passes on caller-owned arrays (a written, b and c
 * read; n elements each), best of `reps` each: a probe cheap enough to run between decode steps,
 * the arrays allocated and first touched once by the caller. */
int gb_bench_probe(float *a, const float *b, const float *c, int64_t n, int reps, double *triad_gbs,
                   double *read_gbs);

/* A read-only pass over one caller-owned float32 array of n elements (its two halves read as two
 * streams by every OpenMP thread, as read_pass does: the access of a decode GEMV over its weights),
 * best of `reps`: the stability probe of a measurement, over a buffer several times the last-level
 * cache so that it reads DRAM. */
int gb_bench_read(const float *b, int64_t n, int reps, double *read_gbs);

/* float32 FMA peak: every OpenMP thread runs `iters` iterations of a register-resident loop of
 * independent vector FMA chains (AVX-512: 16 zmm accumulators; AVX2+FMA: 12 ymm; else scalar).
 * Best of `reps`; *gflops counts 2 FLOPs per lane per FMA. *vector_bits gets 512, 256 or 32. */
int gb_bench_fma(int64_t iters, int reps, double *gflops, int *vector_bits);

/* int8 dot-product peak on every thread (GOP/s, a multiply-add = 2 ops): *kind 2 = AVX-512 VNNI
 * vpdpbusd (16 chains x 64 multiply-adds per iteration), 1 = AVX2 vpmaddubsw + vpmaddwd + vpaddd
 * (12 chains x 32 per iteration). GB_EVALUE where neither is compiled in. */
int gb_bench_int8(int64_t iters, int reps, double *gops, int *kind);
/* the VNNI ceiling with `scales` (0..8) vpmulld per 16 vpdpbusd (GOP/s of the vpdpbusd work only);
 * GB_EVALUE without AVX-512 VNNI or with scales out of range */
int gb_bench_int8_scaled(int64_t iters, int reps, int scales, double *gops);
/* gb_bench_int8 on VNNI builds (vpdpbusd); GB_EVALUE on others */
int gb_bench_vnni(int64_t iters, int reps, double *gops);

#endif
