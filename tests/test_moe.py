import numpy as np
import pytest

import glmbench
from glmbench.core import _core
from glmbench.core import reference as ref

EPS32 = float(np.finfo(np.float32).eps)

# Router configurations of the real models (docs/SOURCES.md §1-§2) plus a grouped one
# (DeepSeek-V3 style n_group 8 / topk_group 4) so the group-limited path is exercised.
ROUTERS = {
    "glm-4.7-flash": dict(E=64, D=2048, top_k=4, scoring="sigmoid", bias=True, n_group=1, topk_group=1,
                          norm_topk_prob=True, routed_scaling_factor=1.8),
    "grouped": dict(E=64, D=96, top_k=8, scoring="sigmoid", bias=True, n_group=8, topk_group=4,
                    norm_topk_prob=True, routed_scaling_factor=2.5),
    "grouped-small-groups": dict(E=12, D=40, top_k=3, scoring="sigmoid", bias=True, n_group=6, topk_group=2,
                                 norm_topk_prob=False, routed_scaling_factor=1.0),
    "qwen3-30b-a3b": dict(E=128, D=2048, top_k=8, scoring="softmax", bias=False, n_group=1, topk_group=1,
                          norm_topk_prob=True, routed_scaling_factor=1.0),
    "deepseek-v2-lite": dict(E=64, D=2048, top_k=6, scoring="softmax", bias=False, n_group=1, topk_group=1,
                             norm_topk_prob=False, routed_scaling_factor=1.0),
    # DeepSeek-V2 (group_limited_greedy): 160 experts in 8 groups of 20, 3 groups kept, top-6, x16
    "deepseek-v2": dict(E=160, D=256, top_k=6, scoring="softmax", bias=False, n_group=8, topk_group=3,
                        norm_topk_prob=False, routed_scaling_factor=16.0),
}


def _route_kwargs(cfg, bias):
    kw = {k: cfg[k] for k in ("top_k", "scoring", "n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor")}
    kw["bias"] = bias
    return kw


@pytest.mark.parametrize("name", list(ROUTERS))
def test_route_matches_reference_exactly(rng, name):
    cfg = ROUTERS[name]
    E, D = cfg["E"], cfg["D"]
    # T=300 goes through dgemm, T <= 8 through the direct float64 dot products (decode)
    for trial, T in enumerate((300, 300, 8, 1, 1, 1)):
        x = rng.standard_normal((T, D)).astype(np.float32)
        wr = (rng.standard_normal((E, D)) * (0.3 + trial % 3) / np.sqrt(D)).astype(np.float32)
        bias = (rng.standard_normal(E) * 0.05).astype(np.float32) if cfg["bias"] else None
        kw = _route_kwargs(cfg, bias)
        copies = [a.copy() for a in (x, wr) + ((bias,) if bias is not None else ())]
        idx, w = glmbench.moe_route(x, wr, **kw)
        ridx, rw = ref.moe_route(x, wr, **kw)
        assert idx.dtype == np.int32 and w.dtype == np.float32 and idx.shape == (T, cfg["top_k"])
        np.testing.assert_array_equal(idx, ridx)
        # weights: float64 all the way, one rounding to float32 at the end
        np.testing.assert_allclose(w, rw, rtol=EPS32, atol=0)
        for a, c in zip((x, wr) + ((bias,) if bias is not None else ()), copies):
            np.testing.assert_array_equal(a, c)
        if cfg["norm_topk_prob"]:
            np.testing.assert_allclose(w.sum(1), cfg["routed_scaling_factor"], rtol=1e-6)


def test_route_bias_only_chooses():
    # expert 3 has the lowest score but a large bias: it is chosen, weighted by its unbiased score
    x = np.ones((1, 1), np.float32)
    wr = np.array([[2.0], [1.0], [0.5], [-1.0]], np.float32)
    bias = np.array([0.0, 0.0, 0.0, 10.0], np.float32)
    idx, w = glmbench.moe_route(x, wr, top_k=2, scoring="sigmoid", bias=bias, norm_topk_prob=False)
    assert idx.tolist() == [[3, 0]]
    np.testing.assert_allclose(w[0], [1 / (1 + np.e), 1 / (1 + np.exp(-2.0))], rtol=1e-7)


