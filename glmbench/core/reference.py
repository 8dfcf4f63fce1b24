"""float64 NumPy reference of every op: the first oracle. Written for clarity, not speed; each
function mirrors one C-core op in glmbench.core.ops and takes/returns the same shapes.

Sections are owned by op family (norm, rope, linear, swiglu, moe, gqa, mla, kvcache, quant);
keep each op's reference next to its siblings.
"""
from __future__ import annotations

import numpy as np


def _f64(a):
    return np.asarray(a, dtype=np.float64)


# ---- norm ---------------------------------------------------------------------------------
def rms_norm(x, weight, eps=1e-6):
    x = _f64(x)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * _f64(weight)


def layer_norm(x, weight, eps=1e-5):
    """LayerNorm without a bias (CohereLayerNorm); weight [D], or [H, D] over x [..., H, D]."""
    x = _f64(x)
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * _f64(weight)


def weight_f64(w):
    """A weight array as float64: float32/float16 directly, uint16 as bfloat16 bits."""
    w = np.asarray(w)
    if w.dtype == np.uint16:
        return (w.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return w.astype(np.float64)


def to_bf16(a):
    """float32 -> bfloat16 bits (uint16), round to nearest even (as torch); NaN stays NaN."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    return np.where(nan, (u >> 16).astype(np.uint16) | np.uint16(0x40), r)


# ---- rope ---------------------------------------------------------------------------------
def rope(x, positions, *, theta, rot_dim, rot_offset=0, layout="interleaved", inv_freq=None, attention_factor=1.0):
    """Pair i turns by positions * inv_freq[i] (default theta**(-2i/rot_dim)); cos and sin are
    multiplied by attention_factor (HF's YaRN attention scaling)."""
    x = _f64(x)
    y = x.copy()
    half = rot_dim // 2
    inv = theta ** (-2.0 * np.arange(half) / rot_dim) if inv_freq is None else _f64(inv_freq)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]  # [T, half]
    c = np.cos(ang)[:, None, :] * attention_factor
    s = np.sin(ang)[:, None, :] * attention_factor
    seg = x[..., rot_offset:rot_offset + rot_dim]
    if layout == "interleaved":
        a, b = seg[..., 0::2], seg[..., 1::2]
        out = np.empty_like(seg)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
    elif layout == "half":
        a, b = seg[..., :half], seg[..., half:]
        out = np.concatenate([a * c - b * s, b * c + a * s], axis=-1)
    else:
        raise ValueError(f"`layout` must be 'interleaved' or 'half', got {layout!r}")
    y[..., rot_offset:rot_offset + rot_dim] = out
    return y


# ---- linear -------------------------------------------------------------------------------
def linear(x, weight, bias=None):
    y = _f64(x) @ weight_f64(weight).T
    return y if bias is None else y + _f64(bias)


# ---- swiglu -------------------------------------------------------------------------------
def silu(g):
    return g / (1.0 + np.exp(-g))


def swiglu(x, w_gate, w_up, w_down):
    return linear(silu(linear(x, w_gate)) * linear(x, w_up), w_down)


def gelu_tanh(g):
    """GELU, tanh approximation (PyTorch's gelu(approximate="tanh"), HF's gelu_pytorch_tanh)."""
    g = _f64(g)
    return 0.5 * g * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (g + 0.044715 * g ** 3)))


def geglu(x, w_gate, w_up, w_down):
    """Gemma's MLP: down(gelu_tanh(gate x) * up x)."""
    return linear(gelu_tanh(linear(x, w_gate)) * linear(x, w_up), w_down)


def softcap(x, cap):
    """cap * tanh(x / cap) (Gemma's logit soft-capping)."""
    return cap * np.tanh(_f64(x) / cap)


def softplus(x):
    """log(1 + exp(x)), overflow-free."""
    x = _f64(x)
    return np.logaddexp(0.0, x)


