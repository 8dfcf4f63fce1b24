"""Typed wrappers over glmbench.core._core: each documents shapes and dtypes and allocates outputs.
Inputs are never modified. float32 activations; weights float32, float16 or bfloat16 (uint16).

Families (one section each, in the same order as csrc/): norm, rope, linear, swiglu, moe,
attention (GQA, MLA), KV cache, quant.
"""
from __future__ import annotations

import os

import numpy as np

from glmbench import vocab
from glmbench.core import quant as _quant
from glmbench.core._loader import _core

__all__ = ["set_num_threads", "get_num_threads", "workspace_bytes", "reset_workspace_peak",
           "workspace_blocks", "rms_norm", "layer_norm"]


# ---- threads and workspace ----------------------------------------------------------------
def max_threads() -> int:
    """The most threads set_num_threads accepts: the larger of 4096 and 64 per processor (no
    machine runs more useful threads; a larger count is a typo that OpenMP would try to honour).
    csrc/module.c applies the same bound."""
    return max(4096, 64 * (os.cpu_count() or 1))


def set_num_threads(n: int) -> None:
    """Threads used by the C core (OpenMP) and by OpenBLAS: 1 to max_threads()."""
    hi = max_threads()
    n = vocab.check_int("n", n, 1)
    if n > hi:
        raise ValueError(f"`n` must be <= {hi} (the larger of 4096 and 64 x the {os.cpu_count()} processors), got {n}")
    _core.set_num_threads(n)


def keep_heap() -> bool:
    """Keep the heap's freed blocks (up to 32 MiB) mapped for reuse, process-wide (glibc mallopt;
    csrc/module.c says why): a model's per-call activations then reuse warm pages instead of new
    ones the kernel zeroes on first touch. Returns False where the C library has no such control.
    glmbench.models.model.Model calls it when built."""
    return bool(_core.keep_heap())


def get_num_threads() -> int:
    return _core.get_num_threads()


def workspace_bytes() -> tuple[int, int]:
    """(current, peak) bytes of scratch the C kernels hold: now, and the most since the last
    reset_workspace_peak() (or since import). Kernels free their scratch before returning, so
    between calls `current` is 0 unless another thread is inside an op. The KV cache's blocks and
    NumPy arrays (weights, activations, outputs) are not workspace."""
    return _core.workspace_bytes()


def reset_workspace_peak() -> None:
    """Start a new peak window: peak := current. Read it after the ops with workspace_bytes()[1]."""
    _core.reset_workspace_peak()


def workspace_blocks() -> int:
    """Live workspace blocks (0 between ops, when nothing leaked)."""
    return _core.workspace_blocks()


def _float_arg(name: str, v) -> float:
    """float(v) for a scalar argument, or one TypeError naming it (float() alone says "could not convert
    string to float: 'a'" or "float() argument must be ... not 'NoneType'", naming nothing)."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number, got {type(v).__name__} {v!r}") from None


# ---- norm ---------------------------------------------------------------------------------
def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """RMSNorm over the last axis. x: [..., D] float32, weight: [D] float32 -> same shape."""
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    shape = x.shape
    if x.ndim < 1 or shape[-1] < 1:
        raise ValueError(f"`x` must have at least 1 dimension and a last axis of at least 1, got shape {shape}")
    y = _core.rms_norm(x.reshape(-1, shape[-1]) if x.ndim != 2 else x, weight, _float_arg("eps", eps))
    return y.reshape(shape)


def layer_norm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the last axis without a bias (Cohere's CohereLayerNorm): (x - mean) /
    sqrt(var + eps) * weight. x: [..., D] float32; weight: [D] float32, or [H, D] for x [..., H, D]
    (Command-R+'s per-head q / k norms: head h takes row h) -> same shape as x."""
    x = np.asarray(x) if not isinstance(x, np.ndarray) else x
    w = np.asarray(weight) if not isinstance(weight, np.ndarray) else weight
    shape = x.shape
    if x.ndim < 1 or shape[-1] < 1:
        raise ValueError(f"`x` must have at least 1 dimension and a last axis of at least 1, got shape {shape}")
    if w.ndim == 2 and (x.ndim < 2 or x.shape[-2] != w.shape[0]):
        raise ValueError(f"a per-head `weight` of shape {w.shape} needs x [..., {w.shape[0]}, {w.shape[1]}], "
                         f"got {shape}")
    if w.ndim not in (1, 2):
        raise ValueError(f"`weight` must be [D] or [heads, D], got shape {w.shape}")
    y = _core.layer_norm(x.reshape(-1, shape[-1]) if x.ndim != 2 else x, w.reshape(-1, w.shape[-1]),
                         _float_arg("eps", eps))
    return y.reshape(shape)


