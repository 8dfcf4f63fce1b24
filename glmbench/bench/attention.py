"""Attention cases for the kernels benchmark (`python -m glmbench.bench kernels`; only these:
`python -m glmbench.bench kernels --only attn`).

One layer's attention at the shapes that decide decode speed at depth:
  GLM-4.7-Flash MLA (20 heads, latent 512 + rope 64, nope 192, v 256), bf16 latent cache,
      strategies absorbed / flash / naive, decode (T=1) at depths 4K and 32K, prefill chunk of 512;
  Qwen3-32B GQA (64 query / 8 KV heads of 128), bf16 cache, same depths and chunk;
  Gemma-3-27B sliding-window GQA (32 query / 16 KV heads of 128, window 1024, the cache layer a
      ring: KVCache.gqa(windows=)), bf16, decode at 4K and 32K, beside the same shape's global
      (full-attention) layer at the same depths: the windowed decode declares (and must read) only
      the window's 1024 rows, so its time stays flat with depth while the global layer's grows;
      and a prefill chunk of 512 at 4K and 32K (each query its own 1024 keys, the ring holding
      1024 + 512 rows), beside the global layer's chunk at 4K.
The cache is filled with KVCache.fill_synthetic (attention's cost does not depend on the values).

Declared work (the minimum: each cached row read once, no expanded K/V written):
  GQA      flops 2 Hq (Dh + Dv) keys;        bytes = the cache rows read (bf16) + q and out
  SWA      GQA's with keys = min(d + 1, window) for a decode step and sum of min(p + 1, window) over
           the chunk's query positions p for a prefill; bytes = the rows those keys span
  absorbed flops 2 H (R + Dr + R) keys + 2 T H (Dn + Dv) R for folding kv_b into q and out;
           bytes = latent rows read (bf16) + kv_b (float32, what the kernel reads)
  naive    flops absorbed's attention on per-head K/V: 2 H (Dn + Dr + Dv) keys + 2 L H (Dn + Dv) R
           to decompress every cached latent
where keys = T d + T (T + 1) / 2 for T new tokens on d cached ones (causal). GQA decode is declared
memory-bound; absorbed/flash MLA decode (20 heads share each row), naive MLA and every prefill
(each cached row meets T x heads queries) compute-bound.

The NumPy twins do the same work the way NumPy must: the bf16 cache is converted to float32 on every
call (NumPy has no bf16 matmul), then matmul / softmax / matmul per KV head (GQA) or over the latent
(absorbed MLA) or on kv_b-decompressed K/V (naive MLA); a prefill twin goes one KV head at a time
(its scores [T x group, keys] stay ~100 MB) with the causal (and window) mask. The naive twin at 32K is skipped (its
expanded K/V would be 1.2 GB).
"""
from __future__ import annotations

import numpy as np

from glmbench.bench import _Cycle  # each timed call touches other memory
from glmbench.bench.case import Case
from glmbench.core import _core
from glmbench.core.attention import gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.measure.machine import _l3_bytes

GLM = dict(H=20, Dn=192, Dr=64, Dv=256, R=512)
QWEN = dict(Hq=64, Hkv=8, Dh=128)


