"""Mamba-2's selective scan (ops.ssm_scan, Nemotron-H / Granite-4.0-H hybrids) and the conv bias its
layer needs (ops.causal_conv1d(bias=...)): against their float64 references, HF transformers' Mamba-2
mixer (GraniteMoeHybridMambaLayer: the whole layer rebuilt from glmbench ops, its chunked scan and its
one-token state update, where torch and transformers import), their own properties (pieces with the
state carried, token by token, strided inputs, inputs untouched) and their errors."""
import numpy as np
import pytest

import glmbench
from glmbench.core import ops
from glmbench.core import reference as ref

# float32 state updated T times, sums of N terms in float32: ~1e-7 relative to the output's scale;
# 1e-5 of the largest magnitude leaves room for long prompts.
RTOL = 1e-5


def close(got, want, rtol=RTOL):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max())))


def scan_inputs(rng, T, H, G, P, N, *, with_state=True, with_D=True, with_bias=True):
    f32 = np.float32
    x = rng.standard_normal((T, H, P)).astype(f32)
    dt = rng.standard_normal((T, H)).astype(f32)
    A = (-np.exp(rng.uniform(-2, 1.5, H))).astype(f32)          # -exp(A_log), HF inits A_log = log(1..H)
    B = rng.standard_normal((T, G, N)).astype(f32)
    C = rng.standard_normal((T, G, N)).astype(f32)
    D = rng.standard_normal(H).astype(f32) if with_D else None
    state = rng.standard_normal((H, P, N)).astype(f32) if with_state else None
    dt_bias = rng.uniform(-3, 1, H).astype(f32) if with_bias else None
    return x, dt, A, B, C, D, state, dt_bias


SHAPES = [  # T, H, G, P, N
    (1, 4, 1, 16, 16),      # decode
    (7, 8, 2, 4, 8),
    (64, 6, 3, 12, 24),
    (7, 4, 1, 64, 128),     # Nemotron-H / Granite-4.0-H head dim and d_state
    (64, 8, 2, 64, 32),
    (1, 6, 3, 7, 13),       # odd sizes: rows left over after blocks of 4, N not a multiple of a vector
    (7, 3, 1, 5, 9),
]


# ---- ssm_scan against the float64 reference ----------------------------------------------------
@pytest.mark.parametrize("T,H,G,P,N", SHAPES)
@pytest.mark.parametrize("with_state,with_D,with_bias", [(True, True, True), (False, False, False),
                                                         (True, False, True), (False, True, False)])
def test_ssm_scan_matches_reference(rng, T, H, G, P, N, with_state, with_D, with_bias):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, T, H, G, P, N, with_state=with_state, with_D=with_D,
                                                    with_bias=with_bias)
    args = (x, dt, A, B, C, D, state, dt_bias)
    before = [None if a is None else a.copy() for a in args]
    y, st = glmbench.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    assert y.dtype == np.float32 and y.shape == (T, H, P)
    assert st.dtype == np.float32 and st.shape == (H, P, N)
    ry, rst = ref.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    close(y, ry)
    close(st, rst)
    for a, b in zip(args, before):   # inputs, the state included, are never modified
        if a is not None:
            np.testing.assert_array_equal(a, b)
    assert st is not state


@pytest.mark.parametrize("kw", [
    dict(dt_softplus=False),                                    # dt taken as it is (may be < 0: clamped to 0)
    dict(dt_softplus=False, dt_min=-np.inf),                    # no clamp at all: negative steps grow S
    dict(dt_min=0.5, dt_max=1.0),                               # both ends of the clamp reached
    dict(dt_min=0.0, dt_max=0.05),
    dict(dt_min=0.2),
    dict(dt_softplus=True, dt_min=0.0, dt_max=float("inf")),    # the defaults, spelt out
])
def test_ssm_scan_dt_options(rng, kw):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, 9, 6, 2, 8, 16)
    if kw.get("dt_min") == -np.inf:
        dt = (0.1 * dt).astype(np.float32)   # small steps either way keep the growth modest
    y, st = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias, **kw)
    ry, rst = ref.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias, **kw)
    close(y, ry)
    close(st, rst)


