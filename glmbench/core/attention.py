"""Attention over the paged KV cache, and whole attention sub-layers (C kernels: csrc/attention_*.c).

Ops (float32; the T queries are the LAST T tokens already appended to `cache` at `layer`; causal):

    gqa_attention(q[T, Hq, Dh], cache, layer, *, scale=None, n_splits=None, window=None, softcap=None)
        -> [T, Hq, Dv]   (window: sliding window in tokens, None = the cache layer's own; softcap:
        Gemma 2's attention logit soft-capping cap * tanh(s / cap), None = off)
    mla_attention(q_nope[T, H, Dn], q_rope[T, H, Dr], cache, layer, kv_b_weight[H*(Dn+Dv), R], *,
                  v_head_dim, scale=None, strategy="flash", n_splits=None) -> [T, H, Dv]

Both run the flash (online-softmax) form: memory O(chunk x head dim), never O(chunk x depth).
`n_splits` cuts the cache into that many parts with a partial softmax each, combined at the end
(flash-decoding); None picks enough parts to keep every thread busy. MLA strategies give the same
numbers up to float32 rounding:

    naive     decompress the latent cache to per-head K = [k_nope, k_rope] and V with kv_b on every
              call (256 tokens at a time), then per-head attention. ~H*(Dn+Dv)*R FLOP/token extra.
    absorbed  fold kv_b's K part into the query (q_lat = W_k^T q_nope) and its V part into the output;
              attention is MQA over (R + Dr)-dim keys and R-dim values, all H heads sharing each
              cached row read. Threads split the heads.
    flash     absorbed, with the cache split across threads (flash-decoding) for long contexts.

Sub-layers (weights by HF names relative to `model.layers.{i}.self_attn.`; cfg: configs.ModelConfig):

    gqa_block(x[T, D], w, cache, layer, positions[T], cfg, model_layer=None) -> [T, D]
    mla_block(x[T, D], w, cache, layer, positions[T], cfg, strategy="flash") -> [T, D]

Each appends the new tokens' K/V (or latent + rope key) to `cache` at `layer` and attends.
"""
from __future__ import annotations

import weakref

import numpy as np

from glmbench import vocab
from glmbench.core import ops
from glmbench.core.quant import QTensor, _fmt_id, dequantize, linear_pair
from glmbench.core._loader import _core

__all__ = ["gqa_attention", "mla_attention", "gqa_block", "mla_block", "MLA_STRATEGIES", "gqa_sink_attention",
           "gqa_sink_block", "KVBSplit"]

MLA_STRATEGIES = vocab.MLA_STRATEGIES


def _opt_scale(scale):
    if scale is None:
        return 0.0  # the C core's "default": 1/sqrt(query-key head dim)
    s = ops._float_arg("scale", scale)
    if not (s > 0.0 and np.isfinite(s)):
        raise ValueError(f"`scale` must be a positive finite number, got {scale!r}")
    return s


def _opt_splits(n_splits):
    if n_splits is None:
        return 0
    if isinstance(n_splits, (bool, np.bool_)) or not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
        raise ValueError(f"`n_splits` must be None or an int >= 1, got {n_splits!r}")
    return int(n_splits)


def _layer(layer):
    if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, (int, np.integer)):
        raise TypeError(f"`layer` must be an int, got {type(layer).__name__} {layer!r}")
    return int(layer)


def gqa_attention(q: np.ndarray, cache, layer: int, *, scale: float | None = None,
                  n_splits: int | None = None, window: int | None = None,
                  softcap: float | None = None, sinks: np.ndarray | None = None) -> np.ndarray:
    """Causal GQA attention of q[T, Hq, Dh] float32 against cache layer `layer` (its last T tokens
    are the queries' own). Query head j reads KV head j // (Hq / n_kv_heads). scale defaults to
    1/sqrt(Dh) (Gemma: query_pre_attn_scalar ** -0.5).

    window: the query at position p sees keys p - window + 1 .. p (HF's `sliding_window`); None =
        the cache layer's own window (KVCache.gqa(windows=...); none = full attention). Only the
        window's keys are read.
    softcap: scores s = (scale q) . k become softcap * tanh(s / softcap) before the softmax (Gemma 2's
        attn_logit_softcapping); None = off.
    sinks: [Hq] float32, one learned logit per query head in each row's softmax denominator whose
        probability is dropped (GPT-OSS, HF modeling_gpt_oss.eager_attention_forward); None = off.
        Every kernel path runs as without; the sinks enter where the cache splits' softmax states
        are combined (csrc/attention_gqa.c, gb_attn_combine_sink).
    -> [T, Hq, Dv] float32."""
    if window is not None:
        if isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer)):
            raise TypeError(f"`window` must be None or an int >= 1, got {type(window).__name__} {window!r}")
        if window < 1:
            raise ValueError(f"`window` must be None or an int >= 1, got {window}")
    cap = 0.0
    if softcap is not None:
        cap = ops._float_arg("softcap", softcap)
        if not (cap > 0.0 and np.isfinite(cap)):
            raise ValueError(f"`softcap` must be None or a positive finite number, got {softcap!r}")
    return _core.gqa_attention(q, cache, _layer(layer), _opt_scale(scale), _opt_splits(n_splits),
                               0 if window is None else int(window), cap, sinks)