def test_route_exact_ties_go_to_lower_index():
    # integer inputs make every logit exact, so these are true ties in float32 and float64 alike
    E, D = 8, 3
    x = np.array([[1, 2, 0], [0, 0, 0], [1, 1, 1]], np.float32)
    wr = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0], [1, 0, 0], [2, 0, 0], [0, 0, 1], [0, 2, 0], [0, 0, 0]],
                  np.float32)
    # token 0 logits [1,2,2,1,2,0,4,0]; token 1 all 0; token 2 [1,1,1,1,2,1,2,0]
    expect = {
        "sigmoid": [[6, 1, 2, 4], [0, 1, 2, 3], [4, 6, 0, 1]],
        "softmax": [[6, 1, 2, 4], [0, 1, 2, 3], [4, 6, 0, 1]],
    }
    for scoring, want in expect.items():
        idx, w = glmbench.moe_route(x, wr, top_k=4, scoring=scoring)
        assert idx.tolist() == want, scoring
        ridx, _ = ref.moe_route(x, wr, top_k=4, scoring=scoring)
        assert ridx.tolist() == want, scoring
        np.testing.assert_allclose(w[1], 0.25, rtol=1e-7)  # four equal scores renormalised
    # ties in the bias alone (x = 0: every score is 0.5, choice = 0.5 + bias)
    bias = np.array([0, 1, 1, 0, 1, 0, 0, 1], np.float32) * 0.125
    idx, w = glmbench.moe_route(np.zeros((1, D), np.float32), wr, top_k=4, scoring="sigmoid", bias=bias,
                                routed_scaling_factor=1.8)
    assert idx.tolist() == [[1, 2, 4, 7]]
    np.testing.assert_allclose(w, 0.45, rtol=1e-7)


def test_route_group_limited_and_group_ties():
    E = 8  # 4 groups of 2
    x = np.ones((1, 1), np.float32)
    # logits chosen so group scores (sum of top-2 sigmoids) rank group 2 > 0 = 3 > 1
    lg = np.array([1.0, 0.0, -3.0, -3.0, 2.0, 1.0, 0.0, 1.0], np.float32)
    wr = lg[:, None]
    idx, _ = glmbench.moe_route(x, wr, top_k=2, n_group=4, topk_group=1)
    assert idx.tolist() == [[4, 5]]                      # only group 2 may be used
    idx, _ = glmbench.moe_route(x, wr, top_k=3, n_group=4, topk_group=2)
    assert idx.tolist() == [[4, 0, 5]]                   # groups 2 and 0 (0 beats tied 3)
    idx, _ = glmbench.moe_route(x, wr, top_k=3, n_group=1, topk_group=1)
    assert idx.tolist() == [[4, 0, 5]]                   # ungrouped: 0, 5, 7 tie at logit 1
    for kw in (dict(top_k=2, n_group=4, topk_group=1), dict(top_k=3, n_group=4, topk_group=2)):
        assert ref.moe_route(x, wr, **kw)[0].tolist() == glmbench.moe_route(x, wr, **kw)[0].tolist()


# group_limited_greedy over a spread of shapes: (E, n_group, topk_group, top_k); norm on and off;
# T=1 (direct float64 dot products) and T=37 (dgemm)
GLG = [(8, 4, 2, 2), (8, 4, 1, 2), (12, 6, 2, 3), (16, 2, 1, 8), (16, 8, 7, 5), (64, 8, 3, 6), (160, 8, 3, 6),
       (30, 10, 4, 12)]


