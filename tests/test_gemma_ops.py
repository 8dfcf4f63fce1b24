"""Gemma's MLP (GeGLU, gelu_pytorch_tanh) and logit soft-cap against the float64 reference; the
activation against torch's own gelu(approximate="tanh") where torch is installed."""
import numpy as np
import pytest

from glmbench.core import ops
from glmbench.core import reference as ref
from glmbench.models.model import to_format


@pytest.mark.parametrize("fmt,tol", [("f32", 2e-5), ("bf16", 2e-5), ("q8_0", 2e-5)])
def test_geglu_matches_reference(rng, fmt, tol):
    D, F = 64, 96
    x = rng.standard_normal((5, D)).astype(np.float32)
    ws = [to_format(rng.standard_normal(s).astype(np.float32) / np.sqrt(s[1]), fmt) for s in ((F, D), (F, D), (D, F))]
    x0 = x.copy()
    y = ops.geglu(x, *ws)
    deq = [w.dequantize() if hasattr(w, "dequantize") else w for w in ws]
    want = ref.geglu(x, *deq)
    if fmt == "q8_0":   # the quantized kernels multiply by q8_0-rounded activations (ggml's CPU path)
        tol = 2e-2
    np.testing.assert_allclose(y, want, rtol=0, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(x, x0)
    assert ops.geglu(x[0], *ws).shape == (D,)


def test_gelu_tanh_matches_torch():
    torch = pytest.importorskip("torch")
    g = np.linspace(-12, 12, 20001, dtype=np.float32)
    want = torch.nn.functional.gelu(torch.from_numpy(g), approximate="tanh").numpy()
    np.testing.assert_allclose(ops._gelu_tanh(g.copy()), want, rtol=0, atol=2e-6)
    np.testing.assert_allclose(ref.gelu_tanh(g), want, rtol=0, atol=2e-6)


def test_softcap(rng):
    x = 40 * rng.standard_normal((3, 50)).astype(np.float32)
    x0 = x.copy()
    y = ops.softcap(x, 30.0)
    np.testing.assert_allclose(y, ref.softcap(x, 30.0), rtol=0, atol=5e-6)
    assert np.abs(y).max() < 30.0 and y.dtype == np.float32
    np.testing.assert_array_equal(x, x0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"`cap` must be a positive finite number"):
            ops.softcap(x, bad)
    with pytest.raises(TypeError, match=r"`x` must be a numpy.ndarray"):
        ops.geglu([1.0], x, x, x)


@pytest.mark.parametrize("mt", ["gemma2", "gemma3_text"])
def test_a_gemma_config_with_another_activation_is_refused_not_run_as_geglu(mt):
    """Gemma 2 / 3's layers run GeGLU (gelu_pytorch_tanh) only: a config whose hidden_activation is silu is named by
    forward_unsupported and refused by Model (it ran as GeGLU, its logits ~8% off HF's, with nothing said)."""
    from glmbench.models import configs
    from glmbench.models.model import Model
    base = dict(model_type=mt, vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8, query_pre_attn_scalar=16,
                rms_norm_eps=1e-6, max_position_embeddings=64, rope_theta=10000.0)
    assert configs.from_hf(dict(base, hidden_activation="gelu_pytorch_tanh")).forward_unsupported() == []
    cfg = configs.from_hf(dict(base, hidden_activation="silu"))
    assert any("hidden_activation 'silu'" in x for x in cfg.forward_unsupported())
    with pytest.raises(Exception, match="hidden_activation 'silu'"):
        Model(cfg, max_context=16)


def test_mlp_weight_errors_name_the_weight(rng):
    """geglu (and quant.swiglu, which ops.swiglu calls for QTensor weights) named their inner calls'
    arguments: a wrong w_up was "`g` and `u` must have the same shape", a wrong w_down "`weight` has shape
    (8, 3) ... x.shape[-1]", and a NaN gate weight or an overflow "`x` contains NaN / inf" though x was finite.
    Now the weight is named, and a non-finite activation is said to be one."""
    from glmbench.core import quant
    x = rng.standard_normal((3, 32)).astype(np.float32)
    g, u, d = (rng.standard_normal(s).astype(np.float32) * 0.1 for s in ((64, 32), (64, 32), (32, 64)))
    for fn, W in ((ops.geglu, lambda a: a), (ops.swiglu, lambda a: quant.quantize(np.ascontiguousarray(a), "q8_0"))):
        with pytest.raises(ValueError, match=r"`w_up` has shape \(32, 32\); .* need \(64, 32\)"):
            fn(x, W(g), W(u[:32]), W(d))
        with pytest.raises(ValueError, match=r"`w_down` has shape \(32, 32\); .* need \(32, 64\)"):
            fn(x, W(g), W(u), W(d[:, :32]))
    with pytest.raises(ValueError, match=r"geglu: gelu_tanh\(gate x\) \* up x is not finite"):
        ops.geglu(x, np.full_like(g, np.nan), u, d)
    with pytest.raises(ValueError, match=r"geglu: gelu_tanh\(gate x\) \* up x is not finite"):
        ops.geglu(np.full_like(x, 1e30), g, u, d)
    np.testing.assert_allclose(ops.geglu(x, g, u, d), ref.geglu(x, g, u, d), rtol=0, atol=1e-5)


def test_scalar_arguments_are_named(rng):
    """A non-number scalar raised float()'s own message ("could not convert string to float: 'a'", "float()
    argument must be ... not 'NoneType'"), naming no argument; softcap took cap=True as 1.0."""
    x = rng.standard_normal((2, 8)).astype(np.float32)
    w = np.ones(8, np.float32)
    for call, name in ((lambda v: ops.softcap(x, v), "cap"), (lambda v: ops.rms_norm(x, w, v), "eps"),
                       (lambda v: ops.layer_norm(x, w, v), "eps"),
                       (lambda v: ops.moe_route(x, w[None].repeat(4, 0), top_k=2, routed_scaling_factor=v),
                        "routed_scaling_factor")):
        for bad in ("a", None, True):
            with pytest.raises(TypeError, match=rf"`{name}` must be a number"):
                call(bad)