_KP_V = ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs")   # v_b formats read repacked (csrc/quant_k.h)
_FLOAT_IDS = {np.dtype(np.float32): (0, "f32"), np.dtype(np.float16): (1, "f16"), np.dtype(np.uint16): (2, "bf16")}


class KVBSplit:
    """kv_b_proj as GGUF deepseek2 files store it (llama.cpp's MLA layout): k_b [H, R, Dn] (W_k,h
    transposed: R rows of Dn per head) and v_b [H, Dv, R], each a float array (float32, float16,
    bfloat16 as uint16 bits) or a core.quant.QTensor, in its own format. mla_attention reads them as
    stored at decode (the absorbed products q_lat[h] = k_b[h] . q_nope[h] and out[h] = v_b[h] . o_lat[h]
    are GEMVs over the stored rows, the activations quantized per block as ggml does: csrc/
    attention_mla.h, gb_mla_attention_kb_vb); prefill and the naive strategy join them into a float32
    kv_b per call (`joined()`, the same function in C). Acts as the [H*(Dn+Dv), R] matrix it stands
    for: `shape`, `nbytes` (the stored bytes), `dequantize()`."""

    __slots__ = ("k_b", "v_b", "_f32", "_kp")
    ndim = 2

    def __init__(self, k_b, v_b):
        for name, a in (("k_b", k_b), ("v_b", v_b)):
            if isinstance(a, QTensor):
                continue
            if not isinstance(a, np.ndarray) or a.dtype not in _FLOAT_IDS:
                raise TypeError(f"`{name}` must be a float32/float16/uint16 (bf16) array or a QTensor, got "
                                f"{getattr(a, 'dtype', type(a).__name__)}")
        ks, vs = tuple(k_b.shape), tuple(v_b.shape)
        if len(ks) != 3 or len(vs) != 3 or ks[0] != vs[0] or ks[1] != vs[2]:
            raise ValueError(f"`k_b` [H, R, Dn] and `v_b` [H, Dv, R] disagree: shapes {ks} and {vs}")
        self.k_b, self.v_b = k_b, v_b
        self._f32 = None  # joined() kept for prefill (prefill_kv_b)
        self._kp = None   # packed_k(), made on first use

    @staticmethod
    def _id(a):
        return (_fmt_id(a.fmt), a.fmt) if isinstance(a, QTensor) else _FLOAT_IDS[a.dtype]

    @property
    def fmt(self) -> str:
        """'<k_b format>+<v_b format>', e.g. 'q8_0+q4_K'."""
        return f"{self._id(self.k_b)[1]}+{self._id(self.v_b)[1]}"

    @property
    def shape(self) -> tuple:
        H, R, Dn = self.k_b.shape
        return (H * (Dn + self.v_b.shape[1]), R)

    @property
    def nbytes(self) -> int:
        return int(self.k_b.nbytes + self.v_b.nbytes)

    def _args(self):
        out = []
        for a in (self.k_b, self.v_b):
            out += [np.ascontiguousarray(a.data if isinstance(a, QTensor) else a), self._id(a)[0]]
        return out

    def packed_v(self):
        """v_b in its K format's repacked layout (QTensor.repack: 16 rows interleaved, read by the
        decode GEMV as one stream, bit-identical to the stored rows), made on first use; None when
        v_b is not such a format or its heads are not whole 16-row groups."""
        v = self.v_b
        if not (isinstance(v, QTensor) and v.fmt in _KP_V and v.shape[1] % 16 == 0 and v.shape[2] % 256 == 0):
            return None
        return v.repack().packed

    def packed_k(self):
        """k_b in q8_0/q4_0 packed per head (csrc/qgemm.h's 16-row interleaved layout of each [R, Dn]),
        read by the decode products instead of the stored rows (the same integer block dots; on
        GLM-4.7-Flash's [512, 192] heads 2.2x the stored rows' GEMV). A copy beside the stored bytes
        (which prefill's join and `data` keep reading): +1.0x k_b's bytes. Made on first use; None
        when k_b is not q8_0/q4_0 (GGUF's q5_0 k_b loads as its exact q8_0 twin, checkpoint.py)."""
        k = self.k_b
        if not (isinstance(k, QTensor) and k.fmt in ("q8_0", "q4_0")):
            return None
        if self._kp is None:
            self._kp = _core.qrepack(np.ascontiguousarray(k.data), _fmt_id(k.fmt), int(k.shape[2]))
        return self._kp

    def joined(self) -> np.ndarray:
        """The float32 kv_b [H*(Dn+Dv), R] (HF's kv_b_proj.weight layout) these two stand for."""
        kb, kf, vb, vf = self._args()
        return _core.mla_kv_b_f32(kb, kf, vb, vf, int(self.k_b.shape[2]), int(self.k_b.shape[1]))

    dequantize = joined

    def __repr__(self) -> str:
        return f"KVBSplit(k_b {self.k_b.shape} {self._id(self.k_b)[1]}, v_b {self.v_b.shape} {self._id(self.v_b)[1]})"