@pytest.mark.parametrize("E,n_group,topk_group,top_k", GLG)
@pytest.mark.parametrize("norm", [False, True])
def test_route_group_limited_greedy_matches_reference(rng, E, n_group, topk_group, top_k, norm):
    D = 48
    limited = 0
    for T in (1, 37, 1, 37):
        x = rng.standard_normal((T, D)).astype(np.float32)
        wr = (rng.standard_normal((E, D)) * 1.5 / np.sqrt(D)).astype(np.float32)
        kw = dict(top_k=top_k, scoring="softmax", n_group=n_group, topk_group=topk_group, norm_topk_prob=norm,
                  routed_scaling_factor=2.5)
        copies = (x.copy(), wr.copy())
        idx, w = glmbench.moe_route(x, wr, **kw)
        idx2, w2 = glmbench.moe_route(x, wr, group_score="max", **kw)  # the default for softmax, spelt out
        np.testing.assert_array_equal(idx, idx2)
        np.testing.assert_array_equal(w, w2)
        ridx, rw = ref.moe_route(x, wr, **kw)
        assert idx.dtype == np.int32 and w.dtype == np.float32 and idx.shape == (T, top_k)
        np.testing.assert_array_equal(idx, ridx)
        np.testing.assert_allclose(w, rw, rtol=EPS32, atol=0)
        np.testing.assert_array_equal(x, copies[0])
        np.testing.assert_array_equal(wr, copies[1])
        # each token's experts lie in at most topk_group groups
        assert all(len(set((row // (E // n_group)).tolist())) <= topk_group for row in idx)
        # weights are the full softmax (not re-normalised over the kept groups) unless norm
        lg = x.astype(np.float64) @ wr.astype(np.float64).T
        p = np.exp(lg - lg.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        want = np.take_along_axis(p, idx, 1)
        if norm:
            want /= want.sum(1, keepdims=True)
        np.testing.assert_allclose(w, want * 2.5, rtol=4 * EPS32)
        plain, _ = ref.moe_route(x, wr, top_k=top_k, scoring="softmax", norm_topk_prob=norm)
        limited += int(np.any(np.sort(plain, 1) != np.sort(idx, 1)))
    # With the max rule the best top_k experts always lie in the best top_k groups, so the limit can
    # only bite when top_k > topk_group (and topk_group < n_group); then it did for some token.
    if top_k > topk_group and topk_group < n_group:
        assert limited > 0
    else:
        assert limited == 0


def test_route_group_limited_greedy_by_hand_and_ties():
    # 4 groups of 2, integer logits: exact ties in float32 and float64 alike
    x = np.ones((1, 1), np.float32)
    lg = np.array([1.0, 3.0, 3.0, 0.0, 2.0, 2.0, 3.0, -1.0], np.float32)
    wr = lg[:, None]
    p = np.exp(lg.astype(np.float64) - 3.0)
    p /= p.sum()
    # group maxes [3, 3, 2, 3]: groups 0 and 1 win the tie with group 3 (lower index). Top-2 sums
    # ([4, 3, 4, 2]) would keep groups 0 and 2; ungrouped top-3 would be [1, 2, 6].
    for fn in (glmbench.moe_route, ref.moe_route):
        idx, w = fn(x, wr, top_k=3, scoring="softmax", n_group=4, topk_group=2, norm_topk_prob=False)
        assert idx.tolist() == [[1, 2, 0]]
        np.testing.assert_allclose(w[0], p[[1, 2, 0]], rtol=1e-7)
        idx, w = fn(x, wr, top_k=2, scoring="softmax", n_group=4, topk_group=1, norm_topk_prob=True,
                    routed_scaling_factor=2.0)
        assert idx.tolist() == [[1, 0]]
        np.testing.assert_allclose(w[0], 2.0 * p[[1, 0]] / p[[1, 0]].sum(), rtol=1e-7)
        idx, _ = fn(x, wr, top_k=3, scoring="softmax", norm_topk_prob=False)
        assert idx.tolist() == [[1, 2, 6]]
        # a bias (if given) chooses, as for sigmoid: group 3's max becomes the best
        b = np.array([0, 0, 0, 0, 0, 0, 0.5, 0], np.float32)
        idx, _ = fn(x, wr, top_k=2, scoring="softmax", bias=b, n_group=4, topk_group=1)
        assert idx.tolist() == [[6, 7]]


def test_route_bad_input(rng):
    x = np.ones((2, 4), np.float32)
    wr = np.ones((6, 4), np.float32)
    with pytest.raises(ValueError, match=r"`top_k` must be in \[1, n_experts=6\], got 7"):
        glmbench.moe_route(x, wr, top_k=7)
    with pytest.raises(ValueError, match=r"`top_k` must be in \[1, n_experts=6\], got 0"):
        glmbench.moe_route(x, wr, top_k=0)
    with pytest.raises(TypeError, match=r"`top_k` must be an int, got 2.0"):
        glmbench.moe_route(x, wr, top_k=2.0)
    with pytest.raises(TypeError, match=r"`n_group` must be an int, got 2.5"):
        glmbench.moe_route(x, wr, top_k=2, n_group=2.5)
    with pytest.raises(ValueError, match=r"`n_group`=4 must be >= 1 and divide n_experts=6"):
        glmbench.moe_route(x, wr, top_k=2, n_group=4)
    with pytest.raises(ValueError, match=r"`topk_group` must be in \[1, n_group=3\], got 4"):
        glmbench.moe_route(x, wr, top_k=2, n_group=3, topk_group=4)
    with pytest.raises(ValueError, match=r"`top_k`=3 exceeds the 2 experts in topk_group=1 groups of 2"):
        glmbench.moe_route(x, wr, top_k=3, n_group=3, topk_group=1)
    with pytest.raises(ValueError, match=r"`group_score` must be 'top2_sum', 'max' or None, got 'min'"):
        glmbench.moe_route(x, wr, top_k=2, scoring="softmax", n_group=2, topk_group=1, group_score="min")
    with pytest.raises(ValueError, match=r"`group_score`='max' goes with scoring='softmax'"):
        glmbench.moe_route(x, wr, top_k=2, n_group=2, topk_group=1, group_score="max")
    with pytest.raises(ValueError, match=r"`group_score`='top2_sum' goes with scoring='sigmoid'"):
        glmbench.moe_route(x, wr, top_k=2, scoring="softmax", n_group=2, topk_group=1, group_score="top2_sum")
    with pytest.raises(ValueError, match=r"`group_score`='top2_sum' goes with scoring='sigmoid'"):
        glmbench.moe_route(x, wr, top_k=2, scoring="softmax", group_score="top2_sum")  # n_group 1 too
    from glmbench.core import _core
    with pytest.raises(ValueError, match=r"`group_score` must be 'top2_sum' or 'max' \(got code 7\)"):
        _core.moe_route(x, wr, 2, 1, None, 2, 1, 7)
    for bad_kw in (dict(group_score="min"), dict(scoring="softmax", group_score="top2_sum"),
                   dict(scoring="sigmoid", group_score="max")):
        with pytest.raises(ValueError, match=r"`group_score`"):
            ref.moe_route(x, wr, top_k=2, **bad_kw)
    with pytest.raises(ValueError, match=r"`scoring` must be 'sigmoid' or 'softmax', got 'relu'"):
        glmbench.moe_route(x, wr, top_k=2, scoring="relu")
    with pytest.raises(ValueError, match=r"`router_weight` has shape \(6, 5\): axis 1 must be 4"):
        glmbench.moe_route(x, np.ones((6, 5), np.float32), top_k=2)
    with pytest.raises(TypeError, match=r"`router_weight` must be float32, got uint16"):
        glmbench.moe_route(x, np.ones((6, 4), np.uint16), top_k=2)
    with pytest.raises(ValueError, match=r"`bias` has shape \(5,\): axis 0 must be 6"):
        glmbench.moe_route(x, wr, top_k=2, bias=np.zeros(5, np.float32))
    bad = wr.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"`router_weight` contains NaN or inf \(the logit of token 0, expert 2 is nan\)"):
        glmbench.moe_route(x, bad, top_k=2)
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"`router_weight` contains NaN or inf \(the logit of token 0, expert 2 is inf\)"):
        glmbench.moe_route(x, bad, top_k=2)
    with pytest.raises(ValueError, match=r"`router_weight` contains NaN or inf"):
        glmbench.moe_route(np.ones((20, 4), np.float32), bad, top_k=2)  # the dgemm path too
    with pytest.raises(ValueError, match=r"`x` contains inf at flat index 3"):
        glmbench.moe_route(np.array([[0, 0, 0, np.inf]] * 2, np.float32), wr, top_k=2)
    with pytest.raises(ValueError, match=r"`routed_scaling_factor` must be finite, got nan"):
        glmbench.moe_route(x, wr, top_k=2, routed_scaling_factor=float("nan"))


# ---- experts ----------------------------------------------------------------------------------

def make_experts(rng, E, F, D, fmt):
    ws, w64 = [], []
    for shape, fan_in in (((E, F, D), D), ((E, F, D), D), ((E, D, F), F)):
        a = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        q = a if fmt == "f32" else a.astype(np.float16) if fmt == "f16" else ref.to_bf16(a)
        ws.append(q)
        w64.append(ref.weight_f64(q))
    return ws, w64


def bf16_prefill_rounds(fmt, counts, limit=None):
    """Whether an expert's products ran with bf16-rounded activations: bf16 weights with more
    tokens than the GEMV limit go through hgemm, whose bf16 dot products round x and h to bf16
    (csrc/hgemm.h)."""
    from glmbench.core import _core
    limit = _core._linear_gemv_max_t() if limit is None else limit
    return fmt == "bf16" and int(np.max(counts)) > limit and _core._linear_hgemm("bf16") in ("bf16dot", "ref")


def assert_moe_close(y, ry, F, D, bf16_acts=False):
    # each token sums top_k SwiGLU outputs: two chained float32 products per expert (see
    # test_linear.assert_swiglu_close); normwise against the float64 result on the same weights.
    # bf16_acts: plus 8 bf16 units (2^-9 each) for the roundings of x and h (each moves a value by
    # at most one unit, relative; the products and sums spread it normwise by a small factor)
    scale = np.abs(ry).max() + 1e-30
    err = np.abs(y - ry).max() / scale
    assert err <= 16 * EPS32 * (np.sqrt(D) + np.sqrt(F)) + (8 * 2.0 ** -9 if bf16_acts else 0.0), err


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("T,E,F,D,k", [(1, 4, 8, 16, 2), (1, 7, 9, 33, 3), (5, 6, 12, 20, 2), (40, 8, 24, 48, 4),
                                       (200, 16, 10, 30, 4)])
def test_experts_match_reference(rng, fmt, T, E, F, D, k):
    x = rng.standard_normal((T, D)).astype(np.float32)
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, fmt)
    wr = rng.standard_normal((E, D)).astype(np.float32)
    idx, w = glmbench.moe_route(x, wr, top_k=k)
    copies = [a.copy() for a in (x, idx, w, g, u, d)]
    y, counts = glmbench.moe_experts(x, idx, w, g, u, d)
    ry, rcounts = ref.moe_experts(x, idx, w, g64, u64, d64)
    assert y.shape == (T, D) and y.dtype == np.float32 and counts.dtype == np.int64
    np.testing.assert_array_equal(counts, rcounts)
    assert counts.sum() == T * k
    assert_moe_close(y, ry, F, D, bf16_acts=bf16_prefill_rounds(fmt, counts))
    for a, c in zip((x, idx, w, g, u, d), copies):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("gemv_max_t", [0, 1])
@pytest.mark.slow
def test_experts_glm_shape_bf16(rng, gemv_max_t):
    """GLM-4.7-Flash expert size (1536 x 2048), 4 experts to keep the test small; 1 token (the
    decode path) and 24 tokens (~12 per expert: the prefill GEMM, hgemm, where a SIMD kernel of it
    runs, the register-tile kernel otherwise; hgemm, or panel + sgemm, when gemv_max_t=1 forces it)."""
    from glmbench.core import _core
    E, F, D = 4, 1536, 2048
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, "bf16")
    _core._linear_set_gemv_max_t(gemv_max_t)
    try:
        for T in (1, 24):
            x = rng.standard_normal((T, D)).astype(np.float32)
            idx = np.stack([rng.permutation(E)[:2] for _ in range(T)]).astype(np.int32)
            w = rng.random((T, 2)).astype(np.float32)
            y, counts = glmbench.moe_experts(x, idx, w, g, u, d)
            ry, rcounts = ref.moe_experts(x, idx, w, g64, u64, d64)
            np.testing.assert_array_equal(counts, rcounts)
            assert_moe_close(y, ry, F, D, bf16_acts=bf16_prefill_rounds("bf16", counts))
    finally:
        _core._linear_set_gemv_max_t(0)


def test_experts_unrouted_and_repeated(rng):
    # experts nobody chose contribute nothing; an expert listed twice for a token counts twice
    T, E, F, D = 3, 5, 6, 8
    x = rng.standard_normal((T, D)).astype(np.float32)
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, "f32")
    idx = np.array([[1, 1], [3, 1], [1, 3]], np.int32)
    w = np.array([[0.5, 0.25], [1.0, 2.0], [0.0, 1.0]], np.float32)
    y, counts = glmbench.moe_experts(x, idx, w, g, u, d)
    assert counts.tolist() == [0, 4, 0, 2, 0]
    ry, _ = ref.moe_experts(x, idx, w, g64, u64, d64)
    assert_moe_close(y, ry, F, D)
    np.testing.assert_allclose(y[0], 0.75 * ref.swiglu(x[:1], g64[1], u64[1], d64[1])[0], rtol=1e-5, atol=1e-6)
    # one token (the decode path, which reads each hit expert once): repeated and distinct experts
    for fmt in ("f32", "bf16"):
        (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, fmt)
        for row, wr in (([1, 1], [0.5, 0.25]), ([4, 0], [0.3, 0.7])):
            i1, w1 = np.array([row], np.int32), np.array([wr], np.float32)
            y1, c1 = glmbench.moe_experts(x[:1], i1, w1, g, u, d)
            assert c1.sum() == 2
            assert_moe_close(y1, ref.moe_experts(x[:1], i1, w1, g64, u64, d64)[0], F, D)