def xielu(x, alpha_p, alpha_n, beta, eps):
    """Apertus's xIELU (HF XIELUActivation._xielu_python, arXiv 2411.13010) from its stored parameters: with
    a_p = softplus(alpha_p) and a_n = beta + softplus(alpha_n), x > 0 -> a_p x^2 + beta x, else
    (expm1(min(x, eps)) - x) a_n + beta x."""
    x = _f64(x)
    ap = softplus(np.asarray(alpha_p, np.float64).reshape(()))
    b = float(np.asarray(beta, np.float64).reshape(()))
    an = b + softplus(np.asarray(alpha_n, np.float64).reshape(()))
    e = float(np.asarray(eps, np.float64).reshape(()))
    return np.where(x > 0, ap * x * x + b * x, (np.expm1(np.minimum(x, e)) - x) * an + b * x)


def xielu_mlp(x, w_up, w_down, alpha_p, alpha_n, beta, eps):
    """Apertus's ungated MLP: down(xielu(up x))."""
    return linear(xielu(linear(x, w_up), alpha_p, alpha_n, beta, eps), w_down)


# ---- moe ----------------------------------------------------------------------------------
def _top_lower(v, k):
    """Indices of the k largest v, descending; equal values in ascending index order."""
    return np.argsort(-v, kind="stable")[:k]


def moe_route(x, router_weight, *, top_k, scoring="sigmoid", bias=None, n_group=1, topk_group=1,
              group_score=None, norm_topk_prob=True, routed_scaling_factor=1.0):
    """group_score: "top2_sum" (noaux_tc: sum of a group's top-2 choices, with sigmoid) or "max"
    (DeepSeek-V2 group_limited_greedy: a group's best choice, with softmax); None takes the one that
    goes with `scoring`."""
    rule = group_score if group_score is not None else ("max" if scoring == "softmax" else "top2_sum")
    if rule not in ("top2_sum", "max"):
        raise ValueError(f"`group_score` must be 'top2_sum', 'max' or None, got {group_score!r}")
    if (scoring == "softmax") != (rule == "max"):
        raise ValueError(f"`group_score`={rule!r} does not go with scoring={scoring!r}")
    logits = _f64(x) @ _f64(router_weight).T
    T, E = logits.shape
    if scoring == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-logits))
    elif scoring == "softmax":
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        s = e / e.sum(axis=-1, keepdims=True)
    else:
        raise ValueError(f"`scoring` must be 'sigmoid' or 'softmax', got {scoring!r}")
    choice = s + (_f64(bias) if bias is not None else 0.0)
    gs = E // n_group
    idx = np.zeros((T, top_k), np.int32)
    w = np.zeros((T, top_k), np.float64)
    for t in range(T):
        c = choice[t].copy()
        if n_group > 1:
            grp = c.reshape(n_group, gs)
            if rule == "max":
                gscore = grp.max(axis=1)
            else:
                gscore = np.array([np.sort(g)[::-1][:2].sum() for g in grp])
            keep = _top_lower(gscore, topk_group)
            mask = np.zeros(n_group, bool)
            mask[keep] = True
            c = np.where(np.repeat(mask, gs), c, -np.inf)
        chosen = _top_lower(c, top_k)
        idx[t] = chosen
        w[t] = s[t, chosen]
    if norm_topk_prob:
        w = w / (w.sum(axis=-1, keepdims=True) + 1e-20)
    return idx, w * routed_scaling_factor


def moe_experts(x, topk_idx, topk_weight, w_gate, w_up, w_down):
    x = _f64(x)
    E = np.shape(w_gate)[0]
    y = np.zeros_like(x)
    counts = np.bincount(np.asarray(topk_idx).ravel(), minlength=E).astype(np.int64)
    for e in range(E):
        rows, slots = np.nonzero(np.asarray(topk_idx) == e)
        if rows.size:
            out = swiglu(x[rows], w_gate[e], w_up[e], w_down[e])
            np.add.at(y, rows, _f64(topk_weight)[rows, slots][:, None] * out)
    return y, counts


def moe(x, router_weight, w_gate, w_up, w_down, *, shared=None, **route_kwargs):
    idx, w = moe_route(x, router_weight, **route_kwargs)
    y, counts = moe_experts(x, idx, w, w_gate, w_up, w_down)
    if shared is not None:
        y = y + swiglu(x, *shared)
    return y, counts