# kv_b goes to the C core as float32, float16 or bfloat16 (uint16) as stored; a quantized QTensor is
# dequantized to float32 once per weight and kept while that weight lives (a per-call conversion
# would re-read and re-write the whole matrix every token).
_F32 = {}


def _kv_b_arg(w):
    if isinstance(w, np.ndarray):
        if w.dtype in (np.float32, np.float16, np.uint16):
            return w
        raise TypeError(f"`kv_b_weight` must be float32, float16 or uint16 (bfloat16), got {w.dtype}")
    if not (hasattr(w, "fmt") and hasattr(w, "data")):
        raise TypeError(f"`kv_b_weight` must be a numpy.ndarray or a QTensor, got {type(w).__name__}")
    key_obj = w.data
    hit = _F32.get(id(key_obj))
    if hit is not None and hit[0]() is key_obj:
        return hit[1]
    f = np.ascontiguousarray(dequantize(w), dtype=np.float32)
    ref = weakref.ref(key_obj, lambda _r, k=id(key_obj): _F32.pop(k, None))
    _F32[id(key_obj)] = (ref, f)
    return f


_PREFILL_F32 = {}


def prefill_kv_b(w):
    """The float32 kv_b a prefill (T > 1) or the naive strategy runs on, made once per weight and kept
    while it lives: a KVBSplit's joined() (otherwise joined again on every call: a dequantize and
    transpose of H*(Dn+Dv)*R floats, single-threaded), a 16-bit kv_b widened (exactly; otherwise
    widened head by head on every call). The C core computes the same numbers from either form:
    it joins or widens to this very array before its float32 GEMMs. Costs 4 bytes per kv_b weight
    (GLM-4.7-Flash: 18 MiB per layer); decode (T = 1, absorbed/flash) reads the weight as stored."""
    if isinstance(w, KVBSplit):
        if w._f32 is None:
            w._f32 = w.joined()
        return w._f32
    if isinstance(w, np.ndarray) and w.dtype in (np.float16, np.uint16):
        hit = _PREFILL_F32.get(id(w))
        if hit is not None and hit[0]() is w:
            return hit[1]
        f = (w.astype(np.float32) if w.dtype == np.float16 else
             (w.astype(np.uint32) << 16).view(np.float32))   # bf16 bits -> float32, exact
        f = np.ascontiguousarray(f)
        _PREFILL_F32[id(w)] = (weakref.ref(w, lambda _r, k=id(w): _PREFILL_F32.pop(k, None)), f)
        return f
    return _kv_b_arg(w)


def mla_attention(q_nope: np.ndarray, q_rope: np.ndarray, cache, layer: int, kv_b_weight, *,
                  v_head_dim: int, scale: float | None = None, strategy: str = "flash",
                  n_splits: int | None = None, compute: str = "auto") -> np.ndarray:
    """MLA attention (see the module docstring for the strategies). q_nope[T, H, Dn], q_rope[T, H, Dr]
    float32 (q_rope already rotated, in the same layout as the cached rope keys); kv_b_weight
    [H*(Dn+Dv), R] (HF kv_b_proj.weight; float32, float16, bf16 as uint16, a QTensor, or a KVBSplit:
    GGUF's k_b / v_b read as stored);
    scale defaults to 1/sqrt(Dn + Dr). compute="f32": a KVBSplit's decode products on float32
    activations too (its joined float32 kv_b, made for the call; default "auto": quantized
    activations for quantized k_b / v_b, as ggml runs them). -> [T, H, Dv] float32."""
    if compute not in ("auto", "f32"):
        raise ValueError(f"`compute` must be 'auto' or 'f32', got {compute!r}")
    if compute == "f32" and isinstance(kv_b_weight, KVBSplit):
        kv_b_weight = kv_b_weight.joined()
    vocab.mla_strategy(strategy, "strategy")
    if isinstance(v_head_dim, (bool, np.bool_)) or not isinstance(v_head_dim, (int, np.integer)):
        raise TypeError(f"`v_head_dim` must be an int, got {type(v_head_dim).__name__} {v_head_dim!r}")
    T = getattr(q_nope, "shape", (0,))[0] if getattr(q_nope, "ndim", 0) == 3 else 0
    if T > 1 or (strategy == "naive" and T >= 1):   # the float32 kv_b, kept (prefill_kv_b)
        kv_b_weight = prefill_kv_b(kv_b_weight)
    if isinstance(kv_b_weight, KVBSplit):   # k_b / v_b as stored
        return _core.mla_attention_kb_vb(q_nope, q_rope, cache, _layer(layer), *kv_b_weight._args(), int(v_head_dim),
                                         _opt_scale(scale), strategy, _opt_splits(n_splits), kv_b_weight.packed_v(),
                                         kv_b_weight.packed_k())
    return _core.mla_attention(q_nope, q_rope, cache, _layer(layer), _kv_b_arg(kv_b_weight), int(v_head_dim),
                               _opt_scale(scale), strategy, _opt_splits(n_splits))