def test_ssm_scan_softplus_threshold_and_clamp(rng):
    """Above 20 softplus is the identity (torch's threshold); exp(d A) underflows to 0 for a large step
    (the state forgets everything); a zero step leaves the state as it was and writes nothing."""
    x, dt, A, B, C, D, state, _ = scan_inputs(rng, 3, 4, 2, 8, 16)
    big = np.array([[20.5, 21.0, 19.5, 30.0]] * 3, np.float32)
    y, st = ops.ssm_scan(x, big, A, B, C, D, state)
    ry, rst = ref.ssm_scan(x, big, A, B, C, D, state)
    close(y, ry)
    close(st, rst)
    # d = 0 (clamped down to dt_max = 0): dA = 1, no write; y = S C + D x
    y, st = ops.ssm_scan(x, dt, A, B, C, D, state, dt_max=0.0)
    np.testing.assert_array_equal(st, state)
    want = np.einsum("hpn,thn->thp", state.astype(np.float64), np.repeat(C, 2, axis=1)) + D[:, None] * x
    close(y, want)
    # no state, no skip, one token: S = d x B^T and y = d x (B . C)
    d = np.log1p(np.exp(dt[0].astype(np.float64)))
    y, st = ops.ssm_scan(x[:1], dt[:1], A, B[:1], C[:1])
    Bh, Ch = np.repeat(B[0], 2, axis=0), np.repeat(C[0], 2, axis=0)
    close(st, d[:, None, None] * x[0][:, :, None] * Bh[:, None, :])
    close(y[0], d[:, None] * x[0] * (Bh * Ch).sum(-1)[:, None])


def test_ssm_scan_in_pieces_equals_one_call(rng):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, 37, 8, 2, 12, 20)
    kw = dict(dt_bias=dt_bias, dt_min=0.01, dt_max=5.0)
    for s0 in (state, None):
        y, st = ops.ssm_scan(x, dt, A, B, C, D, s0, **kw)
        # the same float32 operations in the same order: bit for bit
        s, parts = s0, []
        for a, b in ((0, 1), (1, 20), (20, 21), (21, 37)):
            yp, s = ops.ssm_scan(x[a:b], dt[a:b], A, B[a:b], C[a:b], D, s, **kw)
            parts.append(yp)
        np.testing.assert_array_equal(np.concatenate(parts), y)
        np.testing.assert_array_equal(s, st)
        s, outs = s0, []
        for t in range(37):   # decode: one token a call
            yt, s = ops.ssm_scan(x[t:t + 1], dt[t:t + 1], A, B[t:t + 1], C[t:t + 1], D, s, **kw)
            outs.append(yt)
        np.testing.assert_array_equal(np.concatenate(outs), y)
        np.testing.assert_array_equal(s, st)


def test_ssm_scan_threads_do_not_change_bits(rng):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, 16, 16, 4, 32, 64)
    n = ops.get_num_threads()
    try:
        ops.set_num_threads(1)
        y1, s1 = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
        ops.set_num_threads(max(2, n))
        y2, s2 = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    finally:
        ops.set_num_threads(n)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(s1, s2)


def test_ssm_scan_strided_inputs(rng):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, 11, 6, 3, 10, 12)
    xw = np.repeat(x, 2, axis=2)[:, :, ::2]                 # a strided view equal to x
    Bw = np.concatenate([B, C], axis=2)[:, :, :12]          # a slice of a wider buffer (as after in_proj)
    Cw = np.concatenate([B, C], axis=2)[:, :, 12:]
    st_f = np.asfortranarray(state)
    dt_t = dt.T.copy().T                                    # Fortran order
    Dv = np.repeat(D, 3)[::3]
    y, st = ops.ssm_scan(xw, dt_t, A[::-1][::-1], Bw, Cw, Dv, st_f, dt_bias=np.repeat(dt_bias, 2)[::2])
    ry, rst = ref.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    close(y, ry)
    close(st, rst)
    y0, s0 = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    np.testing.assert_array_equal(y, y0)   # a copy of the same values: the same bits
    np.testing.assert_array_equal(st, s0)