@pytest.mark.parametrize("T,F,D", [(17, 16, 64), (1, 16, 64), (1, 160, 1100)])
def test_moe_with_shared_expert_glm_config(rng, T, F, D):
    """The whole MoE block with GLM-4.7-Flash's router settings (64 experts, top-4, sigmoid +
    bias, scaling 1.8, one shared expert), at reduced widths. T = 1 is decode, where the shared
    expert's matrices are work items next to the routed experts' (rows of 1100: the two-stream
    kernels, odd chunk counts)."""
    E = 64
    x = rng.standard_normal((T, D)).astype(np.float32)
    wr = (rng.standard_normal((E, D)) / 8).astype(np.float32)
    bias = (rng.standard_normal(E) * 0.01).astype(np.float32)
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, "bf16")
    (sg, su, sd), (sg64, su64, sd64) = make_experts(rng, 1, F, D, "bf16")
    kw = dict(top_k=4, scoring="sigmoid", bias=bias, routed_scaling_factor=1.8)
    y, counts = glmbench.moe(x, wr, g, u, d, shared=(sg[0], su[0], sd[0]), **kw)
    ry, rcounts = ref.moe(x, wr, g64, u64, d64, shared=(sg64[0], su64[0], sd64[0]), **kw)
    np.testing.assert_array_equal(counts, rcounts)
    # the shared expert sees all T tokens: above the GEMV limit its bf16 products round x and h
    shared_rounds = bf16_prefill_rounds("bf16", [T])
    assert_moe_close(y, ry, F, D, bf16_acts=shared_rounds or bf16_prefill_rounds("bf16", counts))
    y2, _ = glmbench.moe(x, wr, g, u, d, **kw)
    rs = ref.swiglu(x, sg64[0], su64[0], sd64[0])
    np.testing.assert_allclose(y - y2, rs, rtol=1e-4, atol=(8 * 2.0 ** -9 * np.abs(rs).max()) if shared_rounds else 1e-5)