# ---- sub-layers -----------------------------------------------------------------------------

def _positions(positions, T):
    p = np.asarray(positions)
    if p.dtype.kind not in "iu":
        raise TypeError(f"`positions` must be integers, got {p.dtype}")
    if p.shape != (T,):
        raise ValueError(f"`positions` must have shape ({T},) to match x, got {p.shape}")
    if p.dtype.kind == "u" and p.size and int(p.max()) > np.iinfo(np.int64).max:   # (the cast below would wrap it)
        raise ValueError(f"`positions` must fit int64, got {int(p.max())}")
    return np.ascontiguousarray(p, dtype=np.int64)


def _x2d(x, D):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"`x` must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"`x` must be float32, got {x.dtype}")
    if x.ndim != 2 or x.shape[1] != D:
        raise ValueError(f"`x` must have shape (T, {D}) (hidden_size), got {x.shape}")
    return x


def _need(w, name):
    if not hasattr(w, "get"):
        raise TypeError(f"`w` must be a dict of the layer's attention weights by HF name, got {type(w).__name__}")
    try:
        return w[name]
    except KeyError:
        raise KeyError(f"attention weights lack {name!r} (names are relative to 'model.layers.<i>.self_attn.')") from None


def _shaped(w, name, shape, what, need=True):
    """w[name] (a float array, QTensor or KVBSplit) after checking its shape is `shape` (`what`: the config's
    sizes it follows), so a wrong weight is refused before the block appends to the cache; None where the
    weight is optional (need=False) and absent."""
    a = _need(w, name) if need else w.get(name)
    if a is not None and tuple(getattr(a, "shape", ())) != tuple(shape):
        raise ValueError(f"attention weight {name!r} has shape {tuple(getattr(a, 'shape', ()))}; the config needs "
                         f"{tuple(shape)} ({what})")
    return a


def _model_layer(cfg, layer, model_layer):
    li = layer if model_layer is None else _layer(model_layer)
    if not 0 <= li < cfg.n_layers:
        raise ValueError(f"`model_layer`={li} is out of range for a model of {cfg.n_layers} layers")
    return li


def _check_cache(cache, layer, kind, T):
    if getattr(cache, "parts", None) is not None and hasattr(cache, "locate"):   # a KVCacheGroup
        raise TypeError(f"`cache` is a KVCacheGroup: pass the part holding the layer and its index there, "
                        f"cache.locate(layer) -> (part, index)")
    if getattr(cache, "kind", None) != kind:
        raise ValueError(f"`cache` must be a {kind.upper()} KVCache, got {cache!r}")
    layer = _layer(layer)
    if not 0 <= layer < cache.n_layers:
        raise ValueError(f"`layer`={layer} is out of range for a cache of {cache.n_layers} layers")
    held = cache.length(layer)
    if held + T > cache.capacity_tokens:
        raise ValueError(f"KV cache full: layer {layer} holds {held} of {cache.capacity_tokens} tokens, cannot append {T}")
    return layer