def sparsemixer_route(x, router_weight, jitter_eps=0.01):
    """Phi-3.5-MoE's sparsemixer at inference (HF modeling_phimoe.sparsemixer, training=False) in float64:
    logits s = x W^T; expert 1 = argmax s (the lower index on ties), weighted by the softmax, taken at it, of
    the logits within its band ((m1 - s) / max(|s|, m1) <= 2 jitter_eps; the others -inf); expert 2 = the
    argmax of the rest, weighted by the softmax over the rest (expert 1 excluded) of the logits within m2's
    band. -> (idx [T, 2], weights [T, 2])."""
    s = _f64(x) @ _f64(router_weight).T
    T = s.shape[0]
    idx = np.zeros((T, 2), np.int32)
    w = np.zeros((T, 2))
    for t in range(T):
        rest = s[t].copy()
        for j in range(2):
            e = int(np.argmax(rest))
            m = rest[e]
            with np.errstate(invalid="ignore", divide="ignore"):
                far = (m - s[t]) / np.maximum(np.abs(s[t]), m) > 2.0 * jitter_eps
            gates = np.where(far, -np.inf, rest)
            w[t, j] = 1.0 / np.exp(gates - m).sum()
            idx[t, j] = e
            rest[e] = -np.inf
    return idx, w


# ---- gqa ----------------------------------------------------------------------------------
def attention(q, k, v, scale=None, window=None, softcap=None, sinks=None):
    """Causal softmax attention with one K/V head per query head: q[T, H, Dk], k[L, H, Dk],
    v[L, H, Dv] -> [T, H, Dv]. The T queries are the LAST T of the L positions: query i sees keys
    0 .. L-T+i, and with a sliding `window` only the last `window` of them (L-T+i-window+1 ..
    L-T+i, HF's sliding_window). scale defaults to 1/sqrt(Dk). softcap: scores s (scaled) become
    softcap * tanh(s / softcap) before the mask and softmax (Gemma 2). sinks[H]: one more logit per
    head in the softmax, its probability dropped (GPT-OSS)."""
    q, k, v = _f64(q), _f64(k), _f64(v)
    T, L = q.shape[0], k.shape[0]
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    s = np.einsum("thd,lhd->htl", q, k) * scale
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    pos = (L - T + np.arange(T))[:, None]
    future = np.arange(L)[None, :] > pos   # [T, L]
    if window is not None:
        future |= np.arange(L)[None, :] <= pos - window
    s[:, future] = -np.inf
    if sinks is not None:
        s = np.concatenate([s, np.broadcast_to(_f64(sinks)[:, None, None], (s.shape[0], T, 1))], axis=-1)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    if sinks is not None:
        p = p[..., :-1]
    return np.einsum("htl,lhd->thd", p, v)


def gqa_attention(q, k, v, scale=None, window=None, softcap=None, sinks=None):
    """q[T, Hq, Dh], k[L, Hkv, Dh], v[L, Hkv, Dv]: query head j reads KV head j // (Hq / Hkv)
    (HF repeat_kv); window, softcap and sinks as `attention`."""
    g = q.shape[1] // k.shape[1]
    return attention(q, np.repeat(_f64(k), g, axis=1), np.repeat(_f64(v), g, axis=1), scale, window, softcap,
                     sinks)


def _bias(w, name):
    b = w.get(name)
    return None if b is None else _f64(b)