# ---- against HF transformers' Mamba-2 mixer -------------------------------------------------------
def _hf():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    M = pytest.importorskip("transformers.models.granitemoehybrid.modeling_granitemoehybrid")
    return torch, transformers, M


def _hf_layer(torch, transformers, M, *, hidden, H, P, G, N, K=4, chunk=8, limit=(0.0, float("inf")), seed=0):
    cfg = transformers.GraniteMoeHybridConfig(
        hidden_size=hidden, mamba_n_heads=H, mamba_d_head=P, mamba_n_groups=G, mamba_d_state=N, mamba_expand=2,
        mamba_d_conv=K, mamba_chunk_size=chunk, mamba_conv_bias=True, mamba_proj_bias=False, time_step_limit=limit,
        num_hidden_layers=1, layer_types=["mamba"], num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=hidden, num_local_experts=0, vocab_size=16, rms_norm_eps=1e-5)
    assert cfg.mamba_expand * cfg.hidden_size == H * P
    torch.manual_seed(seed)
    layer = M.GraniteMoeHybridMambaLayer(cfg, 0).eval()
    with torch.no_grad():   # random values where HF's init has constants (A_log = log(1..H), D = dt_bias = 1, ...)
        layer.A_log.copy_(torch.empty(H).uniform_(-1.0, 1.5))
        layer.D.copy_(torch.randn(H))
        layer.dt_bias.copy_(torch.empty(H).uniform_(-3.0, 0.5))
        layer.norm.weight.copy_(1.0 + 0.3 * torch.randn(H * P))
        layer.conv1d.bias.copy_(0.3 * torch.randn(layer.conv_dim))
    return cfg, layer


