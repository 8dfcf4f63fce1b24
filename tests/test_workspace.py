"""The C core's workspace ledger (csrc/common.c gb_ws_*, glmbench.workspace_bytes): every op gives
back the scratch it takes, the peak sees a big op's panels and buffers, reset_workspace_peak starts
a new window, the counters stay exact when OpenMP threads and Python threads allocate at once, and
the measure "mem" record carries the peak."""
import threading

import numpy as np
import pytest

import glmbench
from glmbench import measure as M
from glmbench.core import reference as ref
from glmbench.core.attention import MLA_STRATEGIES, gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.models.model import Model
from glmbench.core.quant import quantize

from test_measure import tiny_glm, tiny_qwen


@pytest.fixture
def restore_threads():
    n = glmbench.get_num_threads()
    yield
    glmbench.set_num_threads(n)


def _ledger():
    return glmbench.workspace_bytes()[0], glmbench.workspace_blocks()


def _mla_case(rng, T=1, P=300, H=20, Dn=192, Dr=64, Dv=256, R=512):
    """GLM-4.7-Flash attention shapes over a P + T token latent cache."""
    c = KVCache.mla(1, P + T, R, Dr, kv="bf16")
    c.append(0, rng.standard_normal((P + T, R)).astype(np.float32), rng.standard_normal((P + T, Dr)).astype(np.float32))
    qn = rng.standard_normal((T, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((T, H, Dr)).astype(np.float32)
    w = ref.to_bf16((rng.standard_normal((H * (Dn + Dv), R)) / np.sqrt(R)).astype(np.float32))
    return (qn, qr, c, 0, w), dict(v_head_dim=Dv)


def _gqa_case(rng, T=8, P=600, Hq=8, Hkv=2, Dh=64):
    c = KVCache.gqa(1, P + T, Hkv, Dh, kv="bf16")
    kv = rng.standard_normal((2, P + T, Hkv, Dh)).astype(np.float32)
    c.append(0, kv[0], kv[1])
    return (rng.standard_normal((T, Hq, Dh)).astype(np.float32), c, 0), {}


def _scratch_ops(rng):
    """(name, fn, args, kwargs) of ops that each take C-kernel scratch."""
    T, D, F, E = 12, 256, 320, 8
    x = rng.standard_normal((T, D)).astype(np.float32)
    wbf = ref.to_bf16((rng.standard_normal((F, D)) / 16).astype(np.float32))
    wdn = ref.to_bf16((rng.standard_normal((D, F)) / 16).astype(np.float32))
    eg = ref.to_bf16((rng.standard_normal((E, F, D)) / 16).astype(np.float32))
    ed = ref.to_bf16((rng.standard_normal((E, D, F)) / 16).astype(np.float32))
    wr = rng.standard_normal((E, D)).astype(np.float32)
    idx, tw = glmbench.moe_route(x, wr, top_k=2)
    xp = rng.standard_normal((256, D)).astype(np.float32)
    q = rng.standard_normal((T, 4, 128)).astype(np.float32)
    wq8 = quantize((rng.standard_normal((F, D)) / 16).astype(np.float32), "q8_0")
    ops = [
        ("rope", glmbench.rope, (q, np.arange(T, dtype=np.int64)), dict(theta=1e6, rot_dim=64)),
        ("linear_bf16_panel", glmbench.linear, (xp, wbf), {}),
        ("linear_q8_0", glmbench.linear, (x, wq8), {}),
        ("swiglu_decode", glmbench.swiglu, (x[:1], wbf, wbf, wdn), {}),
        ("swiglu_prefill", glmbench.swiglu, (xp, wbf, wbf, wdn), {}),
        ("moe_route", glmbench.moe_route, (xp, wr), dict(top_k=3, n_group=4, topk_group=2)),
        ("moe_experts", glmbench.moe_experts, (x, idx, tw, eg, eg, ed), {}),
        ("gqa_decode", gqa_attention, *_gqa_case(rng, T=1)),
        ("gqa_prefill", gqa_attention, *_gqa_case(rng, T=8)),
    ]
    for s in MLA_STRATEGIES:
        for phase, T_, P_ in (("decode", 1, 300), ("prefill", 6, 40)):
            args, kw = _mla_case(rng, T=T_, P=P_)
            ops.append((f"mla_{s}_{phase}", mla_attention, args, dict(kw, strategy=s)))
    return ops


def test_every_op_gives_back_its_scratch(rng):
    start = _ledger()
    for name, fn, args, kw in _scratch_ops(rng):
        glmbench.reset_workspace_peak()
        fn(*args, **kw)
        cur, peak = glmbench.workspace_bytes()
        assert (cur, glmbench.workspace_blocks()) == start, name
        assert peak > cur, f"{name} took no workspace (peak {peak})"
    # the cache's own blocks are not workspace; its synthetic fill's row buffers are, and go back
    c = KVCache.gqa(2, 256, 4, 64, kv="bf16")
    glmbench.reset_workspace_peak()
    c.fill_synthetic(200)
    assert _ledger() == start and glmbench.workspace_bytes()[1] > 0 and c.bytes_allocated > 0
    del c
    assert _ledger() == start


def test_error_paths_give_back_their_scratch(rng):
    start = _ledger()
    x = rng.standard_normal((300, 64)).astype(np.float32)
    wr = rng.standard_normal((8, 64)).astype(np.float32)
    wr[3, 5] = np.nan  # found in the logits, after the router's buffers are allocated
    glmbench.reset_workspace_peak()
    with pytest.raises(ValueError, match="router_weight"):
        glmbench.moe_route(x, wr, top_k=2)
    assert glmbench.workspace_bytes()[1] > 0
    assert _ledger() == start


def test_peak_sees_a_prefill_panel_and_an_mla_flash_call(rng):
    # 16-bit weights with T > 64 tokens: hgemm packs each 64-row tile (all of K) per thread, bf16
    # pairs beside the activations rounded to bf16 (bf16dot) or widened to float32 (f32fma); the
    # sgemm path converts float32 panels (a weight this small fits one, so all of it)
    from glmbench.core import _core
    T, K, N = 256, 512, 384
    x = rng.standard_normal((T, K)).astype(np.float32)
    w = ref.to_bf16((rng.standard_normal((N, K)) / 16).astype(np.float32))
    kern = _core._linear_hgemm("bf16")
    want = {"bf16dot": T * K * 2 + 64 * K * 2, "f32fma": 64 * K * 4, "sgemm": N * K * 4, "ref": T * K * 4}[kern]
    glmbench.reset_workspace_peak()
    glmbench.linear(x, w)
    assert glmbench.workspace_bytes()[1] >= want
    # MLA flash decode, GLM-4.7-Flash shapes: each head's latent query and output (R floats) at least
    args, kw = _mla_case(rng, T=1)
    glmbench.reset_workspace_peak()
    mla_attention(*args, strategy="flash", **kw)
    cur, peak = glmbench.workspace_bytes()
    assert cur == 0 and peak >= 2 * 20 * 512 * 4


def test_reset_starts_a_new_peak_window(rng):
    big_args, big_kw = _mla_case(rng, T=6, P=200)
    mla_attention(*big_args, strategy="flash", **big_kw)
    big = glmbench.workspace_bytes()[1]
    assert big > 0
    glmbench.reset_workspace_peak()
    assert glmbench.workspace_bytes() == (0, 0)
    # rms_norm takes no scratch: the peak stays where the reset put it
    glmbench.rms_norm(rng.standard_normal((4, 64)).astype(np.float32), np.ones(64, np.float32))
    assert glmbench.workspace_bytes() == (0, 0)
    # a smaller op after the reset reports its own peak, not the big one's
    q = rng.standard_normal((2, 4, 64)).astype(np.float32)
    glmbench.rope(q, np.arange(2, dtype=np.int64), theta=1e4, rot_dim=32)
    small = glmbench.workspace_bytes()[1]
    assert 0 < small < big
    # without a reset the peak only grows
    mla_attention(*big_args, strategy="flash", **big_kw)
    assert glmbench.workspace_bytes()[1] == big


@pytest.mark.slow
def test_counters_exact_with_openmp_threads(rng, restore_threads):
    glmbench.set_num_threads(2)
    start = _ledger()
    ops = _scratch_ops(rng)
    c = KVCache.mla(4, 512, 64, 16, kv="f16")
    for _ in range(20):  # per-thread buffers inside parallel regions, allocated and freed at once
        for name, fn, args, kw in ops:
            fn(*args, **kw)
        c.fill_synthetic(500)
        assert _ledger() == start


def test_counters_exact_with_concurrent_callers(rng, restore_threads):
    """Two Python threads in the C core at once (the GIL is released around each op), each op also
    running OpenMP threads: current and blocks come back exactly, and the peak of the concurrent
    window lies between one call's peak and two calls' peaks."""
    glmbench.set_num_threads(2)
    start = _ledger()
    args, kw = _gqa_case(rng, T=8, P=2000)
    errors = []

    def run(n):
        try:
            for _ in range(n):
                gqa_attention(*args, **kw)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    t = threading.Thread(target=run, args=(1,))  # one call's peak, on a thread like the workers'
    glmbench.reset_workspace_peak()
    t.start()
    t.join()
    one = glmbench.workspace_bytes()[1]
    assert one > 0
    glmbench.reset_workspace_peak()
    workers = [threading.Thread(target=run, args=(40,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert _ledger() == start
    assert one <= glmbench.workspace_bytes()[1] <= 2 * one


def test_mem_record_carries_the_workspace_peak():
    start = _ledger()
    cfg = tiny_qwen()
    depth, n_prompt = 24, 6
    rec = M.measure(cfg, depths=(depth,), n_prompt=n_prompt, tests=("mem",), weights="bf16", kv="bf16",
                    progress=False)[0]
    assert _ledger() == start
    assert rec["test"] == "mem" and rec["workspace_n_prompt"] == n_prompt
    assert isinstance(rec["workspace_bytes_peak"], int) and rec["workspace_bytes_peak"] > 0
    assert rec["other_rss_bytes"] >= 0
    # a dense model's scratch does not depend on the token values: the record is the larger of one
    # decode step's and one n_prompt prefill's peak at that depth, as measured here by hand
    m = Model(cfg, weights="bf16", kv="bf16", max_context=depth + n_prompt + 1)
    peaks = []
    for toks in ([1], list(range(n_prompt))):
        m.fill_synthetic(depth)
        glmbench.reset_workspace_peak()
        if len(toks) == 1:
            m.decode(toks[0])
        else:
            m.prefill(np.array(toks), logits="last")
        peaks.append(glmbench.workspace_bytes()[1])
    assert rec["workspace_bytes_peak"] == max(peaks)
    # an MoE (MLA) model, sampled, has it too
    rec = M.measure(tiny_glm(), depths=(depth,), n_prompt=n_prompt, tests=("mem",), layers=2, progress=False)[0]
    assert rec["sampled"] is True and rec["workspace_bytes_peak"] > 0


LEDGER_DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <omp.h>
#include "common.h"
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); return 1; } } while (0)
int main(void) {
    CHECK(gb_ws_current() == 0 && gb_ws_peak() == 0 && gb_ws_blocks() == 0);
    gb_ws_free(NULL);
    CHECK(gb_ws_blocks() == 0);
    size_t sizes[] = {0, 1, 3, 63, 64, 65, 1000, 4096, 1 << 20};
    void *m[9], *a[9], *a4k[9];
    size_t total = 0;
    for (int i = 0; i < 9; i++) {
        m[i] = gb_ws_malloc(sizes[i]);
        a[i] = gb_ws_aligned_alloc(64, sizes[i]);
        a4k[i] = gb_ws_aligned_alloc(4096, sizes[i]);
        CHECK(m[i] && a[i] && a4k[i]);
        CHECK((uintptr_t)m[i] % _Alignof(max_align_t) == 0);
        CHECK((uintptr_t)a[i] % 64 == 0 && (uintptr_t)a4k[i] % 4096 == 0);
        memset(m[i], 0xab, sizes[i]);
        memset(a[i], 0xcd, sizes[i]);
        memset(a4k[i], 0xef, sizes[i]);
        total += 3 * sizes[i];
    }
    CHECK(gb_ws_current() == total && gb_ws_peak() == total && gb_ws_blocks() == 27);
    unsigned char *z = gb_ws_calloc(1000, 3);
    CHECK(z && (uintptr_t)z % _Alignof(max_align_t) == 0);
    for (int i = 0; i < 3000; i++) CHECK(z[i] == 0);
    CHECK(gb_ws_current() == total + 3000 && gb_ws_blocks() == 28);
    gb_ws_free(z);
    for (int i = 0; i < 9; i++) {
        gb_ws_free(m[i]);
        gb_ws_free(a[i]);
        gb_ws_free(a4k[i]);
    }
    CHECK(gb_ws_current() == 0 && gb_ws_blocks() == 0 && gb_ws_peak() == total + 3000);
    CHECK(gb_ws_aligned_alloc(48, 10) == NULL && gb_ws_calloc(SIZE_MAX / 2, 4) == NULL);
    CHECK(gb_ws_malloc(SIZE_MAX - 4) == NULL && gb_ws_aligned_alloc(64, SIZE_MAX - 100) == NULL);
    CHECK(gb_ws_blocks() == 0);
    gb_ws_reset_peak();
    CHECK(gb_ws_peak() == 0);
    /* every thread holds one block of its own size at once, then frees it: the peak is the sum */
    size_t expect = 0;
    int nth = 0;
#pragma omp parallel num_threads(4) reduction(+ : expect)
    {
#pragma omp single
        nth = omp_get_num_threads();
        size_t mine = 1000 * (size_t)(omp_get_thread_num() + 1);
        void *p = gb_ws_aligned_alloc(64, mine);
#pragma omp barrier
        gb_ws_free(p);
        expect += mine;
    }
    CHECK(gb_ws_peak() == expect && gb_ws_current() == 0);
    gb_ws_reset_peak();
#pragma omp parallel num_threads(4)
    for (int i = 0; i < 100000; i++) gb_ws_free(gb_ws_malloc((size_t)(i % 977)));
    CHECK(gb_ws_current() == 0 && gb_ws_blocks() == 0 && gb_ws_peak() <= 4 * 976);
    printf("ok %d threads\n", nth);
    return 0;
}
"""


def test_ledger_allocator_in_c(tmp_path):
    """gb_ws_* compiled alone: alignment of every kind of block, exact counters, calloc zeroing,
    overflow and bad alignments refused, and an atomic peak across OpenMP threads."""
    import os
    import shutil
    import subprocess
    import sysconfig
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC").split()[0]
    if not shutil.which(cc):
        pytest.skip(f"no C compiler ({cc})")
    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")
    (tmp_path / "driver.c").write_text(LEDGER_DRIVER)
    exe = tmp_path / "driver"
    subprocess.run([cc, "-std=c11", "-fopenmp", "-O1", "-Wall", "-I", csrc, str(tmp_path / "driver.c"),
                    os.path.join(csrc, "common.c"), "-o", str(exe)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, env=dict(os.environ, OMP_DYNAMIC="false"))
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stdout + out.stderr


KEEP_DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "common.h"
#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); return 1; } } while (0)
int main(void) {
    const size_t MB = (size_t)1 << 20;
    gb_ws_trim();
    CHECK(gb_ws_kept() == 0);
    unsigned char *a = gb_ws_malloc(3 * MB);
    CHECK(a && gb_ws_current() == 3 * MB && gb_ws_blocks() == 1);
    memset(a, 0xAB, 3 * MB);
    gb_ws_free(a);
    CHECK(gb_ws_current() == 0 && gb_ws_blocks() == 0 && gb_ws_kept() == 3 * MB);
    /* a request it fits (cap <= 2x the request) gets the same block, counted at the requested size */
    unsigned char *b = gb_ws_calloc(2 * MB, 1);
    CHECK(b == a && gb_ws_current() == 2 * MB && gb_ws_kept() == 0);
    for (size_t i = 0; i < 2 * MB; i += 4093) CHECK(b[i] == 0);   /* calloc of a kept block: zeroed */
    gb_ws_free(b);
    CHECK(gb_ws_kept() == 3 * MB);
    /* too small for it (3 MB > 2 x 1.2 MB) or too large: a fresh block */
    void *c = gb_ws_malloc(MB + MB / 5), *d = gb_ws_malloc(4 * MB);
    CHECK(c && d && c != (void *)a && d != (void *)a && gb_ws_kept() == 3 * MB);
    gb_ws_free(c);
    gb_ws_free(d);
    CHECK(gb_ws_current() == 0 && gb_ws_kept() == 3 * MB + MB + MB / 5 + 4 * MB);
    /* small blocks are never kept */
    void *s = gb_ws_malloc(1000);
    CHECK(s);
    gb_ws_free(s);
    CHECK(gb_ws_kept() == 3 * MB + MB + MB / 5 + 4 * MB);
    /* aligned blocks are kept as well (align bytes of slack): the 3 MB block serves a 2 MB request
     * at 4096-byte alignment, written to its last byte, and goes back to the list */
    gb_ws_trim();
    unsigned char *al = gb_ws_aligned_alloc(4096, 2 * MB);
    CHECK(al && ((uintptr_t)al % 4096) == 0 && gb_ws_current() == 2 * MB && gb_ws_blocks() == 1);
    memset(al, 0x5A, 2 * MB);
    gb_ws_free(al);
    CHECK(gb_ws_current() == 0 && gb_ws_blocks() == 0 && gb_ws_kept() == 2 * MB + 4096);
    unsigned char *al2 = gb_ws_aligned_alloc(64, 2 * MB);
    CHECK(al2 && ((uintptr_t)al2 % 64) == 0 && gb_ws_kept() == 0 && gb_ws_current() == 2 * MB);
    CHECK(al2 <= al && al - al2 < 4096); /* the same block, handed back (its own padding) */
    memset(al2, 0x11, 2 * MB);
    gb_ws_free(al2);
    unsigned char *m2 = gb_ws_malloc(2 * MB); /* a kept aligned block serves a plain request too */
    CHECK(m2 && gb_ws_kept() == 0 && m2 <= al2 && al2 - m2 < 64);
    memset(m2, 0x22, 2 * MB);
    gb_ws_free(m2);
    CHECK(gb_ws_kept() == 2 * MB + 4096);
    /* never more than 256 MiB kept: the largest kept go first */
    void *big[3];
    for (int i = 0; i < 3; i++) big[i] = gb_ws_malloc(100 * MB);
    for (int i = 0; i < 3; i++) gb_ws_free(big[i]);
    CHECK(gb_ws_kept() <= 256 * MB);
    gb_ws_trim();
    CHECK(gb_ws_kept() == 0 && gb_ws_current() == 0 && gb_ws_blocks() == 0);
    printf("ok\n");
    return 0;
}
"""


def test_large_blocks_kept_and_reused_in_c(tmp_path):
    """Freed blocks of 1 MiB or more are kept and handed to the next request they fit (the same
    block, zeroed for calloc), the counters stay exact (kept blocks are not workspace), small
    blocks are not kept, aligned ones are (and serve both kinds of request), at most 256 MiB is kept, and gb_ws_trim gives it all back."""
    import os
    import shutil
    import subprocess
    import sysconfig
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC").split()[0]
    if not shutil.which(cc):
        pytest.skip(f"no C compiler ({cc})")
    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")
    (tmp_path / "keep.c").write_text(KEEP_DRIVER)
    exe = tmp_path / "keep"
    subprocess.run([cc, "-std=c11", "-fopenmp", "-O1", "-Wall", "-I", csrc, str(tmp_path / "keep.c"),
                    os.path.join(csrc, "common.c"), "-o", str(exe)], check=True, capture_output=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stdout + out.stderr