def gqa_block(x: np.ndarray, w: dict, cache, layer: int, positions, cfg, model_layer: int | None = None,
              rope_seq_len: int | None = None) -> np.ndarray:
    """Dense GQA attention sub-layer (Llama/Qwen3/Mistral/Seed-OSS/Gemma 3): q, k, v projections (+
    biases when present in `w`), optional per-head q_norm/k_norm (cfg.qk_norm, Qwen3: before rope; Hunyuan,
    cfg.qk_norm_after_rope: after it),
    rope on the first cfg.rope_dim dims in cfg.rope_layout (cfg.layer_rope: Gemma 3's windowed layers
    by their local base), append K/V, attention with cfg.softmax_scale, the layer's sliding window
    (cfg.layer_window) and cfg.attn_logit_softcapping, o_proj. model_layer: the model's index of this
    layer (its window and rope), default `layer` (the cache layer). rope_seq_len: the sequence length that
    picks longrope's short or long factors (cfg.layer_rope; None: the last position + 1, HF's
    max(position_ids) + 1).
    x[T, hidden] float32 (already input_layernorm-ed) -> [T, hidden]."""
    T = _x2d(x, cfg.hidden_size).shape[0]
    pos = _positions(positions, T)
    Hq, Hkv, Dh, Dv = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim or cfg.head_dim
    if Hq % Hkv:
        raise ValueError(f"cfg.n_heads={Hq} is not a multiple of cfg.n_kv_heads={Hkv}")
    layer = _check_cache(cache, layer, "gqa", T)
    li = _model_layer(cfg, layer, model_layer)
    win = cfg.layer_window(li)
    cw = cache.windows[layer]
    if cw and cw != win:
        raise ValueError(f"cache layer {layer} keeps a window of {cw} tokens but model layer {li} attends to "
                         f"{'all tokens' if win is None else f'{win} tokens'}")
    if (cache.n_kv_heads, cache.head_dim, cache.v_head_dim) != (Hkv, Dh, Dv):
        raise ValueError(f"`cache` holds {cache.n_kv_heads} KV heads of {cache.head_dim}/{cache.v_head_dim} dims; "
                         f"cfg needs {Hkv} of {Dh}/{Dv}")
    _gqa_weights(w, cfg, Hq, Hkv, Dh, Dv)
    gate = None
    if cfg.attn_output_gate and "gate_proj.weight" in w:
        # AFMoE: its own gate_proj gives each head channel's gate (HF AfmoeAttention); q_proj the queries alone
        q = ops.linear(x, _need(w, "q_proj.weight"), w.get("q_proj.bias")).reshape(T, Hq, Dh)
        gate = ops.linear(x, w["gate_proj.weight"]).reshape(T, Hq, Dv)
    elif cfg.attn_output_gate:
        # Qwen3-Next / Qwen3.5: q_proj gives each head's query and then its output gate (HF: chunk of
        # the [T, H, 2 Dh] view); the attention output is multiplied by sigmoid(gate) before o_proj
        qg = ops.linear(x, _need(w, "q_proj.weight"), w.get("q_proj.bias")).reshape(T, Hq, 2 * Dh)
        q, gate = np.ascontiguousarray(qg[:, :, :Dh]), qg[:, :, Dh:]
    else:
        q = ops.linear(x, _need(w, "q_proj.weight"), w.get("q_proj.bias")).reshape(T, Hq, Dh)
    k = ops.linear(x, _need(w, "k_proj.weight"), w.get("k_proj.bias")).reshape(T, Hkv, Dh)
    v = ops.linear(x, _need(w, "v_proj.weight"), w.get("v_proj.bias")).reshape(T, Hkv, Dv)
    after = bool(getattr(cfg, "qk_norm_after_rope", False))   # Hunyuan: the per-head norms on the rotated q / k
    if cfg.qk_norm and cfg.layer_norm:
        # Command-R+: a LayerNorm per head (CohereLayerNorm over head_dim, a weight row per head)
        q = ops.layer_norm(q, _need(w, "q_norm.weight").reshape(Hq, Dh), cfg.rms_norm_eps)
        k = ops.layer_norm(k, _need(w, "k_norm.weight").reshape(Hkv, Dh), cfg.rms_norm_eps)
    elif cfg.qk_norm and cfg.qk_norm_all_heads:
        # OLMoE (MiniMax-M2 alike): one RMSNorm over each token's whole projection, all heads at once
        q = ops.rms_norm(q.reshape(T, Hq * Dh), _need(w, "q_norm.weight"), cfg.rms_norm_eps).reshape(T, Hq, Dh)
        k = ops.rms_norm(k.reshape(T, Hkv * Dh), _need(w, "k_norm.weight"), cfg.rms_norm_eps).reshape(T, Hkv, Dh)
    elif cfg.qk_norm and not after:
        q = ops.rms_norm(q, _need(w, "q_norm.weight"), cfg.rms_norm_eps)
        k = ops.rms_norm(k, _need(w, "k_norm.weight"), cfg.rms_norm_eps)
    clip = getattr(cfg, "clip_qkv", None)
    if clip:   # OLMoE's clip_qkv: q, k, v clamped after the projections and the q / k norms
        c = np.float32(clip)
        q, k, v = (np.clip(a, -c, c) for a in (q, k, v))
    if cfg.layer_rotates(li):   # (Cohere2's global layers rotate nothing)
        if getattr(cfg, "rope_type", None) == "longrope":
            rot = cfg.layer_rope(li, int(rope_seq_len) if rope_seq_len is not None else int(pos.max()) + 1)
        else:
            rot = cfg.layer_rope(li)
        q = ops.rope(q, pos, **rot)
        k = ops.rope(k, pos, **rot)
    if after:
        q = ops.rms_norm(q, _need(w, "q_norm.weight"), cfg.rms_norm_eps)
        k = ops.rms_norm(k, _need(w, "k_norm.weight"), cfg.rms_norm_eps)
    cache.append(layer, k, v)
    o = gqa_attention(q, cache, layer, scale=cfg.softmax_scale, window=win, softcap=cfg.attn_logit_softcapping)
    if gate is not None:
        o = o * (np.float32(1.0) / (np.float32(1.0) + np.exp(-gate, dtype=np.float32)))
    return ops.linear(np.ascontiguousarray(o.reshape(T, Hq * Dv)), _need(w, "o_proj.weight"), w.get("o_proj.bias"))