def gqa_block(x, w, positions, cfg, k_past=None, v_past=None, model_layer=0):
    """A whole GQA attention sub-layer from its definition (HF Qwen3/Llama/Gemma 3): x[T, D] at
    positions[T] after P cached tokens (k_past/v_past [P, Hkv, Dh], already normed and roped).
    w: HF names relative to `self_attn.`; model_layer: the layer's index (its window and rope base).
    Returns (y[T, D], k_all[P+T], v_all[P+T])."""
    x = _f64(x)
    T = x.shape[0]
    Hq, Hkv, Dh, Dv = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim
    gate = None
    if cfg.attn_output_gate and "gate_proj.weight" in w:   # AFMoE: its own gate_proj
        q = linear(x, w["q_proj.weight"], _bias(w, "q_proj.bias")).reshape(T, Hq, Dh)
        gate = linear(x, w["gate_proj.weight"]).reshape(T, Hq, Dv)
    elif cfg.attn_output_gate:   # Qwen3-Next / Qwen3.5: [query | gate] per head
        qg = linear(x, w["q_proj.weight"], _bias(w, "q_proj.bias")).reshape(T, Hq, 2 * Dh)
        q, gate = qg[:, :, :Dh], qg[:, :, Dh:]
    else:
        q = linear(x, w["q_proj.weight"], _bias(w, "q_proj.bias")).reshape(T, Hq, Dh)
    k = linear(x, w["k_proj.weight"], _bias(w, "k_proj.bias")).reshape(T, Hkv, Dh)
    v = linear(x, w["v_proj.weight"], _bias(w, "v_proj.bias")).reshape(T, Hkv, Dv)
    if cfg.qk_norm and cfg.layer_norm:   # Command-R+: a LayerNorm per head
        q = layer_norm(q, np.reshape(w["q_norm.weight"], (Hq, Dh)), cfg.rms_norm_eps)
        k = layer_norm(k, np.reshape(w["k_norm.weight"], (Hkv, Dh)), cfg.rms_norm_eps)
    elif cfg.qk_norm:
        q = rms_norm(q, w["q_norm.weight"], cfg.rms_norm_eps)
        k = rms_norm(k, w["k_norm.weight"], cfg.rms_norm_eps)
    if cfg.layer_rotates(model_layer):    # (Cohere2's global layers rotate nothing)
        rot = cfg.layer_rope(model_layer)
        q = rope(q, positions, **rot)
        k = rope(k, positions, **rot)
    if k_past is not None:
        k = np.concatenate([_f64(k_past), k])
        v = np.concatenate([_f64(v_past), v])
    o = gqa_attention(q, k, v, cfg.softmax_scale, cfg.layer_window(model_layer), cfg.attn_logit_softcapping,
                      w.get("sinks"))
    if gate is not None:
        o = o / (1.0 + np.exp(-gate))
    return linear(o.reshape(T, Hq * Dv), w["o_proj.weight"], _bias(w, "o_proj.bias")), k, v


# ---- mla ----------------------------------------------------------------------------------
def mla_attention(q_nope, q_rope, latent, k_rope, kv_b_weight, v_head_dim, scale=None):
    """MLA attention from the definition (the "naive" strategy): kv_b[H*(Dn+Dv), R] expands each
    cached latent[L, R] to per-head k_nope (Dn) and v (Dv); every head's key is [k_nope, k_rope]
    with the one shared k_rope[L, Dr]; q = [q_nope[T, H, Dn], q_rope[T, H, Dr]]; causal over the
    last T positions; scale defaults to 1/sqrt(Dn + Dr). -> [T, H, Dv]."""
    q_nope, q_rope = _f64(q_nope), _f64(q_rope)
    T, H, Dn = q_nope.shape
    L = np.shape(latent)[0]
    kv = (_f64(latent) @ weight_f64(kv_b_weight).T).reshape(L, H, Dn + v_head_dim)
    kr = np.broadcast_to(_f64(k_rope)[:, None, :], (L, H, np.shape(k_rope)[-1]))
    k = np.concatenate([kv[..., :Dn], kr], axis=-1)
    q = np.concatenate([q_nope, q_rope], axis=-1)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return attention(q, k, kv[..., Dn:], scale)