def _glm_mamba(layer, cfg, x, conv_state=None, ssm_state=None):
    """The same layer from glmbench ops: in_proj (NumPy), causal_conv1d with its bias and silu, ssm_scan,
    the gated RMSNorm per group (NumPy) and out_proj (NumPy). x [T, hidden] -> (out, conv_state, ssm_state)."""
    p = {k: v.detach().numpy().astype(np.float32) for k, v in layer.state_dict().items()}
    H, P, G, N = cfg.mamba_n_heads, cfg.mamba_d_head, cfg.mamba_n_groups, cfg.mamba_d_state
    d_inner, T = H * P, x.shape[0]
    proj = x @ p["in_proj.weight"].T
    gate, xbc, dt = proj[:, :d_inner], proj[:, d_inner:-H], proj[:, -H:]   # strided column slices
    xbc, conv_state = ops.causal_conv1d(xbc, p["conv1d.weight"], conv_state, silu=True, bias=p["conv1d.bias"])
    xs, B, C = xbc[:, :d_inner], xbc[:, d_inner:d_inner + G * N], xbc[:, d_inner + G * N:]
    A = -np.exp(p["A_log"])
    y, ssm_state = ops.ssm_scan(xs.reshape(T, H, P), dt, A, B.reshape(T, G, N), C.reshape(T, G, N), p["D"], ssm_state,
                                dt_bias=p["dt_bias"], dt_min=cfg.time_step_limit[0], dt_max=cfg.time_step_limit[1])
    h = y.reshape(T, d_inner) * (gate / (1 + np.exp(-gate)))
    hg = h.reshape(T, G, d_inner // G)
    hg = hg / np.sqrt((hg * hg).mean(-1, keepdims=True) + np.float32(cfg.rms_norm_eps))
    h = hg.reshape(T, d_inner) * p["norm.weight"]
    return (h @ p["out_proj.weight"].T).astype(np.float32), conv_state, ssm_state


@pytest.mark.parametrize("hidden,H,P,G,N,T,limit", [
    (64, 8, 16, 2, 16, 11, (0.0, float("inf"))),
    (96, 6, 32, 3, 32, 37, (0.0, float("inf"))),
    (64, 4, 32, 1, 64, 1, (0.0, float("inf"))),
    (64, 8, 16, 4, 8, 20, (0.05, 2.0)),        # a time_step_limit that clamps
])
def test_mamba_layer_matches_hf(hidden, H, P, G, N, T, limit):
    torch, transformers, M = _hf()
    cfg, layer = _hf_layer(torch, transformers, M, hidden=hidden, H=H, P=P, G=G, N=N, limit=limit)
    x = np.random.default_rng(T).standard_normal((T, hidden)).astype(np.float32)
    with torch.no_grad():
        want = layer(torch.from_numpy(x)[None])[0].numpy()
    got, _, _ = _glm_mamba(layer, cfg, x)
    close(got, want, rtol=1e-4)


def test_mamba_layer_decode_matches_hf_cache():
    """A 13-token prompt then 4 one-token steps through HF's DynamicCache (its chunked scan, then its
    selective_state_update and causal_conv1d_update), against glmbench's ops with both states carried."""
    torch, transformers, M = _hf()
    from transformers.cache_utils import DynamicCache
    cfg, layer = _hf_layer(torch, transformers, M, hidden=64, H=8, P=16, G=2, N=32)
    xs = np.random.default_rng(3).standard_normal((17, 64)).astype(np.float32)
    cache = DynamicCache(config=cfg)
    conv_state = ssm_state = None
    for a, b in ((0, 13), (13, 14), (14, 15), (15, 16), (16, 17)):
        with torch.no_grad():
            want = layer(torch.from_numpy(xs[a:b])[None], cache=cache)[0].numpy()
        got, conv_state, ssm_state = _glm_mamba(layer, cfg, xs[a:b], conv_state, ssm_state)
        close(got, want, rtol=1e-4)
        close(ssm_state, cache.get_recurrent_state(0, state_idx=0)[0].numpy(), rtol=1e-4)


@pytest.mark.parametrize("T,H,G,P,N,chunk,limit", [
    (37, 8, 2, 16, 32, 8, (0.0, float("inf"))),
    (16, 6, 3, 8, 16, 16, (0.1, 1.5)),
    (5, 4, 1, 64, 128, 256, (0.0, float("inf"))),
])
def test_ssm_scan_matches_hf_scans(rng, T, H, G, P, N, chunk, limit):
    """HF's two scans themselves: mamba2_chunk_scan (a prompt, from a state, with its dt_limit) and
    mamba2_selective_state_update (one token, the state updated in place; it applies no dt_limit, so
    it is compared with the default limits)."""
    torch, _, M = _hf()
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, T, H, G, P, N)
    y, st = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias, dt_min=limit[0], dt_max=limit[1])
    tt = torch.from_numpy
    hy, hs = M.mamba2_chunk_scan(tt(x)[None], tt(dt)[None], tt(A), tt(B)[None], tt(C)[None], chunk_size=chunk, D=tt(D),
                                 dt_bias=tt(dt_bias), initial_states=tt(state)[None], dt_softplus=True, dt_limit=limit,
                                 return_final_states=True)
    close(y, hy[0].numpy(), rtol=2e-5)
    close(st, hs[0].numpy(), rtol=2e-5)
    y, st = ops.ssm_scan(x, dt, A, B, C, D, state, dt_bias=dt_bias)
    hstate = tt(state.copy())[None]
    for t in range(T):
        ht = M.mamba2_selective_state_update(
            hstate, tt(x[t])[None], tt(dt[t])[None, :, None].expand(-1, -1, P), tt(A)[:, None, None].expand(-1, P, N),
            tt(B[t])[None], tt(C[t])[None], tt(D)[:, None].expand(-1, P), dt_bias=tt(dt_bias)[:, None].expand(-1, P),
            dt_softplus=True)
        close(y[t], ht[0].numpy(), rtol=2e-5)
    close(st, hstate[0].numpy(), rtol=2e-5)