# ---- rope ---------------------------------------------------------------------------------
__all__ += ["rope"]

_ROPE_LAYOUTS = {"interleaved": 0, "half": 1}


def _int_arg(name: str, v) -> int:
    """An integer argument (Python or NumPy int, not bool), else TypeError naming it."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"`{name}` must be an int, got {v!r}")
    return int(v)


def rope(x: np.ndarray, positions: np.ndarray, *, theta: float, rot_dim: int, rot_offset: int = 0,
         layout: str = "interleaved", inv_freq: np.ndarray | None = None,
         attention_factor: float = 1.0) -> np.ndarray:
    """Rotary embedding of x[T, H, Dh] float32 at positions[T] int64; returns a new [T, H, Dh].

    Rotates x[..., rot_offset:rot_offset+rot_dim] (partial rope); the rest is copied unchanged.
    Pair i (0 <= i < rot_dim/2) turns by the angle positions[t] * inv_freq[i], where inv_freq
    defaults to theta**(-2i/rot_dim); the angle, cos and sin are computed in float64, the rotation
    in float32.

    inv_freq: None, or float64 [rot_dim/2], finite and > 0 -- scaled frequencies (YaRN, linear;
        see ModelConfig.rope_inv_freq). theta is then unused (still validated). (Frequencies of 0:
        rope_proportional.)
    attention_factor: cos and sin are multiplied by it (HF's `attention_scaling`, YaRN's mscale
        ratio; ModelConfig.rope_attention_factor), so the rotated slice is scaled by it; finite, > 0.

    layout="interleaved": pair i is (x[2i], x[2i+1]) and the output keeps that order. This is
        DeepSeek-V2's original `apply_rotary_emb` (view_as_complex) and llama.cpp's deepseek2 rope.
        HF transformers' glm4_moe_lite / deepseek_v3 with `rope_interleave=True` (the default;
        `apply_rotary_pos_emb_interleave`, checked in transformers 5.24) rotates the same pairs by
        the same angles but writes the result DE-INTERLEAVED: HF's rope slice equals
        ``ours[..., 0::2]`` followed by ``ours[..., 1::2]``, i.e.
        ``hf = np.concatenate([y[..., off:off+r:2], y[..., off+1:off+r:2]], -1)``.
        Because HF permutes q_rope and k_rope the same way, q.k (and so attention) is identical;
        only the stored/raw rope vectors differ by that permutation. HF also computes its cos/sin
        in float32, so at large positions (e.g. 1e5) its angles differ from ours by ~1e-2 rad.
    layout="half": pair i is (x[i], x[i + rot_dim/2]) -- HF `rotate_half` (Llama, Qwen3, and
        glm4_moe_lite with `rope_interleave=False`), equal to HF's output in place (no permutation).
    """
    if layout not in _ROPE_LAYOUTS:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    if isinstance(attention_factor, bool) or not isinstance(attention_factor, (int, float, np.integer, np.floating)):
        raise TypeError(f"`attention_factor` must be a number, got {attention_factor!r}")
    return _core.rope(x, positions, float(theta), _int_arg("rot_dim", rot_dim), _int_arg("rot_offset", rot_offset),
                      _ROPE_LAYOUTS[layout], inv_freq=inv_freq, attention_factor=float(attention_factor))


__all__ += ["rope_proportional"]


def rope_proportional(x: np.ndarray, positions: np.ndarray, *, theta: float, rot_dim: int, rot_offset: int = 0,
                      layout: str = "half", inv_freq: np.ndarray, attention_factor: float = 1.0) -> np.ndarray:
    """`rope` where inv_freq [rot_dim/2] (float64, finite) may hold zeros: a pair of frequency 0 is not turned
    (cos 0 = 1, sin 0 = 0: only scaled by attention_factor). Gemma 4's "proportional" rope (transformers
    5.25 _compute_proportional_rope_parameters; ModelConfig.layer_rope) turns the first pairs of the head
    and leaves the rest, in HF's rotate_half pairing over the whole head. The turning pairs are gathered,
    in the layout's order, into a slice of their own that the C core's rope rotates; the result equals
    glmbench.core.reference.rope with the same inv_freq. x[T, H, Dh] float32 -> a new [T, H, Dh]."""
    if not isinstance(x, np.ndarray) or x.ndim != 3 or x.dtype != np.float32:
        raise TypeError(f"`x` must be a float32 numpy.ndarray [T, H, Dh], got "
                        f"{getattr(x, 'dtype', type(x).__name__)} of shape {np.shape(x)}")
    if layout not in _ROPE_LAYOUTS:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    rot_dim, rot_offset = _int_arg("rot_dim", rot_dim), _int_arg("rot_offset", rot_offset)
    if rot_dim < 2 or rot_dim % 2 or rot_offset < 0 or rot_offset + rot_dim > x.shape[2]:
        raise ValueError(f"`rot_dim`={rot_dim} (even, >= 2) at `rot_offset`={rot_offset} must fit in the head dim "
                         f"{x.shape[2]}")
    if not isinstance(inv_freq, np.ndarray) or inv_freq.dtype != np.float64 or inv_freq.shape != (rot_dim // 2,):
        raise ValueError(f"`inv_freq` must be a float64 array of rot_dim/2 = {rot_dim // 2} frequencies, got "
                         f"{getattr(inv_freq, 'dtype', type(inv_freq).__name__)} of shape {np.shape(inv_freq)}")
    if not (np.isfinite(inv_freq).all() and (inv_freq >= 0).all()):
        raise ValueError("`inv_freq` must be finite and >= 0")
    if isinstance(attention_factor, bool) or not isinstance(attention_factor, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(attention_factor) and attention_factor > 0):
        raise ValueError(f"`attention_factor` must be a finite number > 0, got {attention_factor!r}")
    half = rot_dim // 2
    turn = np.flatnonzero(inv_freq > 0)
    if layout == "half":    # pair i = (x[i], x[i + half]): the slice [firsts | seconds] keeps that layout
        idx = np.concatenate([turn, turn + half])
    else:                   # interleaved: pair i = (x[2i], x[2i + 1])
        idx = np.stack([2 * turn, 2 * turn + 1], axis=1).reshape(-1)
    idx = idx + rot_offset
    y = np.array(x, dtype=np.float32, copy=True)
    if attention_factor != 1.0:
        y[..., rot_offset:rot_offset + rot_dim] *= np.float32(attention_factor)
    # (with no pair turning, the C core still checks x and positions on a one-pair slice)
    part = np.ascontiguousarray(x[..., idx if turn.size else slice(rot_offset, rot_offset + 2)])
    r = _core.rope(part, positions, float(theta), int(part.shape[2]), 0, _ROPE_LAYOUTS[layout],
                   inv_freq=np.ascontiguousarray(inv_freq[turn]) if turn.size else None,
                   attention_factor=float(attention_factor))
    if turn.size:
        y[..., idx] = r
    return y


# ---- linear ------------------------------------------------------------------------------
__all__ += ["linear"]


def linear(x: np.ndarray, weight, bias: np.ndarray | None = None) -> np.ndarray:
    """y = x @ weight.T (+ bias). x: [T, K] or [K] float32; weight: [N, K] (HF layout) float32,
    float16, or bfloat16 bits as uint16; bias: [N] float32 or None -> [T, N] or [N] float32.

    float32 weights go to OpenBLAS (sgemv / sgemm). 16-bit weights: T <= 64 uses the hand-written
    GEMV/register-tile kernel (weights read once, converted in registers; decode is
    bandwidth-bound); T > 64 converts ~8 MiB panels of rows to float32 and calls sgemm.
    Accumulation is float32.
    x may be strided (copied). A strided weight is accepted but copied on every call (a full
    extra read and write of the matrix): pass contiguous weights. NaN/inf in x -> ValueError.
    """
    # Dispatch on the weight's type; other weight kinds (e.g. quantized tensors) add a branch here.
    if isinstance(weight, np.ndarray):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
        if x.ndim == 1:
            return _core.linear(x[None, :], weight, bias)[0]
        return _core.linear(x, weight, bias)
    if isinstance(weight, _quant.QTensor):  # ggml q8_0/q4_0 blocks: glmbench/quant.py
        return _quant.linear(x, weight, bias)
    raise TypeError(f"`weight` must be a numpy.ndarray (float32, float16 or uint16 bf16) or a quant.QTensor, "
                    f"got {type(weight).__name__}")


# ---- swiglu ------------------------------------------------------------------------------
__all__ += ["swiglu"]


def swiglu(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:
    """down(silu(gate x) * up x). x: [T, D] (or [D]) float32; w_gate, w_up: [F, D]; w_down: [D, F]
    (each float32, float16 or uint16 bf16) -> [T, D] (or [D]) float32. For one token with gate
    and up in the same format, gate and up are computed in one fused pass."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
    if any(isinstance(w, _quant.QTensor) for w in (w_gate, w_up, w_down)):  # glmbench/quant.py
        return _quant.swiglu(x, w_gate, w_up, w_down)
    if x.ndim == 1:
        return _core.swiglu(x[None, :], w_gate, w_up, w_down)[0]
    return _core.swiglu(x, w_gate, w_up, w_down)