def mla_block(x, w, positions, cfg, latent_past=None, k_rope_past=None):
    """A whole MLA attention sub-layer from its definition (GLM-4.7-Flash / DeepSeek-V2, HF names
    relative to `self_attn.`): q = q_b(RMSNorm(q_a x)) (or q_proj x without q_lora); c = kv_a x ->
    latent = RMSNorm(c[:R]) (eps 1e-6), k_rope = rope(c[R:]); rope on q's last Dr dims; attention as
    mla_attention with cfg.softmax_scale; o_proj. The rope vectors stay in OUR layout (HF's
    glm4_moe_lite stores them de-interleaved; q.k is the same). Returns
    (y[T, D], latent_all[P+T, R], k_rope_all[P+T, Dr])."""
    x = _f64(x)
    T = x.shape[0]
    H, Dn, Dr, Dv, R = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    eps = cfg.latent_norm_eps
    if cfg.q_lora_rank:
        qa = rms_norm(linear(x, w["q_a_proj.weight"], _bias(w, "q_a_proj.bias")), w["q_a_layernorm.weight"], eps)
        q = linear(qa, w["q_b_proj.weight"])
    else:
        q = linear(x, w["q_proj.weight"])
    q = q.reshape(T, H, Dn + Dr)
    c = linear(x, w["kv_a_proj_with_mqa.weight"], _bias(w, "kv_a_proj_with_mqa.bias"))
    latent = rms_norm(c[:, :R], w["kv_a_layernorm.weight"], eps)
    rot = dict(theta=cfg.rope_theta, rot_dim=Dr, layout=cfg.rope_layout, inv_freq=cfg.rope_inv_freq(),
               attention_factor=cfg.rope_attention_factor())
    kr = rope(c[:, None, R:], positions, **rot)[:, 0]
    q_rope = rope(q[..., Dn:], positions, **rot)
    if latent_past is not None:
        latent = np.concatenate([_f64(latent_past), latent])
        kr = np.concatenate([_f64(k_rope_past), kr])
    o = mla_attention(q[..., :Dn], q_rope, latent, kr, w["kv_b_proj.weight"], Dv, cfg.softmax_scale)
    return linear(o.reshape(T, H * Dv), w["o_proj.weight"], _bias(w, "o_proj.bias")), latent, kr