def _gqa_weights(w, cfg, Hq, Hkv, Dh, Dv):
    """The projections' shapes against the config (before anything is appended to the cache)."""
    D = cfg.hidden_size
    own_gate = cfg.attn_output_gate and w.get("gate_proj.weight") is not None
    nq = (2 if cfg.attn_output_gate and not own_gate else 1) * Hq * Dh
    for name, rows, cols, what in (("q_proj", nq, D, "query heads x head_dim" + (" x 2 (query, gate)" if nq == 2 * Hq * Dh else "")),
                                   ("k_proj", Hkv * Dh, D, "n_kv_heads x head_dim"), ("v_proj", Hkv * Dv, D, "n_kv_heads x v_head_dim"),
                                   ("o_proj", D, Hq * Dv, "hidden_size, heads x v_head_dim")):
        _shaped(w, name + ".weight", (rows, cols), what + ", hidden_size" if name != "o_proj" else what)
        _shaped(w, name + ".bias", (rows,), "the projection's rows", need=False)
    if own_gate:
        _shaped(w, "gate_proj.weight", (Hq * Dv, D), "heads x v_head_dim, hidden_size")


def _hf_deinterleaves(cfg) -> bool:
    """HF glm4_moe_lite / deepseek_v3 with rope_interleave (default True) write the rotated rope dims
    de-interleaved (evens then odds; modeling_glm4_moe_lite.apply_rotary_pos_emb_interleave,
    transformers 5.24); deepseek_v2 keeps them interleaved. q.k is the same either way; following
    HF makes our cache hold the same rope keys as HF's. glm4_moe_lite with rope_interleave false
    loads as rope_layout "half" (HF's rotate_half, no permutation; configs.from_hf)."""
    hf = getattr(cfg, "hf", None) or {}
    return (cfg.rope_layout == "interleaved" and cfg.model_type in ("glm4_moe_lite", "deepseek_v3")
            and bool(hf.get("rope_interleave", True)))