def test_experts_strided_inputs(rng):
    T, E, F, D = 6, 4, 10, 12
    big = rng.standard_normal((2 * T, 2 * D)).astype(np.float32)
    x = big[::2, ::2]
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, "f16")
    idx = np.asfortranarray(rng.integers(0, E, (T, 2)).astype(np.int32))
    w = np.asfortranarray(rng.random((T, 2)).astype(np.float32))
    gs = np.zeros((E, F, 2 * D), np.float16)
    gs[..., ::2] = g
    y, counts = glmbench.moe_experts(x, idx, w, gs[..., ::2], u, d)
    ry, rcounts = ref.moe_experts(x, idx, w, g64, u64, d64)
    np.testing.assert_array_equal(counts, rcounts)
    assert_moe_close(y, ry, F, D)


def test_experts_decode_long_down_rows(rng):
    # one token, experts whose down rows are >= 4096 long: the four-stream pair kernel (and
    # chunks with a remainder row) of gb_gemv1_rows, against the float64 reference
    E, F, D = 4, 4100, 72
    x = rng.standard_normal((1, D)).astype(np.float32)
    (g, u, d), (g64, u64, d64) = make_experts(rng, E, F, D, "bf16")
    idx, w = np.array([[2, 0]], np.int32), np.array([[0.7, 0.3]], np.float32)
    y, _ = glmbench.moe_experts(x, idx, w, g, u, d)
    assert_moe_close(y, ref.moe_experts(x, idx, w, g64, u64, d64)[0], F, D)