# ---- kvcache ------------------------------------------------------------------------------
def kv_round(x, dtype):
    """The values a KV cache of storage format `dtype` gives back for float32 x (rows along the
    last axis): f32 unchanged, f16/bf16 rounded to nearest even, q8_0/q4_0 through the ggml
    block quantizers. float64."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f32":
        return x.astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return weight_f64(to_bf16(x))
    if dtype in ("q8_0", "q4_0"):
        qz = quantize_q8_0 if dtype == "q8_0" else quantize_q4_0
        return dequantize(qz(x), dtype).reshape(x.shape)
    raise ValueError(f"unknown KV-cache format {dtype!r}")


def kv_bytes_per_token(kind, n_layers, dims, dtype):
    """Exact cache bytes per token over all layers. kind="gqa": dims=(n_kv_heads, head_dim,
    v_head_dim), one K and one V row per head; kind="mla": dims=(kv_lora_rank, rope_dim)."""
    per = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18)}[dtype]

    def row(n):
        if n % per[0]:
            raise ValueError(f"{dtype} rows must be a multiple of {per[0]}, got {n}")
        return n // per[0] * per[1]
    if kind == "gqa":
        h, dk, dv = dims
        return n_layers * h * (row(dk) + row(dv))
    r, dr = dims
    return n_layers * (row(r) + row(dr))


# ---- quant --------------------------------------------------------------------------------
# ggml's reference quantizers (ggml-quants.c quantize_row_q8_0_ref / quantize_row_q4_0_ref),
# reimplemented from their definition. The ENCODING is defined by float32 arithmetic (the scale
# d = amax/127 or max/-8, its reciprocal, x * (1/d), and the + 8.5 of q4_0 are each one float32
# rounding), so it is reproduced with float32 NumPy ops, one operation at a time, to get the same
# bytes; everything after the bytes (dequantization, matmuls, error bounds) is float64.
QK = 32


def _blocks(x):
    x = np.asarray(x, dtype=np.float32)
    if x.shape[-1] % QK:
        raise ValueError(f"last axis must be a multiple of {QK}, got {x.shape[-1]}")
    return x.reshape(-1, x.shape[-1] // QK, QK)


def _roundf(v):
    """C roundf on float32: half away from zero (np.round would round half to even)."""
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= np.float32(0.5), np.sign(v), np.float32(0)).astype(np.float32)


def quantize_q8_0(x):
    """float32 [..., K] -> uint8 [..., K/32*34]: per block f16 d = amax/127, then 32 x int8 roundf(x/d)."""
    xb = _blocks(x)
    amax = np.abs(xb).max(axis=-1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _roundf((xb * idv[..., None]).astype(np.float32)).astype(np.int8)
    out = np.concatenate([d.astype(np.float16)[..., None].view(np.uint8), q.view(np.uint8)], axis=-1)
    return out.reshape(np.shape(x)[:-1] + (-1,))


def quantize_q4_0(x):
    """float32 [..., K] -> uint8 [..., K/32*18]: per block f16 d = max/-8 (max: the signed value of
    largest magnitude, first on ties), q = min(15, trunc(x/d + 8.5)); element j in the low nibble of
    byte j, element j+16 in its high nibble."""
    xb = _blocks(x)
    first = np.abs(xb).argmax(axis=-1)
    mx = np.take_along_axis(xb, first[..., None], axis=-1)[..., 0]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = ((xb * idv[..., None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.clip(np.trunc(v), 0, 15).astype(np.uint8)
    nib = q[..., :QK // 2] | (q[..., QK // 2:] << 4)
    out = np.concatenate([d.astype(np.float16)[..., None].view(np.uint8), nib], axis=-1)
    return out.reshape(np.shape(x)[:-1] + (-1,))


def block_scales(q, fmt):
    """The float16 block scales d of raw q8_0/q4_0 bytes [..., nbytes] -> float64 [..., nblocks]."""
    bb = {"q8_0": 34, "q4_0": 18}[fmt]
    qb = np.ascontiguousarray(q).reshape(q.shape[:-1] + (-1, bb))
    return qb[..., :2].copy().view(np.float16)[..., 0].astype(np.float64)


def dequantize(q, fmt):
    """Raw q8_0/q4_0 bytes [..., nbytes] -> float64 [..., K]."""
    bb = {"q8_0": 34, "q4_0": 18}[fmt]
    q = np.ascontiguousarray(q, dtype=np.uint8)
    qb = q.reshape(q.shape[:-1] + (-1, bb))
    d = block_scales(q, fmt)[..., None]
    if fmt == "q8_0":
        vals = qb[..., 2:].view(np.int8).astype(np.float64)
    else:
        nib = qb[..., 2:]
        vals = np.concatenate([(nib & 0x0F), (nib >> 4)], axis=-1).astype(np.float64) - 8.0
    return (d * vals).reshape(q.shape[:-1] + (-1,))


def qlinear(x, q, fmt, bias=None):
    """x [T, K] . dequantize(q)^T (+ bias) in float64: what a quantized linear should compute."""
    y = _f64(x) @ dequantize(q, fmt).T
    return y if bias is None else y + _f64(bias)


def qlinear_q8_activations(x, q, fmt, bias=None):
    """The same with x first quantized to q8_0 per row (ggml's CPU path): the oracle of the
    integer-dot kernels, whose only other error is float32 summation. ggml keeps the activation
    scale in float16, so it is rounded to float16 here too (dequantize reads it as such)."""
    xq = dequantize(quantize_q8_0(np.asarray(x, np.float32)), "q8_0")
    return qlinear(xq, q, fmt, bias)


# ---- GPT-OSS MoE ---------------------------------------------------------------------------
def clamped_swiglu(gate, up, alpha=1.702, limit=7.0):
    g = np.minimum(_f64(gate), limit)
    u = np.clip(_f64(up), -limit, limit)
    return (u + 1.0) * g / (1.0 + np.exp(-alpha * g))


def moe_gpt_oss(x, router_weight, router_bias, w_gate, w_up, w_down, b_gate, b_up, b_down, *, top_k,
                alpha=1.702, limit=7.0):
    """HF GptOssMLP from its definition in float64 (see ops.moe_gpt_oss)."""
    x = _f64(x)
    logits = linear(x, router_weight, _f64(router_bias))
    idx = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
    top = np.take_along_axis(logits, idx, axis=1)
    wts = np.exp(top - top.max(axis=1, keepdims=True))
    wts /= wts.sum(axis=1, keepdims=True)
    y = np.zeros_like(x)
    for t in range(x.shape[0]):
        for j, e in enumerate(idx[t]):
            xt = x[t:t + 1]
            h = clamped_swiglu(linear(xt, w_gate[e], _f64(b_gate[e])), linear(xt, w_up[e], _f64(b_up[e])), alpha, limit)
            y[t] += wts[t, j] * linear(h, w_down[e], _f64(b_down[e]))[0]
    return y


# ---- linear attention (Gated DeltaNet: Qwen3-Next / Qwen3.5) --------------------------------
def gated_delta_rule(q, k, v, g, beta, state=None, *, scale=None, qk_l2norm=True, l2_eps=1e-6):
    """HF's torch_recurrent_gated_delta_rule in float64, token by token. q, k [T, Hk, dk]; v [T, Hv, dv];
    g (log decay), beta [T, Hv]; state [Hv, dk, dv] or None (zeros). Value head h reads q/k head
    h // (Hv // Hk). -> (o [T, Hv, dv], final state [Hv, dk, dv])."""
    q, k, v, g, beta = _f64(q), _f64(k), _f64(v), _f64(g), _f64(beta)
    T, Hk, dk = q.shape
    Hv, dv = v.shape[1], v.shape[2]
    rep = Hv // Hk
    q, k = np.repeat(q, rep, axis=1), np.repeat(k, rep, axis=1)   # repeat_interleave on the head axis
    if qk_l2norm:
        q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + l2_eps)
        k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + l2_eps)
    q = q * (dk ** -0.5 if scale is None else scale)
    S = np.zeros((Hv, dk, dv)) if state is None else _f64(state).copy()
    o = np.zeros((T, Hv, dv))
    for t in range(T):
        S = S * np.exp(g[t])[:, None, None]
        kv_mem = np.einsum("hij,hi->hj", S, k[t])
        delta = (v[t] - kv_mem) * beta[t][:, None]
        S = S + k[t][:, :, None] * delta[:, None, :]
        o[t] = np.einsum("hij,hi->hj", S, q[t])
    return o, S