def mla_block(x: np.ndarray, w: dict, cache, layer: int, positions, cfg, strategy: str = "flash") -> np.ndarray:
    """MLA attention sub-layer as GLM-4.7-Flash / DeepSeek-V2 define it (docs/SOURCES.md §1):
    q = q_b(RMSNorm(q_a x)) (q_proj x when cfg.q_lora_rank is None); [c, k_rope] = kv_a_proj_with_mqa x;
    latent = kv_a_layernorm(c) (eps cfg.latent_norm_eps = 1e-6); rope (cfg.rope_layout) on the Dr rope
    dims of q and on k_rope; append (latent, k_rope); attention (`strategy`) with cfg.softmax_scale
    (1/sqrt(Dn + Dr), times YaRN mscale^2 where configured); o_proj.
    x[T, hidden] float32 (already input_layernorm-ed) -> [T, hidden]."""
    vocab.mla_strategy(strategy, "strategy")
    T = _x2d(x, cfg.hidden_size).shape[0]
    pos = _positions(positions, T)
    H, Dn, Dr, Dv, R = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    layer = _check_cache(cache, layer, "mla", T)
    if (cache.kv_lora_rank, cache.rope_dim) != (R, Dr):
        raise ValueError(f"`cache` holds latents of {cache.kv_lora_rank} + {cache.rope_dim}; cfg needs {R} + {Dr}")
    # the projections' shapes against the config, before anything is appended to the cache
    D = cfg.hidden_size
    if cfg.q_lora_rank:
        _shaped(w, "q_a_proj.weight", (cfg.q_lora_rank, D), "q_lora_rank, hidden_size")
        _shaped(w, "q_b_proj.weight", (H * (Dn + Dr), cfg.q_lora_rank), "heads x (qk_nope + qk_rope), q_lora_rank")
    else:
        _shaped(w, "q_proj.weight", (H * (Dn + Dr), D), "heads x (qk_nope + qk_rope), hidden_size")
    _shaped(w, "kv_a_proj_with_mqa.weight", (R + Dr, D), "kv_lora_rank + qk_rope, hidden_size")
    _shaped(w, "kv_b_proj.weight", (H * (Dn + Dv), R), "heads x (qk_nope + v_head_dim), kv_lora_rank")
    _shaped(w, "o_proj.weight", (D, H * Dv), "hidden_size, heads x v_head_dim")
    _shaped(w, "o_proj.bias", (D,), "hidden_size", need=False)
    eps = getattr(cfg, "latent_norm_eps", 1e-6)
    if cfg.q_lora_rank:
        # q_a and kv_a read the same x: one call where quant.fuse_rows stacked them (same numbers)
        wq, wkv = _need(w, "q_a_proj.weight"), _need(w, "kv_a_proj_with_mqa.weight")
        if isinstance(wq, QTensor) and isinstance(wkv, QTensor):
            qa, ckv = linear_pair(x, wq, wkv, w.get("q_a_proj.bias"), w.get("kv_a_proj_with_mqa.bias"))
            qa, ckv = np.ascontiguousarray(qa), np.ascontiguousarray(ckv)
        else:
            qa = ops.linear(x, wq, w.get("q_a_proj.bias"))
            ckv = ops.linear(x, wkv, w.get("kv_a_proj_with_mqa.bias"))
        q = ops.linear(ops.rms_norm(qa, _need(w, "q_a_layernorm.weight"), eps), _need(w, "q_b_proj.weight"))
    else:
        q = ops.linear(x, _need(w, "q_proj.weight"))
        ckv = ops.linear(x, _need(w, "kv_a_proj_with_mqa.weight"), w.get("kv_a_proj_with_mqa.bias"))
    q = q.reshape(T, H, Dn + Dr)
    latent = ops.rms_norm(ckv[:, :R], _need(w, "kv_a_layernorm.weight"), eps)
    rot = dict(theta=cfg.rope_theta, rot_dim=Dr, layout=cfg.rope_layout, inv_freq=cfg.rope_inv_freq(),
               attention_factor=cfg.rope_attention_factor())
    q_rope = ops.rope(q[..., Dn:], pos, **rot)
    k_rope = ops.rope(ckv[:, None, R:], pos, **rot)[:, 0, :]
    if _hf_deinterleaves(cfg):
        q_rope = np.concatenate([q_rope[..., 0::2], q_rope[..., 1::2]], axis=-1)
        k_rope = np.concatenate([k_rope[..., 0::2], k_rope[..., 1::2]], axis=-1)
    cache.append(layer, latent, k_rope)
    o = mla_attention(q[..., :Dn], q_rope, cache, layer, _need(w, "kv_b_proj.weight"), v_head_dim=Dv,
                      scale=cfg.softmax_scale, strategy=strategy)
    return ops.linear(o.reshape(T, H * Dv), _need(w, "o_proj.weight"), w.get("o_proj.bias"))


# ---- attention sinks (GPT-OSS) ------------------------------------------------------------------
# NumPy float32 for now (no C kernel yet): the layer reads its keys back from the cache each call.
# Its float64 twin is glmbench.core.reference.attention(..., sinks=).