# ---- causal_conv1d's bias -----------------------------------------------------------------------
@pytest.mark.parametrize("T,C,K", [(1, 16, 4), (37, 48, 4), (2, 13, 4), (5, 7, 1), (9, 33, 2)])
@pytest.mark.parametrize("silu", [True, False])
def test_causal_conv1d_bias_matches_reference(rng, T, C, K, silu):
    x = rng.standard_normal((T, C)).astype(np.float32)
    w = (rng.standard_normal((C, K)) / np.sqrt(K)).astype(np.float32)
    st = rng.standard_normal((K - 1, C)).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32)
    before = [a.copy() for a in (x, w, st, b)]
    y, ns = ops.causal_conv1d(x, w, st, silu=silu, bias=b)
    ry, rns = ref.causal_conv1d(x, w, st, silu=silu, bias=b)
    close(y, ry)
    np.testing.assert_array_equal(ns, rns)
    for a, c in zip((x, w, st, b), before):
        np.testing.assert_array_equal(a, c)
    # the default (None) is today's op: bit for bit its old 4-argument call, and a zero bias the same
    from glmbench.core._loader import _core
    y0, ns0 = ops.causal_conv1d(x, w, st, silu=silu)
    y4, ns4 = _core.causal_conv1d(x, w, st, silu)
    np.testing.assert_array_equal(y0, y4)
    np.testing.assert_array_equal(ns0, ns4)
    yz, _ = ops.causal_conv1d(x, w, st, silu=silu, bias=np.zeros(C, np.float32))
    np.testing.assert_array_equal(yz, y0)
    close(y0, ref.causal_conv1d(x, w, st, silu=silu)[0])
    # a strided bias is copied
    yb, _ = ops.causal_conv1d(x, w, st, silu=silu, bias=np.repeat(b, 2)[::2])
    np.testing.assert_array_equal(yb, y)