__all__ += ["geglu", "softcap"]


def _gelu_tanh(g: np.ndarray) -> np.ndarray:
    """GELU with the tanh approximation in float32, in place on g (PyTorch's approximate="tanh")."""
    c = np.float32(np.sqrt(2.0 / np.pi))
    t = g * g
    t *= np.float32(0.044715)
    t += np.float32(1.0)
    t *= g
    t *= c
    np.tanh(t, out=t)
    t += np.float32(1.0)
    g *= np.float32(0.5)
    g *= t
    return g


def geglu(x: np.ndarray, w_gate, w_up, w_down) -> np.ndarray:
    """Gemma's MLP (HF hidden_activation "gelu_pytorch_tanh"): down(gelu_tanh(gate x) * up x).
    Shapes and weight formats as swiglu; the projections are C-core linears (or quantized ones),
    the activation the C core's float32 gelu_tanh(gate) * up (csrc/linear.c gb_geglu_act, the
    one csrc/layer.c runs too)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
    _quant.mlp_shapes(x, w_gate, w_up, w_down)
    h = np.ascontiguousarray(linear(x, w_gate), dtype=np.float32)
    _core.geglu_act(h, np.ascontiguousarray(linear(x, w_up), dtype=np.float32))
    return _quant.down_proj(h, w_down, "geglu: gelu_tanh(gate x) * up x")


def softcap(x: np.ndarray, cap: float) -> np.ndarray:
    """cap * tanh(x / cap), float32, a new array (Gemma's final_logit_softcapping); cap > 0."""
    cap = _float_arg("cap", cap)
    if not (cap > 0.0 and np.isfinite(cap)):
        raise ValueError(f"`cap` must be a positive finite number, got {cap!r}")
    y = np.asarray(x, dtype=np.float32) / np.float32(cap)
    np.tanh(y, out=y)
    y *= np.float32(cap)
    return y


__all__ += ["xielu"]


def _scalar_param(name: str, v) -> float:
    """One learned scalar of an activation (a 0-d or 1-element array, or a number; float32 / float16 / bfloat16
    bits as uint16), finite, as a float; else ValueError naming it."""
    a = v if isinstance(v, np.ndarray) else np.asarray(v)
    if a.size != 1:
        raise ValueError(f"`{name}` must be one number (HF stores it as a 1-element or 0-d tensor), got shape {a.shape}")
    if a.dtype == np.uint16:        # bfloat16 bits
        a = (a.astype(np.uint32) << 16).view(np.float32)
    if a.dtype.kind not in "fiu" or a.dtype == np.bool_:
        raise TypeError(f"`{name}` must be a number, got dtype {a.dtype}")
    f = float(a.reshape(()))
    if not np.isfinite(f):
        raise ValueError(f"`{name}` must be finite, got {f}")
    return f


def xielu(x: np.ndarray, alpha_p, alpha_n, beta, eps) -> np.ndarray:
    """Apertus's xIELU activation (HF XIELUActivation, transformers 5.25; arXiv 2411.13010), from the parameters as
    HF stores them per layer (mlp.act_fn.alpha_p / alpha_n, learned, before their softplus; the buffers beta and
    eps): a_p = softplus(alpha_p), a_n = beta + softplus(alpha_n); x > 0 -> a_p x^2 + beta x, else
    (expm1(min(x, eps)) - x) a_n + beta x. NumPy float32, elementwise, a new array (float64 twin:
    reference.xielu). x: any shape, float32."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
    ap, an, b, e = (_scalar_param(n, v) for n, v in (("alpha_p", alpha_p), ("alpha_n", alpha_n), ("beta", beta),
                                                      ("eps", eps)))
    f32 = np.float32
    ap, b, e = f32(np.logaddexp(0.0, ap)), f32(b), f32(e)
    an = f32(b + f32(np.logaddexp(0.0, an)))
    x = np.asarray(x, dtype=np.float32)
    pos = ap * x * x + b * x
    neg = (np.expm1(np.minimum(x, e)) - x) * an + b * x
    return np.where(x > 0, pos, neg).astype(np.float32, copy=False)


# ---- moe ---------------------------------------------------------------------------------
__all__ += ["moe_route", "moe_experts", "moe"]

_SCORING = {"sigmoid": 0, "softmax": 1}
_GROUP_SCORE = {"top2_sum": 0, "max": 1}


def moe_route(x: np.ndarray, router_weight: np.ndarray, *, top_k: int, scoring: str = "sigmoid",
              bias: np.ndarray | None = None, n_group: int = 1, topk_group: int = 1,
              group_score: str | None = None, norm_topk_prob: bool = True, routed_scaling_factor: float = 1.0):
    """Route tokens x[T, D] f32 with router_weight[E, D] f32 -> (topk_idx[T, k] int32,
    topk_weight[T, k] float32).

    scoring="sigmoid" (GLM-4.7-Flash, DeepSeek-V3 noaux_tc): s = sigmoid(logits); choice = s + bias
      (bias[E] only chooses); experts in groups of E/n_group, group score = sum of the group's top-2
      choices (group_score="top2_sum"); keep the topk_group best groups; top_k experts by choice
      among them; weights = s of the chosen.
    scoring="softmax" (DeepSeek-V2, Qwen3-MoE): s = softmax(logits) over all E experts; choice = s;
      with n_group > 1 (DeepSeek-V2 topk_method="group_limited_greedy") a group's score is the MAX
      of its choices (group_score="max"), the topk_group best groups are kept, then top_k by choice
      among them; weights = s of the chosen (the full softmax, not re-normalised over kept groups).
      n_group = 1 is plain top-k ("greedy", Qwen3-MoE).
    group_score: "top2_sum" | "max" | None; None takes the rule of the scoring ("top2_sum" for
      sigmoid, "max" for softmax); the other combinations raise ValueError.
    Experts outside the kept groups are excluded (HF fills them with 0.0 instead; the two differ
    only if every kept choice is <= 0, which softmax scores never are).
    Then w /= (sum w + 1e-20) if norm_topk_prob, and w *= routed_scaling_factor.
    Logits and scores are computed in float64 (HF uses float32), so choices equal
    glmbench.core.reference.moe_route exactly except below ~1e-15 relative. Ties go to the LOWER expert
    (and group) index; each row is ordered by descending choice score.
    """
    if scoring not in _SCORING:
        raise ValueError(f"`scoring` must be 'sigmoid' or 'softmax', got {scoring!r}")
    if group_score is not None and group_score not in _GROUP_SCORE:
        raise ValueError(f"`group_score` must be 'top2_sum', 'max' or None, got {group_score!r}")
    return _core.moe_route(x, router_weight, _int_arg("top_k", top_k), _SCORING[scoring], bias,
                           _int_arg("n_group", n_group), _int_arg("topk_group", topk_group),
                           -1 if group_score is None else _GROUP_SCORE[group_score], bool(norm_topk_prob),
                           _float_arg("routed_scaling_factor", routed_scaling_factor))


def moe_experts(x: np.ndarray, topk_idx: np.ndarray, topk_weight: np.ndarray, w_gate: np.ndarray,
                w_up: np.ndarray, w_down: np.ndarray):
    """Routed experts: y[t] = sum_j topk_weight[t, j] * SwiGLU_{topk_idx[t, j]}(x[t]).

    x[T, D] f32, topk_idx[T, k] int32, topk_weight[T, k] f32, w_gate/w_up[E, F, D], w_down[E, D, F]
    (float32, float16 or uint16 bf16; strided weights are copied on every call) ->
    (y[T, D] f32, counts[E] int64: (token, slot) pairs per expert). Grouped by expert: each chosen
    expert runs once over all its tokens (register-tile kernel up to 64 tokens, then sgemm), so its weights are read
    once per call; contributions are added in ascending expert order (thread-count independent).
    """
    if any(isinstance(w, _quant.QTensor) for w in (w_gate, w_up, w_down)):  # glmbench/quant.py
        return _quant.moe_experts(x, topk_idx, topk_weight, w_gate, w_up, w_down)
    return _core.moe_experts(x, topk_idx, topk_weight, w_gate, w_up, w_down)


def moe(x: np.ndarray, router_weight: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray, *,
        shared=None, **route_kwargs):
    """The MoE feed-forward: route (moe_route, with route_kwargs), the routed experts
    (moe_experts), plus the shared expert(s) if `shared` = (g[Fs, D], u[Fs, D], d[D, Fs]) (several
    shared experts are one SwiGLU of width n_shared * F, as HF stores them).
    -> (y[T, D] f32, counts[E] int64)."""
    if shared is not None and not (isinstance(shared, (tuple, list)) and len(shared) == 3):
        raise TypeError(f"`shared` must be None or a (w_gate, w_up, w_down) tuple, got {type(shared).__name__}")
    idx, w = moe_route(x, router_weight, **route_kwargs)
    if shared is not None and all(isinstance(a, np.ndarray) for a in (w_gate, w_up, w_down, *shared)):
        # the C core adds the shared expert after the routed ones; at decode it reads its matrices
        # in the same parallel regions as the routed experts'
        return _core.moe_experts(x, idx, w, w_gate, w_up, w_down, tuple(shared))
    y, counts = moe_experts(x, idx, w, w_gate, w_up, w_down)
    if shared is not None:
        y += swiglu(x, *shared)
    return y, counts


__all__ += ["sparsemixer_route"]


def sparsemixer_route(x: np.ndarray, router_weight, jitter_eps: float = 0.01):
    """Phi-3.5-MoE's router at inference (HF PhimoeTopKRouter / sparsemixer in eval mode, transformers 5.25):
    the logits s = router_weight x; the first expert the best logit m1, weighted by the softmax over the
    logits within its band (those with (m1 - s) / max(|s|, m1) <= 2 jitter_eps; the others -inf) taken at it;
    the second the best of the rest m2, weighted by the softmax, over the rest, of the logits within m2's band.
    Two experts whatever top_k says, the weights not renormalised. NumPy float32 (HF's) around the C matmul.
    x[T, D] f32, router_weight[E, D] (E >= 2) -> (topk_idx[T, 2] int32, topk_weight[T, 2] float32)."""
    jitter_eps = _float_arg("jitter_eps", jitter_eps)
    if not (np.isfinite(jitter_eps) and jitter_eps >= 0):   # (below 0 no logit is in the first expert's band:
        raise ValueError(f"`jitter_eps` must be finite and >= 0, got {jitter_eps}")   # weights of 1/0 = inf)
    if not isinstance(x, np.ndarray) or x.ndim != 2:
        raise ValueError(f"`x` must be a 2-D numpy.ndarray [T, D], got {type(x).__name__} of shape {np.shape(x)}")
    s = np.asarray(linear(x, router_weight), dtype=np.float32)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"sparsemixer routes to two experts: it needs at least 2, got logits of shape {s.shape}")
    r = np.arange(s.shape[0])
    band = np.float32(2.0 * float(jitter_eps))
    idx, wt = [], []
    rest = s.copy()
    for _ in range(2):
        e = np.argmax(rest, axis=1)
        m = rest[r, e][:, None]
        with np.errstate(invalid="ignore", divide="ignore"):   # (0 / 0 where every logit is 0: NaN, not masked, as HF)
            far = (m - s) / np.maximum(np.abs(s), m) > band
        gates = np.where(far, np.float32(-np.inf), rest)
        # softmax(gates) at e, whose gate is the row's max m
        wt.append(np.float32(1.0) / np.exp(gates - m, dtype=np.float32).sum(axis=1, dtype=np.float32))
        idx.append(e)
        rest[r, e] = -np.inf     # the second expert: the best of the others
    return np.stack(idx, axis=1).astype(np.int32), np.stack(wt, axis=1).astype(np.float32)


# ---- GPT-OSS's MoE (NumPy float32 for now; float64 twin: reference.moe_gpt_oss) ---------------
__all__ += ["clamped_swiglu", "moe_gpt_oss"]

SWIGLU_ALPHA, SWIGLU_LIMIT = 1.702, 7.0   # HF GptOssConfig swiglu_alpha / swiglu_limit


def clamped_swiglu(gate: np.ndarray, up: np.ndarray, alpha: float = SWIGLU_ALPHA,
                   limit: float = SWIGLU_LIMIT) -> np.ndarray:
    """GPT-OSS's gate (HF GptOssExperts._apply_gate): gate clamped to <= limit, up to [-limit, limit];
    (up + 1) * gate * sigmoid(alpha * gate). float32."""
    if np.shape(gate) != np.shape(up):
        raise ValueError(f"`gate` and `up` must have the same shape, got {np.shape(gate)} and {np.shape(up)}")
    alpha, limit = _float_arg("alpha", alpha), _float_arg("limit", limit)
    if not (np.isfinite(alpha) and np.isfinite(limit) and limit > 0):
        raise ValueError(f"`alpha` must be finite and `limit` finite and > 0, got {alpha} and {limit}")
    g = np.minimum(np.asarray(gate, np.float32), np.float32(limit))
    u = np.clip(np.asarray(up, np.float32), np.float32(-limit), np.float32(limit))
    return (u + np.float32(1)) * (g / (np.float32(1) + np.exp(-np.float32(alpha) * g)))


def moe_gpt_oss(x: np.ndarray, router_weight, router_bias, w_gate, w_up, w_down, b_gate, b_up, b_down, *,
                top_k: int, alpha: float = SWIGLU_ALPHA, limit: float = SWIGLU_LIMIT):
    """GPT-OSS's MoE feed-forward (HF GptOssMLP): logits = x router_weight^T + router_bias; the top_k
    logits (ties to the lower index) softmaxed among themselves; each chosen expert e gives
    down_e(clamped_swiglu(gate_e x + b_gate[e], up_e x + b_up[e])) + b_down[e]. w_gate/w_up [E, F, D],
    w_down [E, D, F] (float32, float16, bf16 uint16 bits or QTensor per expert slice via `linear`),
    biases float32. x[T, D] float32 -> (y[T, D] float32, counts[E] int64)."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError(f"`x` must be a float32 numpy.ndarray, got {getattr(x, 'dtype', type(x).__name__)}")
    if x.ndim != 2:
        raise ValueError(f"`x` must be 2-D [T, D], got shape {x.shape}")
    x = np.ascontiguousarray(x)
    k = _int_arg("top_k", top_k)
    clamped_swiglu(np.zeros(1, np.float32), np.zeros(1, np.float32), alpha, limit)   # alpha, limit checked
    T, D = x.shape
    E = int(np.shape(router_weight)[0]) if np.ndim(router_weight) == 2 else -1
    F = int(np.shape(w_gate)[1]) if len(np.shape(w_gate)) == 3 else -1
    want = {"router_weight": (E, D), "router_bias": (E,), "w_gate": (E, F, D), "w_up": (E, F, D), "w_down": (E, D, F),
            "b_gate": (E, F), "b_up": (E, F), "b_down": (E, D)}
    got = dict(zip(want, (router_weight, router_bias, w_gate, w_up, w_down, b_gate, b_up, b_down)))
    for name, shape in want.items():   # (an expert missing from w_gate was an IndexError in the loop below)
        if E < 1 or F < 1 or tuple(np.shape(got[name]) if not hasattr(got[name], "shape") else got[name].shape) != shape:
            raise ValueError(f"moe_gpt_oss: `{name}` has shape {tuple(getattr(got[name], 'shape', np.shape(got[name])))}, "
                             f"want {shape} (E experts of F = w_gate.shape[1] for x [T, D={D}])")
    logits = linear(x, router_weight, np.asarray(router_bias, np.float32))
    if not 1 <= k <= E:
        raise ValueError(f"`top_k`={k} must be in [1, {E}]")
    idx = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(logits, idx, axis=1)
    wts = np.exp(top - top.max(axis=1, keepdims=True))
    wts /= wts.sum(axis=1, keepdims=True)
    y = np.zeros_like(x)
    counts = np.bincount(idx.ravel(), minlength=E).astype(np.int64)
    for e in np.nonzero(counts)[0]:
        rows, slots = np.nonzero(idx == e)
        xe = np.ascontiguousarray(x[rows])
        h = clamped_swiglu(linear(xe, w_gate[e], np.asarray(b_gate[e], np.float32)),
                           linear(xe, w_up[e], np.asarray(b_up[e], np.float32)), alpha, limit)
        out = linear(np.ascontiguousarray(h, dtype=np.float32), w_down[e], np.asarray(b_down[e], np.float32))
        y[rows] += wts[rows, slots][:, None] * out   # rows are distinct within one expert
    return y, counts


# ---- linear attention (Gated DeltaNet: Qwen3-Next / Qwen3.5) --------------------------------
__all__ += ["gated_delta_rule", "causal_conv1d"]


def gated_delta_rule(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray,
                     state: np.ndarray | None = None, *, scale: float | None = None, qk_l2norm: bool = True,
                     l2_eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """The gated delta rule of Qwen3-Next / Qwen3.5's linear attention: HF's torch_recurrent_gated_delta_rule
    in float32. q, k [T, Hk, dk]; v [T, Hv, dv] (Hv a multiple of Hk: value head h reads q/k head
    h // (Hv // Hk)); g [T, Hv] (log decay); beta [T, Hv]; state [Hv, dk, dv] or None (zeros); all float32.
    If qk_l2norm, q_t and k_t are scaled by 1 / sqrt(sum(x^2) + l2_eps); q_t *= scale (default dk ** -0.5);
    per token: S *= exp(g); delta = (v_t - k_t^T S) * beta; S += k_t delta^T; o_t = q_t^T S.
    -> (o [T, Hv, dv], the final state [Hv, dk, dv]): new arrays; `state` is not modified."""
    q = np.asarray(q) if not isinstance(q, np.ndarray) else q
    if scale is None:
        if q.ndim != 3:
            raise ValueError(f"`q` must be 3-D [T, Hk, dk], got shape {q.shape}")
        scale = q.shape[2] ** -0.5 if q.shape[2] else 1.0   # dk = 0: the C core's size check says so
    return _core.gated_delta_rule(q, k, v, g, beta, state, _float_arg("scale", scale), bool(qk_l2norm),
                                  _float_arg("l2_eps", l2_eps))


def causal_conv1d(x: np.ndarray, weight: np.ndarray, state: np.ndarray | None = None, *,
                  silu: bool = True, bias: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The causal depthwise conv1d of Qwen3-Next / Qwen3.5's linear attention and of Mamba-2's mixer (HF
    nn.Conv1d(groups=C, padding=K-1), first T outputs; step by step it is causal_conv1d_update). x [T, C];
    weight [C, K] or HF's conv1d.weight [C, 1, K]; state [K-1, C] (the previous K-1 inputs, oldest first)
    or None (zeros); bias [C] or None (none: the Gated DeltaNet's conv; Mamba-2's has one,
    use_conv_bias=True); all float32. xx = concat(state, x); y[t, c] = sum_j weight[c, j] * xx[t + j, c]
    + bias[c], then y * sigmoid(y) if silu. -> (y [T, C], the new state [K-1, C] = the last K-1 rows of
    xx): new arrays."""
    w = np.asarray(weight) if not isinstance(weight, np.ndarray) else weight
    if w.ndim == 3:
        if w.shape[1] != 1:
            raise ValueError(f"a 3-D `weight` must be HF's conv1d.weight [C, 1, K], got shape {w.shape}")
        w = w.reshape(w.shape[0], w.shape[2])
    if bias is None:
        return _core.causal_conv1d(x, w, state, bool(silu))
    return _core.causal_conv1d(x, w, state, bool(silu), bias)


# ---- Mamba-2's selective scan (Nemotron-H / Granite-4.0-H hybrids) ---------------------------
__all__ += ["ssm_scan"]


def _real_arg(name: str, v) -> float:
    """A real-number argument (Python or NumPy int or float, not bool), else TypeError naming it."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"`{name}` must be a number, got {v!r}")
    return float(v)


def ssm_scan(x: np.ndarray, dt: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray,
             D: np.ndarray | None = None, state: np.ndarray | None = None, *, dt_bias: np.ndarray | None = None,
             dt_softplus: bool = True, dt_min: float = 0.0,
             dt_max: float = float("inf")) -> tuple[np.ndarray, np.ndarray]:
    """Mamba-2's selective state space scan (SSD), token by token in float32: HF transformers' Mamba-2
    mixer (GraniteMoeHybridMambaLayer, NemotronH's mixer: its selective_state_update step, and equal in
    math to its chunked scan) and llama.cpp's ggml_ssm_scan for Mamba-2.

    x [T, H, P] (T tokens, H heads, P head dim); dt [T, H] (the time step before dt_bias and softplus);
    A [H] (the decay rate, -exp(A_log), normally < 0); B, C [T, G, N] (G groups, N = d_state; H a multiple
    of G: head h reads group h // (H // G)); D [H] or None (no skip); dt_bias [H] or None; state [H, P, N]
    or None (zeros); all float32 (strided views are copied). Per token t and head h:
        d = dt[t, h] + dt_bias[h]; d = softplus(d) if dt_softplus (torch's: d itself above 20);
        d = min(max(d, dt_min), dt_max)              (HF's time_step_limit, default (0, inf): no clamp)
        S[h] = S[h] * exp(d * A[h]) + d * outer(x[t, h], B[t, g])
        y[t, h] = S[h] @ C[t, g] + D[h] * x[t, h]
    -> (y [T, H, P], the final state [H, P, N]): new arrays; `state` is not modified. Splitting T into
    pieces with the state carried gives the same bits as one call. One pass over each head's state per
    token (the first token reads `state`, writes the new one); heads run on the C core's threads.
    NaN/inf in an input, a bad shape or dtype, or dt_min > dt_max -> ValueError / TypeError naming it."""
    return _core.ssm_scan(x, dt, A, B, C, D, state, dt_bias, bool(dt_softplus), _real_arg("dt_min", dt_min),
                          _real_arg("dt_max", dt_max))
