"""The one-token paths of the integer GEMM on repacked q8_0/q4_0 weights (csrc/qgemm.c: the decode
GEMV reads each thread's groups as one stream; a decode step's routed experts the same way) against
the multi-token tiles: the same integers and float operations, so bit-identical rows; and the
float64 oracle on the dequantized weights."""
import numpy as np
import pytest

from glmbench.core import quant
from glmbench.core import reference as ref

FMTS = ["q8_0", "q4_0"]
VNNI = [k for k, ok in quant.kernels().items() if ok and k.startswith("qgemm_")]


def _w(rng, shape, scale=0.05):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("N,K", [(7, 32), (33, 64), (250, 96), (1030, 512), (4099, 256)])
def test_gemv_rows_equal_the_tile_rows(rng, kernel, fmt, N, K):
    qt = quant.quantize(_w(rng, (N, K)), fmt)
    x = rng.standard_normal((3, K)).astype(np.float32)
    tiles = quant.linear(x, qt, kernel=kernel)          # T = 3: the tile kernel
    for t in range(3):
        one = quant.linear(x[t:t + 1], qt, kernel=kernel)  # T = 1: the GEMV
        np.testing.assert_array_equal(one[0], tiles[t])
    # and the float64 oracle (q8_0 activations: error ~ 1% of the row's magnitude)
    want = x.astype(np.float64) @ ref.dequantize(qt.data, fmt).T
    np.testing.assert_allclose(tiles, want, rtol=0, atol=0.02 * np.abs(want).max())


@pytest.mark.parametrize("kernel", VNNI)
@pytest.mark.parametrize("fmt", FMTS)
def test_moe_one_token_equals_its_row_of_two(rng, fmt, kernel):
    # T = 1: every routed expert has one row (the one-stream path); T = 2 with the same token and
    # routing twice: two rows per expert (the tiles). Row 0 of the second is the first, exactly.
    D, F, E, k = 96, 160, 6, 3
    ws = [quant.quantize(_w(rng, s, 0.1), fmt) for s in ((E, F, D), (E, F, D), (E, D, F))]
    x = rng.standard_normal((1, D)).astype(np.float32)
    idx = np.array([[4, 0, 2]], np.int64)
    wts = np.array([[0.5, 0.3, 0.2]], np.float32)
    y1, c1 = quant.moe_experts(x, idx, wts, *ws, kernel=kernel)
    y2, c2 = quant.moe_experts(np.repeat(x, 2, 0), np.repeat(idx, 2, 0), np.repeat(wts, 2, 0), *ws, kernel=kernel)
    np.testing.assert_array_equal(c2, 2 * c1)
    np.testing.assert_array_equal(y1[0], y2[0])
    np.testing.assert_array_equal(y2[0], y2[1])