def _keys(T: int, d: int) -> float:
    return float(T * d + T * (T + 1) // 2)


def _bf16_rows(cache: KVCache, layer: int = 0):
    """The cache's stored values as bfloat16 bits (uint16), what a NumPy twin gets to start from."""
    a, b = cache.read(layer)
    to = lambda x: (np.ascontiguousarray(x).view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731 (exact: values are bf16)
    return to(a), to(b)


def _f32(u16: np.ndarray) -> np.ndarray:
    return (u16.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _np_softmax_rows(s, mask=None):
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


def _causal(T: int, L: int):
    return np.arange(L)[None, :] <= (L - T + np.arange(T))[:, None]    # [T, L]


def _rtol(bf16_arith: bool) -> float:
    """Agreement with the float32 NumPy twin: 1e-3 of the output scale for float32 arithmetic;
    1e-2 where the kernel multiplies in bf16 (bf16 cache, AVX512_BF16: absorbed/flash MLA, GQA
    decode with 8 query heads per KV head; query and p rounded to bf16, see docs/API.md)."""
    return 1e-2 if bf16_arith and _core._attn_bf16() else 1e-3


# ---- GQA ------------------------------------------------------------------------------------

def _gqa_case(Case, d: int, T: int, rng):
    Hq, Hkv, Dh = QWEN["Hq"], QWEN["Hkv"], QWEN["Dh"]
    L = d + T
    cache = KVCache.gqa(1, L, Hkv, Dh, kv="bf16")
    cache.fill_synthetic(L, seed=1)
    k16, v16 = _bf16_rows(cache)
    q = rng.standard_normal((T, Hq, Dh), dtype=np.float32)
    G, scale = Hq // Hkv, Dh ** -0.5
    mask = _causal(T, L) if T > 1 else None

    def np_run():
        k = _f32(k16).transpose(1, 2, 0)                          # [Hkv, Dh, L]
        v = _f32(v16).transpose(1, 0, 2)                          # [Hkv, L, Dv]
        qq = q.reshape(T, Hkv, G, Dh).transpose(1, 0, 2, 3).reshape(Hkv, T * G, Dh)
        s = (qq * np.float32(scale)) @ k                          # [Hkv, T*G, L]
        if mask is not None:
            s = s.reshape(Hkv, T, G, L)
            p = _np_softmax_rows(s, mask[None, :, None, :]).reshape(Hkv, T * G, L)
        else:
            p = _np_softmax_rows(s)
        o = (p @ v).reshape(Hkv, T, G, Dh).transpose(1, 0, 2, 3)  # [T, Hkv, G, Dv]
        return o.reshape(T, Hq, Dh)

    keys = _keys(T, d)
    kind = "decode" if T == 1 else f"prefill T={T}"
    tag = ("attention", f"gqa_decode_{d // 1024}k") if T == 1 else ("attention", "gqa_prefill")
    return Case(f"attn gqa qwen3-32b {kind} d={d} bf16",
                run=lambda: gqa_attention(q, cache, 0), numpy_run=np_run, rtol=_rtol(T == 1),
                flops=2.0 * Hq * 2 * Dh * keys,
                bytes=float(L * Hkv * 2 * Dh * 2 + 2 * q.nbytes), bound="memory" if T == 1 else "compute", tags=tag)


# ---- sliding-window GQA (Gemma 3) -------------------------------------------------------------

GEMMA = dict(Hq=32, Hkv=16, Dh=128, window=1024)


def _swa_case(Case, d: int, rng, windowed: bool):
    """One decode step of a Gemma-3-27B layer at depth d: a windowed (local) layer, whose cache is
    a ring holding the window, or a global one over all d + 1 tokens. A window of one layer is
    8 MiB, cache-resident if timed alone; in the model a step reads it between 61 other layers'
    caches and weights, from DRAM. So the cache has enough layers to total >= 4x the L3 (at most
    the model's 52 windowed layers) and the timed calls go round them (the first call, checked
    against the NumPy twin, is layer 0)."""
    Hq, Hkv, Dh, W = GEMMA["Hq"], GEMMA["Hkv"], GEMMA["Dh"], GEMMA["window"]
    L = d + 1
    read = min(L, W) if windowed else L
    n_layers = int(min(52, max(1, -(-4 * _l3_bytes() // (read * Hkv * 2 * Dh * 2)))))
    cache = KVCache.gqa(n_layers, L, Hkv, Dh, kv="bf16", windows=[W] * n_layers if windowed else None)
    cache.fill_synthetic(L, seed=3)
    k16, v16 = _bf16_rows(cache)           # what the step reads: the window (or everything)
    n = k16.shape[0]
    q = rng.standard_normal((1, Hq, Dh), dtype=np.float32)
    G, scale = Hq // Hkv, np.float32(168 ** -0.5)   # Gemma-3-27B's query_pre_attn_scalar

    def np_run():
        k = _f32(k16).transpose(1, 2, 0)                          # [Hkv, Dh, n]
        v = _f32(v16).transpose(1, 0, 2)                          # [Hkv, n, Dv]
        s = (q.reshape(Hkv, G, Dh) * scale) @ k
        return (_np_softmax_rows(s) @ v).reshape(1, Hq, Dh)

    keys = float(n)
    label = f"swa w={W}" if windowed else "global"
    layers = list(range(n_layers))
    return Case(f"attn gqa gemma-3-27b {label} decode d={d} bf16",
                run=_Cycle(layers, lambda i: gqa_attention(q, cache, i, scale=float(scale))), numpy_run=np_run,
                rtol=_rtol(False),
                flops=2.0 * Hq * 2 * Dh * keys, bytes=float(n * Hkv * 2 * Dh * 2 + 2 * q.nbytes), bound="memory",
                tags=("attention", f"swa_decode_{d // 1024}k" if windowed else f"gemma_global_decode_{d // 1024}k"))


def _window_keys(d: int, T: int, W: int | None) -> float:
    """Keys the T queries at positions d .. d + T - 1 see: min(p + 1, W) each (all p + 1 when W is None)."""
    p = np.arange(d, d + T, dtype=np.int64) + 1
    return float((p if W is None else np.minimum(p, W)).sum())


def _swa_prefill_case(Case, d: int, T: int, rng, windowed: bool, shape=None):
    """A prefill chunk of T tokens on d cached ones in a Gemma-3-27B layer: a windowed (local)
    layer, whose cache is a ring of W + T rows (KVCache.gqa(windows=[W], chunk=T)), each query
    seeing its last W keys; or a global layer, each query every key before it. Compute-bound
    (each row read meets T x group queries), one cache layer (a ring of 1536 rows is 12 MiB: its
    reuse, not DRAM, sets the time). `shape`: GEMMA's fields to override (tests run it small)."""
    g = {**GEMMA, **(shape or {})}
    Hq, Hkv, Dh, W = g["Hq"], g["Hkv"], g["Dh"], g["window"]
    L = d + T
    cache = KVCache.gqa(1, L, Hkv, Dh, kv="bf16", windows=[W] if windowed else None, chunk=T)
    cache.fill_synthetic(L, seed=5)
    # the twin's rows: every key the chunk's queries see (a ring holding W + T - 1 tokens keeps the
    # same values as the timed ring's last rows: fill_synthetic writes token t the same in both)
    span = min(L, W + T - 1) if windowed else L
    if windowed and span < L:
        twin = KVCache.gqa(1, L, Hkv, Dh, kv="bf16", windows=[span], chunk=1)
        twin.fill_synthetic(L, seed=5)
        k16, v16 = _bf16_rows(twin)
    else:
        k16, v16 = _bf16_rows(cache)
    n = k16.shape[0]
    assert n == span, (n, span)
    q = rng.standard_normal((T, Hq, Dh), dtype=np.float32)
    G, scale = Hq // Hkv, np.float32(168 ** -0.5)   # Gemma-3-27B's query_pre_attn_scalar
    qpos = np.arange(d, L)[:, None]                  # [T, 1]
    kpos = np.arange(L - n, L)[None, :]              # [1, n]
    mask = (kpos <= qpos) & ((kpos > qpos - W) if windowed else True)   # [T, n]

    def np_run():
        out = np.empty((T, Hkv, G, Dh), np.float32)
        for h in range(Hkv):
            k = _f32(k16[:, h, :])                                       # [n, Dh]
            v = _f32(v16[:, h, :])
            s = (q[:, h * G:(h + 1) * G, :] * scale) @ k.T               # [T, G, n]
            out[:, h] = _np_softmax_rows(s, mask[:, None, :]) @ v
        return out.reshape(T, Hq, Dh)

    keys = _window_keys(d, T, W if windowed else None)
    label = f"swa w={W}" if windowed else "global"
    tag = f"swa_prefill_{d // 1024}k" if windowed else f"gemma_global_prefill_{d // 1024}k"
    return Case(f"attn gqa gemma-3-27b {label} prefill T={T} d={d} bf16",
                run=lambda: gqa_attention(q, cache, 0, scale=float(scale)), numpy_run=np_run, rtol=_rtol(False),
                flops=2.0 * Hq * 2 * Dh * keys, bytes=float(n * Hkv * 2 * Dh * 2 + 2 * q.nbytes), bound="compute",
                tags=("attention", tag))


# ---- MLA ------------------------------------------------------------------------------------

def _mla_cases(Case, d: int, T: int, strategies, rng, numpy_naive: bool):
    H, Dn, Dr, Dv, R = GLM["H"], GLM["Dn"], GLM["Dr"], GLM["Dv"], GLM["R"]
    L, W = d + T, Dn + Dv
    cache = KVCache.mla(1, L, R, Dr, kv="bf16")
    cache.fill_synthetic(L, seed=2)
    lat16, kr16 = _bf16_rows(cache)
    qn = rng.standard_normal((T, H, Dn), dtype=np.float32)
    qr = rng.standard_normal((T, H, Dr), dtype=np.float32)
    kv_b = (rng.standard_normal((H * W, R), dtype=np.float32) / np.float32(np.sqrt(R)))
    wk = kv_b.reshape(H, W, R)[:, :Dn, :]                         # [H, Dn, R]
    wv = kv_b.reshape(H, W, R)[:, Dn:, :]                         # [H, Dv, R]
    scale = np.float32((Dn + Dr) ** -0.5)
    mask = _causal(T, L) if T > 1 else None

    def np_absorbed():
        c = np.concatenate([_f32(lat16), _f32(kr16)], axis=1)      # [L, R + Dr]
        q_lat = np.einsum("thn,hnr->thr", qn, wk)
        qf = np.concatenate([q_lat, qr], axis=-1).reshape(T * H, R + Dr) * scale
        s = (qf @ c.T).reshape(T, H, L)
        p = _np_softmax_rows(s, mask[:, None, :] if mask is not None else None)
        o_lat = p.reshape(T * H, L) @ c[:, :R]
        return np.einsum("thr,hdr->thd", o_lat.reshape(T, H, R), wv)

    def np_naive():
        lat = _f32(lat16)
        kv = (lat @ kv_b.T).reshape(L, H, W)
        k = np.concatenate([kv[..., :Dn], np.broadcast_to(_f32(kr16)[:, None, :], (L, H, Dr))], axis=-1)
        qf = np.concatenate([qn, qr], axis=-1) * scale              # [T, H, Dn + Dr]
        s = np.einsum("thd,lhd->htl", qf, k)
        p = _np_softmax_rows(s, mask[None] if mask is not None else None)
        return np.einsum("htl,lhd->thd", p, kv[..., Dn:])

    keys = _keys(T, d)
    kind = "decode" if T == 1 else f"prefill T={T}"
    out = []
    for s in strategies:
        if s == "naive":
            flops = 2.0 * H * (Dn + Dr + Dv) * keys + 2.0 * L * H * W * R
            twin = np_naive if numpy_naive else None
            bound = "compute"
        else:
            flops = 2.0 * H * (R + Dr + R) * keys + 2.0 * T * H * W * R
            twin = np_absorbed
            bound = "compute"
        tag = ("attention", f"mla_{s}_decode_{d // 1024}k") if T == 1 else ("attention", f"mla_{s}_prefill")
        out.append(Case(f"attn mla glm-4.7-flash {s} {kind} d={d} bf16",
                        run=lambda s=s: mla_attention(qn, qr, cache, 0, kv_b, v_head_dim=Dv, strategy=s),
                        numpy_run=twin, flops=flops, rtol=_rtol(s != "naive"),
                        bytes=float(L * (R + Dr) * 2 + kv_b.nbytes + 2 * (qn.nbytes + qr.nbytes)),
                        bound=bound, tags=tag))
    return out


def cases(quick: bool = False):
    """Decode at 4K and 32K and a prefill chunk of 512 (quick: decode at 4K, prefill of 128)."""

    rng = np.random.default_rng(7)
    depths = (4096,) if quick else (4096, 32768)
    T_pre = 128 if quick else 512
    out = []
    for d in depths:
        out += _mla_cases(Case, d, 1, ("absorbed", "flash", "naive"), rng, numpy_naive=d <= 4096)
        out.append(_gqa_case(Case, d, 1, rng))
    for d in depths:
        out += [_swa_case(Case, d, rng, True), _swa_case(Case, d, rng, False)]
    for d in depths:   # the global layer's chunk only at the first depth (at 32K it is ~0.3 TFLOP)
        out.append(_swa_prefill_case(Case, d, T_pre, rng, True))
    out.append(_swa_prefill_case(Case, depths[0], T_pre, rng, False))
    out += _mla_cases(Case, 0, T_pre, ("absorbed", "flash", "naive"), rng, numpy_naive=True)
    out.append(_gqa_case(Case, 0, T_pre, rng))
    return out