def test_moe_shared_bad_input(rng):
    E, F, D = 4, 6, 8
    x = np.ones((1, D), np.float32)
    (g, u, d), _ = make_experts(rng, E, F, D, "bf16")
    idx, w = np.array([[0, 2]], np.int32), np.ones((1, 2), np.float32)
    sg, sd = np.ones((5, D), np.float32), np.ones((D, 5), np.float32)
    with pytest.raises(ValueError, match=r"shared w_down.*axis 1 must be 5"):
        _core.moe_experts(x, idx, w, g, u, d, (sg, sg, np.ones((D, 4), np.float32)))
    with pytest.raises(ValueError, match=r"shared w_gate.*axis 1 must be 8"):
        _core.moe_experts(x, idx, w, g, u, d, (np.ones((5, 7), np.float32), sg, sd))
    with pytest.raises(TypeError, match=r"`shared` must be None or a tuple"):
        _core.moe_experts(x, idx, w, g, u, d, [sg, sg, sd])
    with pytest.raises(TypeError, match=r"`shared` must be None or a \(w_gate, w_up, w_down\) tuple"):
        glmbench.moe(x, np.ones((E, D), np.float32), g, u, d, shared=(sg, sg), top_k=2)
    # f32 gate with a bf16 up: not the fused decode path, same answer
    y, _ = _core.moe_experts(x, idx, w, g, u, d, (sg, ref.to_bf16(sg), sd))
    y2, _ = _core.moe_experts(x, idx, w, g, u, d)
    np.testing.assert_allclose(y - y2, ref.swiglu(x, sg, ref.weight_f64(ref.to_bf16(sg)), sd), rtol=1e-5)


