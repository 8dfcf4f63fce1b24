"""The Gated DeltaNet ops (Qwen3-Next / Qwen3.5 linear attention): gated_delta_rule and causal_conv1d
against their float64 references, HF transformers (where torch and transformers import) and their own
properties (pieces with the state carried, decay/beta edge cases, inputs untouched, errors)."""
import numpy as np
import pytest

import glmbench
from glmbench.core import ops
from glmbench.core import reference as ref

# float32 state updated T times, dot products of dk / K terms in float32: ~1e-7 relative to the
# output's scale; 1e-5 of the largest magnitude leaves room for long prefills.
RTOL = 1e-5


def close(got, want, rtol=RTOL):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max())))


def gdr_inputs(rng, T, Hk, Hv, dk, dv, with_state=True):
    q = rng.standard_normal((T, Hk, dk)).astype(np.float32)
    k = rng.standard_normal((T, Hk, dk)).astype(np.float32)
    v = rng.standard_normal((T, Hv, dv)).astype(np.float32)
    # as the layer makes them: g = -exp(A_log) * softplus(a + dt_bias) <= 0, beta = sigmoid(b)
    g = (-np.exp(rng.uniform(-1, 1, (T, Hv))) * np.log1p(np.exp(rng.standard_normal((T, Hv))))).astype(np.float32)
    beta = (1 / (1 + np.exp(-rng.standard_normal((T, Hv))))).astype(np.float32)
    state = rng.standard_normal((Hv, dk, dv)).astype(np.float32) if with_state else None
    return q, k, v, g, beta, state


SHAPES = [  # T, Hk, Hv, dk, dv
    (1, 2, 2, 16, 16),      # decode, Hv == Hk
    (37, 2, 2, 32, 32),     # prefill
    (37, 2, 4, 24, 40),     # Hv = 2 Hk, dk != dv
    (1, 3, 6, 7, 13),       # odd sizes
    (37, 1, 3, 17, 9),
    (9, 4, 8, 128, 128),    # Qwen3.5's head dims
]


# ---- gated_delta_rule ---------------------------------------------------------------------
@pytest.mark.parametrize("T,Hk,Hv,dk,dv", SHAPES)
@pytest.mark.parametrize("with_state", [True, False])
def test_gated_delta_rule_matches_reference(rng, T, Hk, Hv, dk, dv, with_state):
    args = gdr_inputs(rng, T, Hk, Hv, dk, dv, with_state)
    before = [None if a is None else a.copy() for a in args]
    o, st = glmbench.gated_delta_rule(*args)
    assert o.dtype == np.float32 and o.shape == (T, Hv, dv)
    assert st.dtype == np.float32 and st.shape == (Hv, dk, dv)
    ro, rst = ref.gated_delta_rule(*args)
    close(o, ro)
    close(st, rst)
    for a, b in zip(args, before):  # inputs, the state included, are never modified
        if a is not None:
            np.testing.assert_array_equal(a, b)
    assert st is not args[5]


@pytest.mark.parametrize("qk_l2norm,scale,l2_eps", [(False, 0.3, 1e-6), (True, 1.0, 1e-3), (False, None, 0.0)])
def test_gated_delta_rule_options(rng, qk_l2norm, scale, l2_eps):
    q, k, v, g, beta, state = gdr_inputs(rng, 13, 2, 4, 12, 20)
    if not qk_l2norm:   # unnormalised keys: keep the delta rule stable (|k|^2 beta < 2)
        k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).astype(np.float32)
    kw = dict(scale=scale, qk_l2norm=qk_l2norm, l2_eps=l2_eps)
    o, st = ops.gated_delta_rule(q, k, v, g, beta, state, **kw)
    ro, rst = ref.gated_delta_rule(q, k, v, g, beta, state, **kw)
    close(o, ro)
    close(st, rst)


def test_gated_delta_rule_in_pieces_equals_one_call(rng):
    q, k, v, g, beta, state = gdr_inputs(rng, 37, 2, 4, 24, 40)
    o, st = ops.gated_delta_rule(q, k, v, g, beta, state)
    o1, s1 = ops.gated_delta_rule(q[:20], k[:20], v[:20], g[:20], beta[:20], state)
    o2, s2 = ops.gated_delta_rule(q[20:], k[20:], v[20:], g[20:], beta[20:], s1)
    # the same float32 operations in the same order: bit for bit
    np.testing.assert_array_equal(np.concatenate([o1, o2]), o)
    np.testing.assert_array_equal(s2, st)
    s, outs = state, []
    for t in range(5):   # decode: one token a call
        ot, s = ops.gated_delta_rule(q[t:t + 1], k[t:t + 1], v[t:t + 1], g[t:t + 1], beta[t:t + 1], s)
        outs.append(ot)
    o5, s5 = ops.gated_delta_rule(q[:5], k[:5], v[:5], g[:5], beta[:5], state)
    np.testing.assert_array_equal(np.concatenate(outs), o5)
    np.testing.assert_array_equal(s, s5)


