"""Test bodies tests/test_quant_k.py (K-quants, 256-value blocks, q8_K activations) and
tests/test_quant_iq.py (iq4_nl / mxfp4, 32-value blocks, q8_0 activations) share. Each family
passes its own block generator (`random_blocks(rng, fmt, rows, k)`) and linear check."""
import os

import gguf_writer
import numpy as np

from glmbench.core import quant
from glmbench.core.quant import QTensor


def gguf_tensor_as_stored(tmp_path, fmt, q, ggml_type, k):
    """Blocks `q` [rows, row bytes] of a rows x k matrix written by the gguf package as one tensor of `ggml_type`, read
    back by glmbench's reader: its type, shape, QTensor bytes and dequantized values (against the
    gguf package's own dequantize) are checked. Returns the stored bytes as the reader gives them."""
    import gguf

    from glmbench.models import gguf_file
    rows = q.shape[0]
    p = str(tmp_path / f"{fmt}.gguf")
    w = gguf.GGUFWriter(p, "llama")
    w.add_tensor("t", q, raw_shape=q.shape, raw_dtype=ggml_type)
    gguf_writer.finish(w)
    g = gguf_file.read(p)
    t = g.tensors["t"]
    assert t.type_name == ggml_type.name and tuple(t.shape) == (rows, k)
    qt = QTensor(g.tensor_data("t"), quant.gguf_format(t.type_name), t.shape)
    assert qt.fmt == fmt and qt.nbytes == q.nbytes
    rd = gguf.GGUFReader(p).tensors[0]
    want = gguf.quants.dequantize(rd.data, rd.tensor_type).reshape(rows, k)
    np.testing.assert_array_equal(qt.dequantize(), want)
    return np.ascontiguousarray(g.tensor_data("t"))


def check_linear(fmt, w, x, deq, xq_deq, block, slack, kernel="auto", bias=None):
    """quant.linear against float64 references: exact within float32 rounding on the quantized
    activations (`xq_deq(x) -> (xq, dx)`), within the activation rounding bound (sum |w| * dx / 2 per
    `block`-value block, times 1 + `slack`) on the float ones. Returns quant.linear's output."""
    k = x.shape[-1]
    qt = QTensor(w, fmt, (w.shape[0], k))
    y = quant.linear(x, qt, bias, kernel=kernel)
    W = deq(w, fmt, k).astype(np.float64)
    xq, dx = xq_deq(np.ascontiguousarray(x.reshape(-1, k)))
    b = 0 if bias is None else bias
    ref = xq @ W.T + b
    y2 = y.reshape(-1, w.shape[0])
    # (1) integer block sums are exact; float32 rounding of per-block products and lane sums is left
    mag = np.abs(xq) @ np.abs(W).T + (0 if bias is None else np.abs(bias))
    assert np.all(np.abs(y2 - ref) <= 1e-5 * mag + 1e-30)
    # (2) against the float activations: within the activations' rounding bound
    ref32 = x.reshape(-1, k).astype(np.float64) @ W.T + b
    bound = (np.abs(W).reshape(w.shape[0], -1, block).sum(-1) @ (np.abs(dx).T / 2)).T
    assert np.all(np.abs(y2 - ref32) <= bound * (1 + slack) + 1e-5 * mag + 1e-30)
    return y