def test_experts_bad_input(rng):
    T, E, F, D = 2, 3, 4, 5
    x = np.ones((T, D), np.float32)
    g = np.ones((E, F, D), np.float32)
    d = np.ones((E, D, F), np.float32)
    idx = np.zeros((T, 2), np.int32)
    w = np.ones((T, 2), np.float32)
    with pytest.raises(ValueError, match=r"`topk_idx`\[1, 0\] = 3 is not an expert index in \[0, 3\)"):
        glmbench.moe_experts(x, np.array([[0, 1], [3, 0]], np.int32), w, g, g, d)
    with pytest.raises(ValueError, match=r"`topk_idx`\[0, 1\] = -1 is not an expert index"):
        glmbench.moe_experts(x, np.array([[0, -1], [1, 0]], np.int32), w, g, g, d)
    with pytest.raises(TypeError, match=r"`topk_idx` must be int32, got int64"):
        glmbench.moe_experts(x, idx.astype(np.int64), w, g, g, d)
    with pytest.raises(ValueError, match=r"`topk_weight` has shape \(2, 3\): axis 1 must be 2"):
        glmbench.moe_experts(x, idx, np.ones((T, 3), np.float32), g, g, d)
    with pytest.raises(ValueError, match=r"`w_up` has shape \(2, 4, 5\): axis 0 must be 3"):
        glmbench.moe_experts(x, idx, w, g, np.ones((2, F, D), np.float32), d)
    with pytest.raises(ValueError, match=r"`w_down` has shape \(3, 4, 5\): axis 1 must be 5"):
        glmbench.moe_experts(x, idx, w, g, g, np.ones((E, F, D), np.float32))
    with pytest.raises(ValueError, match=r"`w_gate` must be 3-D, got shape \(4, 5\)"):
        glmbench.moe_experts(x, idx, w, g[0], g, d)
    badw = w.copy()
    badw[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"`topk_weight` contains NaN at flat index 3"):
        glmbench.moe_experts(x, idx, badw, g, g, d)
    with pytest.raises(TypeError, match=r"`shared` must be None or a \(w_gate, w_up, w_down\) tuple"):
        glmbench.moe(x, np.ones((E, D), np.float32), g, g, d, top_k=1, shared=g)