def test_gated_delta_rule_no_decay_no_write(rng):
    q, k, v, g, beta, state = gdr_inputs(rng, 6, 2, 4, 16, 8)
    zero = np.zeros_like(g)
    o, st = ops.gated_delta_rule(q, k, v, zero, zero, state)
    np.testing.assert_array_equal(st, state)   # exp(0) = 1 and a zero write: the state stays as it was
    qn = q / np.sqrt(np.sum(q.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-6) / 4.0   # dk ** -0.5
    want = np.einsum("thi,thij->thj", np.repeat(qn, 2, axis=1), np.broadcast_to(state, (6, 4, 16, 8)))
    close(o, want)
    # beta = 0 with a decay: the state only decays
    o, st = ops.gated_delta_rule(q, k, v, g, zero, state)
    close(st, state * np.exp(g.astype(np.float64).sum(axis=0))[:, None, None])
    # no state, beta = 1, g = 0, one token: S = k v^T, and reading it back with k gives |k|^2 v ~ v
    one = np.ones((1, 4), np.float32)
    o, st = ops.gated_delta_rule(q[:1], k[:1], v[:1], np.zeros((1, 4), np.float32), one)
    kn = k[0] / np.linalg.norm(k[0].astype(np.float64), axis=-1, keepdims=True)
    close(st, np.repeat(kn, 2, axis=0)[:, :, None] * v[0][:, None, :])
    close(np.einsum("hi,hij->hj", np.repeat(kn, 2, axis=0), st), v[0], rtol=1e-5)


def test_gated_delta_rule_strided_inputs(rng):
    q, k, v, g, beta, state = gdr_inputs(rng, 11, 2, 4, 10, 6)
    big = np.repeat(v, 2, axis=2)[:, :, ::2]   # a strided view equal to v
    st_f = np.asfortranarray(state)
    o, st = ops.gated_delta_rule(q, k, big, g.T.copy().T, beta, st_f)
    ro, rst = ref.gated_delta_rule(q, k, v, g, beta, state)
    close(o, ro)
    close(st, rst)


def test_gated_delta_rule_matches_hf(rng):
    torch = pytest.importorskip("torch")
    M = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")
    for T, Hk, Hv, dk, dv in [(1, 2, 4, 16, 24), (37, 2, 4, 24, 40), (70, 2, 2, 32, 32)]:
        q, k, v, g, beta, state = gdr_inputs(rng, T, Hk, Hv, dk, dv)
        o, st = ops.gated_delta_rule(q, k, v, g, beta, state)

        def tt(a):
            return torch.from_numpy(a.copy())[None]   # HF: [B, T, H, d], state [B, Hv, dk, dv]
        for fn in (M.torch_recurrent_gated_delta_rule, M.torch_chunk_gated_delta_rule):
            ho, hs = fn(tt(q), tt(k), tt(v), tt(g), tt(beta), initial_state=tt(state), output_final_state=True,
                        use_qk_l2norm_in_kernel=True)
            close(o, ho[0].numpy(), rtol=2e-5)
            close(st, hs[0].numpy(), rtol=2e-5)


def test_gated_delta_rule_bad_input(rng):
    q, k, v, g, beta, state = gdr_inputs(rng, 3, 2, 4, 8, 16)
    f = ops.gated_delta_rule
    with pytest.raises(TypeError, match=r"`q` must be float32, got float64"):
        f(q.astype(np.float64), k, v, g, beta)
    with pytest.raises(TypeError, match=r"`state` must be float32, got float64"):
        f(q, k, v, g, beta, state.astype(np.float64))
    with pytest.raises(ValueError, match=r"`v` must be 3-D, got shape \(3, 64\)"):
        f(q, k, v.reshape(3, 64), g, beta)
    with pytest.raises(ValueError, match=r"`q` must be 3-D \[T, Hk, dk\], got shape \(3, 16\)"):
        f(q.reshape(3, 16), k, v, g, beta)
    with pytest.raises(ValueError, match=r"`k` must be \[T, Hk, dk\] as q = \(3, 2, 8\), got shape \(3, 2, 9\)"):
        f(q, np.zeros((3, 2, 9), np.float32), v, g, beta)
    with pytest.raises(ValueError, match=r"`v` has shape \(2, 4, 16\): axis 0 must be 3"):
        f(q, k, v[:2], g, beta)
    with pytest.raises(ValueError, match=r"`v` has 3 heads: they must be a multiple of q and k's 2 heads"):
        f(q, k, v[:, :3], g[:, :3], beta[:, :3])
    with pytest.raises(ValueError, match=r"`g` must be \[T, Hv\] = \(3, 4\), got shape \(3, 2\)"):
        f(q, k, v, g[:, :2], beta)
    with pytest.raises(ValueError, match=r"`beta` must be \[T, Hv\] = \(3, 4\), got shape \(4, 3\)"):
        f(q, k, v, g, beta.T.copy())
    with pytest.raises(ValueError, match=r"`state` must be \[Hv, dk, dv\] = \(4, 8, 16\), got shape \(4, 16, 8\)"):
        f(q, k, v, g, beta, np.zeros((4, 16, 8), np.float32))
    for name, i in (("q", 0), ("k", 1), ("v", 2), ("g", 3), ("beta", 4), ("state", 5)):
        bad = [a.copy() for a in (q, k, v, g, beta, state)]
        bad[i].flat[5] = np.nan if i % 2 else np.inf
        with pytest.raises(ValueError, match=rf"`{name}` contains (NaN|inf) at flat index 5"):
            f(*bad)
    with pytest.raises(ValueError, match=r"T, heads and head dims must be >= 1"):
        f(q[:0], k[:0], v[:0], g[:0], beta[:0])
    with pytest.raises(ValueError, match=r"T, heads and head dims must be >= 1, got T=3 Hk=2 Hv=4 dk=0"):
        f(q[..., :0], k[..., :0], v, g, beta)   # was ZeroDivisionError from the default scale dk ** -0.5
    with pytest.raises(ValueError, match=r"`l2_eps` must be finite and >= 0"):
        f(q, k, v, g, beta, l2_eps=-1.0)
    with pytest.raises(ValueError, match=r"`scale` must be finite"):
        f(q, k, v, g, beta, scale=float("nan"))


# ---- causal_conv1d --------------------------------------------------------------------------
CONV_SHAPES = [  # T, C, K
    (1, 16, 4),     # decode
    (37, 48, 4),    # prefill (Qwen3.5's kernel size)
    (2, 13, 4),     # fewer tokens than the state holds
    (5, 7, 1),      # no state at all
    (9, 33, 2),
    (37, 1, 3),
]


def conv_inputs(rng, T, C, K, with_state=True):
    x = rng.standard_normal((T, C)).astype(np.float32)
    w = (rng.standard_normal((C, K)) / np.sqrt(K)).astype(np.float32)
    st = rng.standard_normal((K - 1, C)).astype(np.float32) if with_state else None
    return x, w, st


@pytest.mark.parametrize("T,C,K", CONV_SHAPES)
@pytest.mark.parametrize("with_state", [True, False])
@pytest.mark.parametrize("silu", [True, False])
def test_causal_conv1d_matches_reference(rng, T, C, K, with_state, silu):
    x, w, st = conv_inputs(rng, T, C, K, with_state)
    before = [None if a is None else a.copy() for a in (x, w, st)]
    y, ns = glmbench.causal_conv1d(x, w, st, silu=silu)
    assert y.dtype == np.float32 and y.shape == (T, C)
    assert ns.dtype == np.float32 and ns.shape == (K - 1, C)
    ry, rns = ref.causal_conv1d(x, w, st, silu=silu)
    close(y, ry)
    np.testing.assert_array_equal(ns, rns)   # a copy of inputs: exact
    for a, b in zip((x, w, st), before):
        if a is not None:
            np.testing.assert_array_equal(a, b)
    # HF's conv1d.weight [C, 1, K] is the same weight
    y3, ns3 = glmbench.causal_conv1d(x, w[:, None, :], st, silu=silu)
    np.testing.assert_array_equal(y3, y)
    np.testing.assert_array_equal(ns3, ns)


def test_causal_conv1d_in_pieces_equals_one_call(rng):
    x, w, st = conv_inputs(rng, 37, 24, 4)
    y, ns = ops.causal_conv1d(x, w, st)
    s, parts = st, []
    for a, b in ((0, 1), (1, 3), (3, 20), (20, 37)):
        yp, s = ops.causal_conv1d(x[a:b], w, s)
        parts.append(yp)
    np.testing.assert_array_equal(np.concatenate(parts), y)
    np.testing.assert_array_equal(s, ns)


def test_causal_conv1d_strided_inputs(rng):
    x, w, st = conv_inputs(rng, 10, 12, 4)
    y, ns = ops.causal_conv1d(np.asfortranarray(x), np.repeat(w, 2, axis=1)[:, ::2], st[::-1][::-1])
    ry, rns = ref.causal_conv1d(x, w, st)
    close(y, ry)
    np.testing.assert_array_equal(ns, rns)


def test_causal_conv1d_matches_hf(rng):
    torch = pytest.importorskip("torch")
    M = pytest.importorskip("transformers.models.qwen3_5.modeling_qwen3_5")
    F = torch.nn.functional
    for T, C, K in [(1, 16, 4), (37, 48, 4), (3, 10, 4), (20, 9, 2)]:
        x, w, _ = conv_inputs(rng, T, C, K)
        y, ns = ops.causal_conv1d(x, w[:, None, :])
        # HF's prefill: nn.Conv1d(groups=C, padding=K-1), the first T outputs, then silu
        xt = torch.from_numpy(x.T.copy())[None]
        wt = torch.from_numpy(w[:, None, :].copy())
        hy = F.silu(F.conv1d(xt, wt, None, padding=K - 1, groups=C)[:, :, :T])[0].numpy().T
        close(y, hy)
        np.testing.assert_array_equal(ns, np.concatenate([np.zeros((K - 1, C), np.float32), x])[T:])
        # HF's decode step (causal_conv1d_update) token by token against one call per token here;
        # its conv_state is [B, C, state_len], updated in place
        xs = rng.standard_normal((5, C)).astype(np.float32)
        conv_state = torch.from_numpy(ns.T.copy())[None]
        s = ns
        for t in range(5):
            yt, s = ops.causal_conv1d(xs[t:t + 1], w, s)
            ht = M.causal_conv1d_update(torch.from_numpy(xs[t:t + 1].T.copy())[None], conv_state,
                                        torch.from_numpy(w.copy()), None, activation="silu")
            close(yt, ht[0].numpy().T)
            np.testing.assert_array_equal(s, conv_state[0].numpy().T)


def test_causal_conv1d_bad_input(rng):
    x, w, st = conv_inputs(rng, 4, 6, 4)
    f = ops.causal_conv1d
    with pytest.raises(TypeError, match=r"`x` must be float32, got float64"):
        f(x.astype(np.float64), w)
    with pytest.raises(TypeError, match=r"`weight` must be float32, got float16"):
        f(x, w.astype(np.float16))
    with pytest.raises(ValueError, match=r"`x` must be 2-D, got shape \(24,\)"):
        f(x.reshape(-1), w)
    with pytest.raises(ValueError, match=r"a 3-D `weight` must be HF's conv1d.weight \[C, 1, K\], got shape \(6, 2, 2\)"):
        f(x, w.reshape(6, 2, 2))
    with pytest.raises(ValueError, match=r"`weight` has shape \(5, 4\): axis 0 must be 6 to match x.shape\[1\]"):
        f(x, w[:5])
    with pytest.raises(ValueError, match=r"`weight` has shape \(6, 0\): the kernel size \(axis 1\) must be >= 1"):
        f(x, w[:, :0])
    with pytest.raises(ValueError, match=r"`state` must be \[K-1, C\] = \(3, 6\), got shape \(4, 6\)"):
        f(x, w, np.zeros((4, 6), np.float32))
    with pytest.raises(ValueError, match=r"`state` must be 2-D"):
        f(x, w, st[None])
    for name, args in (("x", (x, w, st)), ("weight", (x, w, st)), ("state", (x, w, st))):
        bad = [a.copy() for a in args]
        bad[("x", "weight", "state").index(name)].flat[2] = np.nan
        with pytest.raises(ValueError, match=rf"`{name}` contains NaN at flat index 2"):
            f(*bad)
    with pytest.raises(ValueError, match=r"T, channels and kernel size must be >= 1"):
        f(x[:0], w)


def test_exported():
    for name in ("gated_delta_rule", "causal_conv1d"):
        assert name in ops.__all__ and name in glmbench.__all__
        assert getattr(glmbench, name) is getattr(ops, name)