def linear_every_version(rng, fmt, T_, N, K, random_blocks, check, versions):
    """Every available kernel version passes `check(fmt, w, x, version, bias)` and they agree bit for bit."""
    w = random_blocks(rng, fmt, N, K)
    x = rng.standard_normal((T_, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    outs = [check(fmt, w, x, v, bias) for v in versions]
    assert "kquant_ref" in versions
    for o in outs[1:]:  # the portable and the SIMD versions: bit-identical
        np.testing.assert_array_equal(o.view(np.uint32), outs[0].view(np.uint32))
    assert quant.linear(x, QTensor(w, fmt, (N, K))).shape == (T_, N)


def views_and_unaligned_rows(rng, fmt, K, random_blocks, check):
    """Strided activations, a strided row view of the bytes and rows at an odd address give the
    contiguous result. Returns the activations it made."""
    N = 9
    w = random_blocks(rng, fmt, 2 * N, K)
    x = rng.standard_normal((6, 2 * K)).astype(np.float32)
    xv = x[::2, ::2]                                   # a strided view of the activations
    wv = QTensor(w, fmt, (2 * N, K))[1::2]             # every other row: a strided view of the bytes
    buf = np.zeros(w[1::2].size + 1, np.uint8)
    buf[1:] = w[1::2].reshape(-1)
    wu = QTensor.from_bytes(buf[1:], fmt, (N, K))      # rows starting at an odd address
    assert wu.data.ctypes.data % 2 == 1
    y0 = check(fmt, np.ascontiguousarray(w[1::2]), np.ascontiguousarray(xv))
    for y in (quant.linear(xv, wv), quant.linear(xv, wu)):
        np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(wu.dequantize(), wv.dequantize())
    return x


def threads_do_not_change_a_bit(rng, fmt, random_blocks):
    import glmbench
    w = QTensor(random_blocks(rng, fmt, 40, 512), fmt, (40, 512))
    x = rng.standard_normal((80, 512)).astype(np.float32)
    prev = glmbench.get_num_threads()
    try:
        outs = []
        for th in (1, 2):
            glmbench.set_num_threads(th)
            outs.append([quant.linear(x[:n], w) for n in (1, 20, 80)])
    finally:
        glmbench.set_num_threads(prev)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    # a token's output does not depend on the batch it came in (every path computes the same sums)
    np.testing.assert_array_equal(outs[0][0][0], outs[0][2][0])
    np.testing.assert_array_equal(outs[0][1][5], outs[0][2][5])


def calls_leave_no_trace(calls):
    """300 runs of each call leave RSS (within 256 KiB) and the C core's workspace ledger where they were."""
    from glmbench.core import ops

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    ws0 = ops.workspace_bytes()[0]
    for call in calls:
        for _ in range(20):
            call()
        before = rss()
        for _ in range(300):
            call()
        assert rss() - before < 256 << 10
        assert ops.workspace_bytes()[0] == ws0


def bad_block_row_2(x, w, fmt, N, K, version):
    """quant.linear with a broken scale in one block of row 2 (of 5): the other rows equal the
    product without row 2 bit for bit. Returns the full output for the caller's row-2 checks."""
    y = quant.linear(x, QTensor(w, fmt, (N, K)), kernel=version)
    ok = [0, 1, 3, 4]
    want = quant.linear(x, QTensor(np.ascontiguousarray(w[ok]), fmt, (4, K)), kernel=version)
    np.testing.assert_array_equal(y[:, ok], want)
    return y


def moe_experts_against_float64(rng, wg, wu, wd, D):
    """quant.moe_experts on 3 tokens routed to 2 of 4 experts each: the expert counts, and the output
    within 3% of the largest against a float64 SwiGLU on the dequantized experts."""
    Tn = 3
    x = rng.standard_normal((Tn, D)).astype(np.float32)
    idx = np.array([[0, 2], [1, 2], [3, 0]])
    wt = rng.uniform(0.1, 1, idx.shape).astype(np.float32)
    y, counts = quant.moe_experts(x, idx, wt, wg, wu, wd)
    assert list(counts) == [2, 1, 2, 1]
    G, U, Dn = wg.dequantize(), wu.dequantize(), wd.dequantize()
    ref = np.zeros((Tn, D))
    for t in range(Tn):
        for j in range(2):
            e = idx[t, j]
            g, u = G[e].astype(np.float64) @ x[t], U[e].astype(np.float64) @ x[t]
            ref[t] += wt[t, j] * (Dn[e].astype(np.float64) @ (g / (1 + np.exp(-g)) * u))
    assert np.abs(y - ref).max() < 0.03 * np.abs(ref).max()


def repacked_equals_stored(rng, fmt, random_blocks, versions, stored, packed_linear, shapes=((37, 512), (16, 256), (5, 768))):
    """The repacked weight (QTensor.repack: 16 rows interleaved, csrc/quant_k.h) gives the stored
    path's outputs bit for bit, for every kernel version, token count (the GEMV tiles of 1-4 tokens,
    their remainders, the prefill panels from T=64) and row count (groups padded past N); the
    stored bytes are not written. `stored(x, w, version, bias)` and `packed_linear(x, qt, version,
    bias)` run the two paths."""
    for N, K in shapes:
        w = random_blocks(rng, fmt, N, K)
        w0 = w.copy()
        qt = QTensor(w, fmt, (N, K)).repack()
        assert qt.packed is not None and qt.data is w
        bias = rng.standard_normal(N).astype(np.float32)
        for T_ in (1, 2, 3, 4, 5, 17, 64, 70):
            x = rng.standard_normal((T_, K)).astype(np.float32)
            b = bias if T_ % 2 else None
            ref = stored(x, w, versions[0], b)
            for v in versions:
                np.testing.assert_array_equal(stored(x, w, v, b).view(np.uint32), ref.view(np.uint32))
                np.testing.assert_array_equal(packed_linear(x, qt, v, b).view(np.uint32), ref.view(np.uint32))
        np.testing.assert_array_equal(w, w0)


def repacked_experts_equal_stored(rng, fmts, random_blocks, kmoe):
    """Routed experts on repacked weights (one C call split over experts x row groups at decode
    sizes, expert by expert from 64 tokens) equal the stored path bit for bit, for T = 1 (the decode
    case: k of E experts), a few tokens, and a batch where an expert gets >= 64 tokens; indexing one
    expert of a repacked [E, F, D] tensor keeps its packed copy."""
    E, F, D, k = 6, 512, 256, 2
    fg, fu, fd = fmts
    ws = [QTensor(random_blocks(rng, f, E * a, b).reshape(E, a, -1), f, (E, a, b)) for f, a, b in ((fg, F, D), (fu, F, D), (fd, D, F))]
    for T_ in (1, 3, 150, 40):
        x = rng.standard_normal((T_, D)).astype(np.float32)
        idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T_)]).astype(np.int64)
        if T_ == 40:  # skewed: experts 0 and 1 take >= 16 tokens (prefill panels), the rest a few (group kernel)
            idx[:, 0] = np.where(np.arange(T_) % 2, 0, 1)
            idx[:, 1] = np.where(idx[:, 0] == 0, 2 + np.arange(T_) % (E - 2), 3 + np.arange(T_) % (E - 3))
        wt = rng.uniform(0.1, 1, idx.shape).astype(np.float32)
        y0, c0 = kmoe(x, idx, wt, ws, False)
        y1, c1 = kmoe(x, idx, wt, ws, True)
        np.testing.assert_array_equal(c0, c1)
        np.testing.assert_array_equal(y1.view(np.uint32), y0.view(np.uint32))
        y2, c2 = quant.moe_experts(x, idx, wt, *ws)  # repacks on first use
        np.testing.assert_array_equal(y2.view(np.uint32), y0.view(np.uint32))
    assert all(w.packed is not None for w in ws)
    one = ws[0][2]
    assert one.packed is not None and np.array_equal(one.packed, ws[0].packed[2])
    x = rng.standard_normal((2, D)).astype(np.float32)
    np.testing.assert_array_equal(quant.linear(x, one), quant.linear(x, QTensor(np.ascontiguousarray(ws[0].data[2]), fg, (F, D))))