def gqa_sink_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, sinks: np.ndarray, *,
                       scale: float | None = None, window: int | None = None) -> np.ndarray:
    """Causal GQA attention with a learned sink logit per query head (GPT-OSS, HF
    modeling_gpt_oss.eager_attention_forward): each head's softmax has one more logit, sinks[h], in
    its denominator, whose probability is dropped. q[T, Hq, Dh] are the LAST T of the L positions of
    k[L, Hkv, Dh] / v[L, Hkv, Dv]; query head j reads KV head j // (Hq / Hkv); window as
    gqa_attention. float32 throughout -> [T, Hq, Dv]."""
    arrs = {}
    for name, a in (("q", q), ("k", k), ("v", v), ("sinks", sinks)):
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            raise TypeError(f"`{name}` must be a float numpy.ndarray, got {getattr(a, 'dtype', type(a).__name__)}")
        if a.ndim != (1 if name == "sinks" else 3):
            raise ValueError(f"`{name}` must be {'1-D [Hq]' if name == 'sinks' else '3-D'}, got shape {a.shape}")
        a = np.asarray(a, np.float32)
        if not np.isfinite(a).all():
            raise ValueError(f"`{name}` contains NaN or inf")
        arrs[name] = a
    q, k, v, sinks = arrs["q"], arrs["k"], arrs["v"], arrs["sinks"]
    T, Hq, Dh = q.shape
    L, Hkv = k.shape[0], k.shape[1]
    if Hkv < 1 or Hq % Hkv or k.shape[2] != Dh or v.shape[:2] != (L, Hkv) or sinks.shape != (Hq,) or L < T:
        raise ValueError(f"gqa_sink_attention: q {q.shape} [T, Hq, Dh], k {k.shape} [L >= T, Hkv | Hq, Dh], "
                         f"v {v.shape} [L, Hkv, Dv], sinks {sinks.shape} [Hq] do not fit")
    if window is not None and (isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer))
                               or window < 1):
        raise ValueError(f"`window` must be None or an int >= 1, got {window!r}")
    g = Hq // Hkv
    sc = np.float32(Dh ** -0.5 if scale is None else _opt_scale(scale))
    qg = q.reshape(T, Hkv, g, Dh)
    s = np.einsum("tkgd,lkd->kgtl", qg, k, optimize=True) * sc          # [Hkv, g, T, L]
    pos = (L - T + np.arange(T))[:, None]
    masked = np.arange(L)[None, :] > pos
    if window is not None:
        masked |= np.arange(L)[None, :] <= pos - window
    s[..., masked] = -np.inf
    sk = np.asarray(sinks, np.float32).reshape(Hkv, g, 1, 1)
    m = np.maximum(s.max(axis=-1, keepdims=True), sk)
    p = np.exp(s - m)
    p /= p.sum(axis=-1, keepdims=True) + np.exp(sk - m)
    o = np.einsum("kgtl,lkd->tkgd", p, v, optimize=True)
    return np.ascontiguousarray(o.reshape(T, Hq, v.shape[-1]), dtype=np.float32)


def gqa_sink_block(x: np.ndarray, w: dict, cache, layer: int, positions, cfg,
                   model_layer: int | None = None) -> np.ndarray:
    """GPT-OSS's attention sub-layer: gqa_block's projections (biases), rope (cfg.layer_rope: YaRN)
    and append, then the C core's gqa_attention with w["sinks"] (the kernels of every other GQA model
    over the cache as stored, the sinks added where the softmax states are combined; its NumPy twin is
    gqa_sink_attention), o_proj (+ bias). A windowed layer may be a ring (KVCache.gqa(windows=)): the
    new tokens then go in pieces small enough that each piece's window is still stored
    (ring_tokens - window + 1 tokens)."""
    T = _x2d(x, cfg.hidden_size).shape[0]
    pos = _positions(positions, T)
    Hq, Hkv, Dh, Dv = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim or cfg.head_dim
    layer = _check_cache(cache, layer, "gqa", T)
    li = _model_layer(cfg, layer, model_layer)
    win, cw = cfg.layer_window(li), cache.windows[layer]
    if cw and cw != win:
        raise ValueError(f"cache layer {layer} keeps a window of {cw} tokens but model layer {li} attends to "
                         f"{'all tokens' if win is None else f'{win} tokens'}")
    _gqa_weights(w, cfg, Hq, Hkv, Dh, Dv)
    q = ops.linear(x, _need(w, "q_proj.weight"), w.get("q_proj.bias")).reshape(T, Hq, Dh)
    k = ops.linear(x, _need(w, "k_proj.weight"), w.get("k_proj.bias")).reshape(T, Hkv, Dh)
    v = ops.linear(x, _need(w, "v_proj.weight"), w.get("v_proj.bias")).reshape(T, Hkv, Dv)
    rot = cfg.layer_rope(li)
    q = ops.rope(q, pos, **rot)
    k = ops.rope(k, pos, **rot)
    sinks = np.asarray(_need(w, "sinks"), np.float32)
    if not cw:   # every token kept
        cache.append(layer, k, v)
        o = gqa_attention(q, cache, layer, scale=cfg.softmax_scale, window=win, sinks=sinks)
    else:        # a ring keeps ring_tokens: pieces whose window's keys are all still stored
        step = max(1, cache.ring_tokens(layer) - cw + 1)
        parts = []
        for a in range(0, T, step):
            b = min(T, a + step)
            cache.append(layer, np.ascontiguousarray(k[a:b]), np.ascontiguousarray(v[a:b]))
            parts.append(gqa_attention(np.ascontiguousarray(q[a:b]), cache, layer, scale=cfg.softmax_scale,
                                       window=win, sinks=sinks))
        o = np.concatenate(parts)
    return ops.linear(o.reshape(T, Hq * Dv), _need(w, "o_proj.weight"), w.get("o_proj.bias"))