def test_gpt_oss_moe_and_sparsemixer_refuse_bad_input(rng):
    """ops.moe_gpt_oss met fewer experts in w_gate than the router has with an IndexError from its loop, a
    1-D x with "tuple index out of range", a wrong router_bias or b_gate as the inner linear's `bias`, a NaN
    alpha as "`x` contains NaN", and took float64 x (every other op refuses it); clamped_swiglu's shapes
    failed in NumPy's broadcasting; sparsemixer_route with jitter_eps < 0 gave inf weights. Now each is one
    error naming the argument."""
    from glmbench.core import ops
    E, F, D = 5, 8, 16
    x = rng.standard_normal((4, D)).astype(np.float32)
    w = [rng.standard_normal(s).astype(np.float32) / 3 for s in ((E, D), (E,), (E, F, D), (E, F, D), (E, D, F),
                                                                   (E, F), (E, F), (E, D))]
    y, _ = ops.moe_gpt_oss(x, *w, top_k=2)
    np.testing.assert_allclose(y, ref.moe_gpt_oss(x, *w, top_k=2), rtol=0, atol=1e-5)
    for i, name, bad in ((2, "w_gate", w[2][:2]), (1, "router_bias", w[1][:2]), (5, "b_gate", w[5][:, :3]),
                         (4, "w_down", w[4][:, :, :3])):
        ww = list(w)
        ww[i] = bad
        with pytest.raises(ValueError, match=rf"moe_gpt_oss: `{name}` has shape .*, want"):
            ops.moe_gpt_oss(x, *ww, top_k=2)
    with pytest.raises(ValueError, match=r"`x` must be 2-D"):
        ops.moe_gpt_oss(x[0], *w, top_k=2)
    with pytest.raises(TypeError, match=r"`x` must be a float32 numpy.ndarray, got float64"):
        ops.moe_gpt_oss(x.astype(np.float64), *w, top_k=2)
    with pytest.raises(ValueError, match=r"`alpha` must be finite"):
        ops.moe_gpt_oss(x, *w, top_k=2, alpha=float("nan"))
    with pytest.raises(ValueError, match=r"`gate` and `up` must have the same shape"):
        ops.clamped_swiglu(x, x[:2])
    with pytest.raises(ValueError, match=r"`jitter_eps` must be finite and >= 0, got -1"):
        ops.sparsemixer_route(x, w[0], -1.0)
    with pytest.raises(ValueError, match=r"`x` must be a 2-D numpy.ndarray"):
        ops.sparsemixer_route(x[0], w[0])
    idx, wt = ops.sparsemixer_route(x, w[0], 0.0)
    assert np.isfinite(wt).all() and idx.shape == (4, 2)


@pytest.mark.parametrize("jitter", [0.0, 0.01, 0.3])
def test_sparsemixer_route_matches_float64_reference(rng, jitter):
    """ops.sparsemixer_route (Phi-3.5-MoE's router, NumPy float32 around the C matmul) had no float64 twin in
    core/reference.py (only HF's, in test_model_hf.py, which needs torch): the same experts, weights within
    float32 rounding of reference.sparsemixer_route."""
    from glmbench.core import ops
    x = rng.standard_normal((40, 24)).astype(np.float32)
    wr = rng.standard_normal((8, 24)).astype(np.float32)
    idx, wt = ops.sparsemixer_route(x, wr, jitter)
    ridx, rwt = ref.sparsemixer_route(x, wr, jitter)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_allclose(wt, rwt, rtol=1e-5, atol=0)
    assert (wt <= 1).all() and (wt > 0).all() and (idx[:, 0] != idx[:, 1]).all()