def causal_conv1d(x, weight, state=None, *, silu=True, bias=None):
    """Causal depthwise conv1d over time (the Gated DeltaNet's and Mamba-2's conv, HF nn.Conv1d(groups=C,
    padding=K-1) cut to the first T outputs) in float64. x [T, C]; weight [C, K] or [C, 1, K]; state
    [K-1, C] (the previous inputs, oldest first) or None (zeros); bias [C] or None (none), added before
    the silu. -> (y [T, C], new state [K-1, C])."""
    x = _f64(x)
    w = _f64(weight)
    w = w.reshape(w.shape[0], w.shape[-1])
    T, C = x.shape
    K = w.shape[1]
    xx = np.concatenate([np.zeros((K - 1, C)) if state is None else _f64(state), x])
    y = np.zeros((T, C)) if bias is None else np.tile(_f64(bias), (T, 1))
    for j in range(K):
        y += w[:, j] * xx[j:j + T]
    if silu:
        y = y / (1.0 + np.exp(-y))
    return y, xx[T:].copy()


# ---- Mamba-2's selective scan (Nemotron-H / Granite-4.0-H hybrids) ---------------------------
def ssm_scan(x, dt, A, B, C, D=None, state=None, *, dt_bias=None, dt_softplus=True, dt_min=0.0,
             dt_max=float("inf")):
    """Mamba-2's selective scan in float64, token by token (HF's selective_state_update once per token).
    x [T, H, P]; dt [T, H]; A [H]; B, C [T, G, N] (head h reads group h // (H // G)); D, dt_bias [H] or
    None; state [H, P, N] or None (zeros). d = dt + dt_bias, softplus (torch's threshold 20) if
    dt_softplus, clamped to [dt_min, dt_max]; S = S exp(d A) + d x B^T; y = S C + D x.
    -> (y [T, H, P], final state [H, P, N])."""
    x, dt, A, B, C = _f64(x), _f64(dt), _f64(A), _f64(B), _f64(C)
    T, H, P = x.shape
    G, N = B.shape[1], B.shape[2]
    B, C = np.repeat(B, H // G, axis=1), np.repeat(C, H // G, axis=1)   # [T, H, N]
    S = np.zeros((H, P, N)) if state is None else _f64(state).copy()
    y = np.zeros((T, H, P))
    for t in range(T):
        d = dt[t] + (0.0 if dt_bias is None else _f64(dt_bias))
        if dt_softplus:
            d = np.where(d > 20.0, d, np.log1p(np.exp(np.minimum(d, 20.0))))
        d = np.minimum(np.maximum(d, dt_min), dt_max)
        S = S * np.exp(d * A)[:, None, None] + (d[:, None] * x[t])[:, :, None] * B[t][:, None, :]
        y[t] = np.einsum("hpn,hn->hp", S, C[t])
        if D is not None:
            y[t] += _f64(D)[:, None] * x[t]
    return y, S