def test_causal_conv1d_bias_matches_hf(rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for T, C, K in [(1, 16, 4), (37, 48, 4), (3, 10, 4)]:
        x = rng.standard_normal((T, C)).astype(np.float32)
        w = (rng.standard_normal((C, 1, K)) / np.sqrt(K)).astype(np.float32)
        b = rng.standard_normal(C).astype(np.float32)
        y, _ = ops.causal_conv1d(x, w, bias=b)
        hy = F.silu(F.conv1d(torch.from_numpy(x.T.copy())[None], torch.from_numpy(w), torch.from_numpy(b),
                             padding=K - 1, groups=C)[:, :, :T])[0].numpy().T
        close(y, hy)


def test_causal_conv1d_bias_bad_input(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    f = ops.causal_conv1d
    with pytest.raises(TypeError, match=r"`bias` must be float32, got float64"):
        f(x, w, bias=np.zeros(6))
    with pytest.raises(ValueError, match=r"`bias` must be 1-D, got shape \(1, 6\)"):
        f(x, w, bias=np.zeros((1, 6), np.float32))
    with pytest.raises(ValueError, match=r"`bias` must be \[C\] = \(6,\), got shape \(5,\)"):
        f(x, w, bias=np.zeros(5, np.float32))
    bad = np.zeros(6, np.float32)
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"`bias` contains inf at flat index 3"):
        f(x, w, bias=bad)


# ---- errors -------------------------------------------------------------------------------------
def test_ssm_scan_bad_input(rng):
    x, dt, A, B, C, D, state, dt_bias = scan_inputs(rng, 3, 4, 2, 8, 16)
    f = ops.ssm_scan
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        f(x.astype(np.float64), dt, A, B, C)
    with pytest.raises(TypeError, match=r"`B` must be float32, got float16"):
        f(x, dt, A, B.astype(np.float16), C)
    with pytest.raises(TypeError, match=r"`state` must be float32, got float64"):
        f(x, dt, A, B, C, D, state.astype(np.float64))
    with pytest.raises(TypeError, match=r"`dt_bias` must be float32, got int64"):
        f(x, dt, A, B, C, dt_bias=np.ones(4, np.int64))
    with pytest.raises(ValueError, match=r"`x` must be 3-D, got shape \(3, 32\)"):
        f(x.reshape(3, 32), dt, A, B, C)
    with pytest.raises(ValueError, match=r"`dt` must be \[T, H\] = \(3, 4\), got shape \(3, 2\)"):
        f(x, dt[:, :2], A, B, C)
    with pytest.raises(ValueError, match=r"`A` must be \[H\] = \(4,\), got shape \(3,\)"):
        f(x, dt, A[:3], B, C)
    with pytest.raises(ValueError, match=r"`B` has shape \(2, 2, 16\): axis 0 must be 3"):
        f(x, dt, A, B[:2], C)
    with pytest.raises(ValueError, match=r"`B` has 3 groups: x's 4 heads must be a multiple of them"):
        f(x, dt, A, np.zeros((3, 3, 16), np.float32), C)
    with pytest.raises(ValueError, match=r"`B` has 0 groups"):
        f(x, dt, A, np.zeros((3, 0, 16), np.float32), C)
    with pytest.raises(ValueError, match=r"`C` must be \[T, G, N\] as B = \(3, 2, 16\), got shape \(3, 2, 15\)"):
        f(x, dt, A, B, C[:, :, :15])
    with pytest.raises(ValueError, match=r"`D` must be \[H\] = \(4,\), got shape \(2,\)"):
        f(x, dt, A, B, C, D[:2])
    with pytest.raises(ValueError, match=r"`dt_bias` must be 1-D, got shape \(4, 1\)"):
        f(x, dt, A, B, C, dt_bias=dt_bias[:, None])
    with pytest.raises(ValueError, match=r"`dt_bias` must be \[H\] = \(4,\), got shape \(5,\)"):
        f(x, dt, A, B, C, dt_bias=np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"`state` must be \[H, P, N\] = \(4, 8, 16\), got shape \(4, 16, 8\)"):
        f(x, dt, A, B, C, D, np.zeros((4, 16, 8), np.float32))
    names = ("x", "dt", "A", "B", "C", "D", "state", "dt_bias")
    for i, name in enumerate(names):
        bad = [a.copy() for a in (x, dt, A, B, C, D, state, dt_bias)]
        bad[i].flat[1] = np.nan if i % 2 else -np.inf
        with pytest.raises(ValueError, match=rf"`{name}` contains (NaN|-?inf) at flat index 1"):
            f(*bad[:7], dt_bias=bad[7])
    with pytest.raises(ValueError, match=r"T, heads, head dim, groups and d_state must be >= 1"):
        f(x[:0], dt[:0], A, B[:0], C[:0])
    with pytest.raises(ValueError, match=r"T, heads, head dim, groups and d_state must be >= 1"):
        f(x[:, :, :0], dt, A, B, C)
    with pytest.raises(ValueError, match=r"`dt_min` and `dt_max` must be numbers with dt_min <= dt_max"):
        f(x, dt, A, B, C, dt_min=1.0, dt_max=0.5)
    with pytest.raises(ValueError, match=r"`dt_min` and `dt_max` must be numbers"):
        f(x, dt, A, B, C, dt_max=float("nan"))
    with pytest.raises(TypeError, match=r"`dt_min` must be a number, got '0'"):
        f(x, dt, A, B, C, dt_min="0")
    with pytest.raises(TypeError, match=r"`dt_max` must be a number, got None"):
        f(x, dt, A, B, C, dt_max=None)


def test_exported():
    assert "ssm_scan" in ops.__all__ and "ssm_scan" in glmbench.__all__
    assert glmbench.ssm_scan is ops.ssm_scan
