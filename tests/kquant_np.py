"""A plain NumPy quantizer to ggml's q4_K / q5_K / q6_K / iq4_xs block bytes (test helper).

The gguf package dequantizes these types but has no quantizer, and glmbench reads them as stored,
so tests need valid blocks of known values. This is NOT ggml's quantizer (ggml searches scales and
mins per sub-block, make_qkx2_quants / make_qx_quants); it is a simple round-to-nearest one with
the same byte layout (ggml-common.h), so gguf.quants.dequantize reads its output, and the
round-trip error stays within one step of each sub-block's scale.
"""
import numpy as np

QK_K = 256
BYTES = {"q4_K": 144, "q5_K": 176, "q6_K": 210, "iq4_xs": 136}
KVALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def _f16(a):
    return np.asarray(a, np.float32).astype(np.float16)


def _pack_scales(sc, m):
    """6-bit scales and mins [nb, 8] -> ggml's 12 bytes (the inverse of get_scale_min_k4)."""
    sc, m = sc.astype(np.uint8), m.astype(np.uint8)
    s = np.zeros((sc.shape[0], 12), np.uint8)
    s[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    s[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    return s


def _q45(x, bits):
    nb = x.shape[0]
    xs = x.reshape(nb, 8, 32).astype(np.float32)
    lo = np.minimum(xs.min(-1), 0.0)
    hi = np.maximum(xs.max(-1), 0.0)
    nmax = (1 << bits) - 1
    scale, mn = (hi - lo) / nmax, -lo
    d = _f16(scale.max(-1) / 63).astype(np.float32)
    dmin = _f16(mn.max(-1) / 63).astype(np.float32)
    sc = np.where(d[:, None] > 0, np.rint(scale / np.where(d > 0, d, 1)[:, None]), 0).clip(0, 63)
    m = np.where(dmin[:, None] > 0, np.rint(mn / np.where(dmin > 0, dmin, 1)[:, None]), 0).clip(0, 63)
    ds = (d[:, None] * sc)[..., None]
    q = np.where(ds > 0, np.rint((xs + (dmin[:, None] * m)[..., None]) / np.where(ds > 0, ds, 1)), 0)
    q = q.clip(0, nmax).astype(np.uint8).reshape(nb, 256)
    head = np.concatenate([_f16(d)[:, None].view(np.uint8), _f16(dmin)[:, None].view(np.uint8),
                           _pack_scales(sc, m)], axis=1)
    qc = q.reshape(nb, 4, 2, 32)                       # chunk c: values 64c+l (low) and 64c+32+l (high)
    qs = ((qc[:, :, 0] & 0x0F) | ((qc[:, :, 1] & 0x0F) << 4)).reshape(nb, 128)
    if bits == 4:
        return np.concatenate([head, qs], axis=1)
    hb = (qc >> 4).astype(np.uint8)                    # [nb, 4, 2, 32]
    qh = np.zeros((nb, 32), np.uint8)
    for c in range(4):
        qh |= hb[:, c, 0] << (2 * c)
        qh |= hb[:, c, 1] << (2 * c + 1)
    return np.concatenate([head, qh, qs], axis=1)


def _q6(x):
    nb = x.shape[0]
    xs = x.reshape(nb, 16, 16).astype(np.float32)
    scale = np.abs(xs).max(-1) / 31
    d = _f16(scale.max(-1) / 127).astype(np.float32)
    sc = np.where(d[:, None] > 0, np.rint(scale / np.where(d > 0, d, 1)[:, None]), 0).clip(0, 127)
    ds = (d[:, None] * sc)[..., None]
    q = np.where(ds > 0, np.rint(xs / np.where(ds > 0, ds, 1)), 0).clip(-32, 31) + 32
    q = q.astype(np.uint8).reshape(nb, 2, 4, 32)       # half h, quarter k, l: value 128h + 32k + l
    ql = np.concatenate([(q[:, :, 0] & 0x0F) | ((q[:, :, 2] & 0x0F) << 4),
                         (q[:, :, 1] & 0x0F) | ((q[:, :, 3] & 0x0F) << 4)], axis=2).reshape(nb, 128)
    qh = ((q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6))
    return np.concatenate([ql, qh.reshape(nb, 64).astype(np.uint8), sc.astype(np.int8).view(np.uint8),
                           _f16(d)[:, None].view(np.uint8)], axis=1)


def _iq4_xs(x):
    nb = x.shape[0]
    xs = x.reshape(nb, 8, 32).astype(np.float32)
    scale = np.abs(xs).max(-1) / 127                   # kvalues span about +-127 steps
    d = _f16(scale.max(-1) / 31).astype(np.float32)
    sc = np.where(d[:, None] > 0, np.rint(scale / np.where(d > 0, d, 1)[:, None]), 0).clip(0, 31)
    ds = (d[:, None] * sc)[..., None]
    v = np.where(ds > 0, xs / np.where(ds > 0, ds, 1), 0)
    idx = np.abs(v[..., None] - KVALUES).argmin(-1).astype(np.uint8)   # nearest grid value
    ls = (sc + 32).astype(np.uint16)                   # stored 6-bit scale: x = d * (ls - 32) * kvalue
    sh = np.zeros(nb, np.uint16)
    sl = np.zeros((nb, 4), np.uint8)
    for ib in range(8):
        sh |= (ls[:, ib] >> 4) << (2 * ib)
        sl[:, ib // 2] |= ((ls[:, ib] & 0x0F) << (4 * (ib % 2))).astype(np.uint8)
    qs = (idx[:, :, :16] | (idx[:, :, 16:] << 4)).reshape(nb, 128)
    return np.concatenate([_f16(d)[:, None].view(np.uint8), sh[:, None].view(np.uint8), sl, qs], axis=1)


def quantize(x, fmt):
    """float32 [..., K] (K % 256 == 0) -> uint8 [..., K/256 * bytes] in ggml's `fmt` layout."""
    x = np.asarray(x, np.float32)
    k = x.shape[-1]
    assert k % QK_K == 0, k
    blocks = x.reshape(-1, QK_K)
    out = (_q6(blocks) if fmt == "q6_K" else _iq4_xs(blocks) if fmt == "iq4_xs"
           else _q45(blocks, 4 if fmt == "q4_K" else 5))
    return out.reshape(x.shape[:-1] + (k // QK_K * BYTES[fmt],))
