"""The paged KV cache (C type in csrc/kvcache.c, bindings in csrc/bind_kvcache.c).

One cache holds `n_layers` sequences. Each layer takes fixed-size blocks of `block_size` tokens
from the cache's pool as it grows, up to `capacity_tokens`; `reset()` returns them to the pool. A
block holds at most `capacity_tokens`: a larger `block_size` is cut to it (`cache.block_size` says so).

    GQA: per token and layer, K [n_kv_heads, head_dim] and V [n_kv_heads, v_head_dim]
    MLA: per token and layer, one row of kv_lora_rank latent (already kv_a_layernorm-ed) followed
         by the rope key of rope_dim (already rotated): 512 + 64 = 576 values for GLM-4.7-Flash

Storage formats (`kv`, f16 by default as everywhere in glmbench): f32, f16, bf16, q8_0, q4_0 (ggml blocks of 32, csrc/quant.h row codec; each
stored row part must then be a multiple of 32). Byte accounting is exact in the storage format:

    bytes_per_token   all layers, e.g. GLM-4.7-Flash bf16: 47 x 576 x 2 = 54,144
    bytes_used        per-layer bytes per token x tokens held, summed over layers
    bytes_allocated   every block obtained from the system (held by a layer or pooled)
    bytes_in_blocks   whole blocks currently held by layers (>= bytes_used)

Sliding windows (GQA; `windows=` one entry per layer, 0 = full attention, e.g. Gemma 3's 5 local
layers of 1024 tokens per global one): a windowed layer keeps only its last tokens in a ring of
ceil((window + chunk) / block_size) blocks, where `chunk` is the most tokens appended to it at
once (attention of T new queries needs the window - 1 keys before them; the one slot more makes it
llama.cpp's SWA rule, n_swa + n_ubatch cells, llama-kv-cache-iswa.cpp). `length(layer)` still
counts every token appended (the next position); `held(layer)` = min(length, window) is what
`read` returns and `bytes_used` counts; `bytes_in_blocks` is the memory really held, ring slack and
partial blocks included: with chunk = n_ubatch and block_size = the pad it equals the cost model's
KV bytes (costmodel.window_cells, costmodel.memory(...).kv).
"""
from __future__ import annotations

import numpy as np

from glmbench import vocab
from glmbench.core._loader import _core

__all__ = ["KVCache", "KVCacheGroup"]

# the most tokens a windowed layer takes at once by default: llama.cpp's n_ubatch (its SWA cache
# keeps n_swa + n_ubatch cells per sequence, llama-kv-cache-iswa.cpp)
DEFAULT_CHUNK = 512


class KVCache(_core.KVCacheBase):
    """Paged KV cache; construct with KVCache.gqa(...) or KVCache.mla(...)."""

    @classmethod
    def gqa(cls, n_layers: int, capacity_tokens: int, n_kv_heads: int, head_dim: int,
            v_head_dim: int | None = None, kv: str = vocab.DEFAULTS["kv"], block_size: int = 64, *,
            windows=None, chunk: int = DEFAULT_CHUNK) -> "KVCache":
        """windows: None, or a window in tokens per layer (0 = full attention; a windowed layer is
        a ring, see the module docstring); chunk: the most tokens appended to a windowed layer at
        once (default 512, llama.cpp's n_ubatch)."""
        v = head_dim if v_head_dim is None else v_head_dim
        c = cls("gqa", _int(n_layers, "n_layers"), _int(capacity_tokens, "capacity_tokens"),
                _int(n_kv_heads, "n_kv_heads"), _int(head_dim, "head_dim"), _int(v, "v_head_dim"),
                _str(kv), _int(block_size, "block_size"))
        if windows is not None:
            if isinstance(windows, (str, bytes)) or not hasattr(windows, "__len__"):
                raise TypeError(f"`windows` must be a sequence of ints (one per layer), got {type(windows).__name__}")
            ws = []
            for i, w in enumerate(windows):
                if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)):
                    raise TypeError(f"`windows`[{i}] must be an int, got {type(w).__name__} {w!r}")
                if w < 0:
                    raise ValueError(f"`windows`[{i}] = {w}: a window must be >= 1 token (0 = full attention)")
                ws.append(int(w))
            c._set_windows(ws, _int(chunk, "chunk"))
        return c

    @classmethod
    def mla(cls, n_layers: int, capacity_tokens: int, kv_lora_rank: int, rope_dim: int,
            kv: str = vocab.DEFAULTS["kv"], block_size: int = 64) -> "KVCache":
        return cls("mla", _int(n_layers, "n_layers"), _int(capacity_tokens, "capacity_tokens"), 1,
                   _int(kv_lora_rank, "kv_lora_rank"), _int(rope_dim, "rope_dim"), _str(kv),
                   _int(block_size, "block_size"))

    # The stored dimensions under their architecture's names.
    @property
    def n_kv_heads(self) -> int:
        return self._dims[0]

    @property
    def head_dim(self) -> int:
        return self._dims[1]

    @property
    def v_head_dim(self) -> int:
        return self._dims[2]

    @property
    def kv_lora_rank(self) -> int:
        return self._dims[1]

    @property
    def rope_dim(self) -> int:
        return self._dims[2]

    def append(self, layer, a, b=None):  # noqa: D401 - signature documented in the module
        """GQA: append(layer, k[T, Hkv, Dh], v[T, Hkv, Dv]); MLA: append(layer, latent[T, R], k_rope[T, Dr]).
        float32, copied into the cache's format; raises ValueError when the layer is full."""
        if b is None:
            raise TypeError("append() needs both parts: (k, v) for GQA, (latent, k_rope) for MLA")
        return super().append(_layer(layer), a, b)

    def length(self, layer) -> int:
        """Tokens appended to `layer` (the position of its next token; a ring stores only the last)."""
        return super().length(_layer(layer))

    def held(self, layer) -> int:
        """Tokens of `layer` attention can still see: min(length, window) for a windowed layer."""
        return super()._layer_state(_layer(layer))[1]

    def ring_tokens(self, layer) -> int:
        """Token slots `layer` stores: a ring's size, or capacity_tokens for a full layer."""
        return super()._layer_state(_layer(layer))[3]

    def read(self, layer):
        return super().read(_layer(layer))

    def locate(self, layer) -> tuple:
        """(the KVCache holding `layer`, its index there): (self, layer) here; KVCacheGroup's parts."""
        layer = _layer(layer)
        if not 0 <= layer < self.n_layers:
            raise ValueError(f"`layer`={layer} is out of range for a cache of {self.n_layers} layers")
        return self, layer

    def fill_synthetic(self, n_tokens, seed=0) -> None:
        return super().fill_synthetic(_int(n_tokens, "n_tokens", 0), int(seed) & 0x7FFFFFFFFFFFFFFF)

    def __repr__(self) -> str:
        if self.kind == "mla":
            dims = f"kv_lora_rank={self.kv_lora_rank}, rope_dim={self.rope_dim}"
        else:
            dims = f"n_kv_heads={self.n_kv_heads}, head_dim={self.head_dim}, v_head_dim={self.v_head_dim}"
        win = f", windows={list(self.windows)}, chunk={self.chunk}" if any(self.windows) else ""
        return (f"KVCache.{self.kind}(n_layers={self.n_layers}, capacity_tokens={self.capacity_tokens}, {dims}, "
                f"kv={self.kv!r}, block_size={self.block_size}{win})")


def _int(v, name, lo=1):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"`{name}` must be an int, got {type(v).__name__} {v!r}")
    if v < lo:
        raise ValueError(f"`{name}` must be >= {lo}, got {v}")
    return int(v)


def _layer(v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"`layer` must be an int, got {type(v).__name__} {v!r}")
    return int(v)


def _str(v):
    if not isinstance(v, str):
        raise TypeError(f"`kv` (the cache format) must be a str (f32, f16, bf16, q8_0, q4_0), got {type(v).__name__} {v!r}")
    return v


class KVCacheGroup:
    """GQA cache layers of more than one geometry (KV heads, head dim, value head dim) standing as one
    cache of n_layers layers: one KVCache per geometry (its `parts`), each holding the layers of that
    geometry in order. Gemma 4's global layers have their own head dim and KV heads
    (ModelConfig.layer_head_dim / layer_kv_heads), so its cache is two KVCaches. Layer l is layer
    `locate(l)[1]` of part `locate(l)[0]`; the attention kernels take that part and index.

    The byte counts (bytes_per_token, bytes_used, bytes_allocated, bytes_in_blocks) are the parts' sums,
    each exact in the storage format; length / held / ring_tokens / read / append go to the layer's part;
    reset and fill_synthetic reach every part."""

    kind = "gqa"

    def __init__(self, capacity_tokens: int, dims, kv: str = vocab.DEFAULTS["kv"], block_size: int = 64, *,
                 windows=None, chunk: int = DEFAULT_CHUNK):
        """dims: one (n_kv_heads, head_dim, v_head_dim) per layer; windows: None or one window per layer
        (0 = full attention), as KVCache.gqa's."""
        if isinstance(dims, (str, bytes)) or not hasattr(dims, "__len__") or not len(dims):
            raise TypeError(f"`dims` must be a non-empty sequence of (n_kv_heads, head_dim, v_head_dim), one per "
                            f"layer, got {dims!r}")
        geo = []
        for i, d in enumerate(dims):
            if not (isinstance(d, (tuple, list)) and len(d) == 3):
                raise TypeError(f"`dims`[{i}] must be (n_kv_heads, head_dim, v_head_dim), got {d!r}")
            geo.append(tuple(_int(v, f"dims[{i}][{j}]") for j, v in enumerate(d)))
        if windows is not None and (isinstance(windows, (str, bytes)) or not hasattr(windows, "__len__")
                                    or len(windows) != len(geo)):
            raise ValueError(f"`windows` must give one window per layer ({len(geo)}), got {windows!r}")
        kinds = list(dict.fromkeys(geo))                 # the geometries in order of first use
        members = [[i for i, g in enumerate(geo) if g == k] for k in kinds]
        self.parts = []
        for k, idx in zip(kinds, members):
            w = None if windows is None else [windows[i] for i in idx]
            self.parts.append(KVCache.gqa(len(idx), capacity_tokens, *k, kv=kv, block_size=block_size,
                                          windows=w if w and any(w) else None, chunk=chunk))
        self._where = [None] * len(geo)
        for p, idx in enumerate(members):
            for j, i in enumerate(idx):
                self._where[i] = (p, j)
        self.dims = tuple(geo)
        self.windows = tuple(int(w) for w in windows) if windows is not None else (0,) * len(geo)
        self.chunk = int(chunk) if any(self.windows) else 0

    def locate(self, layer) -> tuple:
        """(the part KVCache holding `layer`, its index in that part)."""
        layer = _layer(layer)
        if not 0 <= layer < len(self._where):
            raise ValueError(f"`layer`={layer} is out of range for a cache of {len(self._where)} layers")
        p, j = self._where[layer]
        return self.parts[p], j

    # the parts' common settings
    n_layers = property(lambda self: len(self._where))
    capacity_tokens = property(lambda self: self.parts[0].capacity_tokens)
    kv = property(lambda self: self.parts[0].kv)
    block_size = property(lambda self: self.parts[0].block_size)
    # bytes: the parts' sums
    bytes_per_token = property(lambda self: sum(p.bytes_per_token for p in self.parts))
    bytes_used = property(lambda self: sum(p.bytes_used for p in self.parts))
    bytes_allocated = property(lambda self: sum(p.bytes_allocated for p in self.parts))
    bytes_in_blocks = property(lambda self: sum(p.bytes_in_blocks for p in self.parts))

    def append(self, layer, a, b=None):
        c, j = self.locate(layer)
        return c.append(j, a, b)

    def length(self, layer) -> int:
        c, j = self.locate(layer)
        return c.length(j)

    def held(self, layer) -> int:
        c, j = self.locate(layer)
        return c.held(j)

    def ring_tokens(self, layer) -> int:
        c, j = self.locate(layer)
        return c.ring_tokens(j)

    def read(self, layer):
        c, j = self.locate(layer)
        return c.read(j)

    def reset(self) -> None:
        for p in self.parts:
            p.reset()

    def fill_synthetic(self, n_tokens, seed=0) -> None:
        for k, p in enumerate(self.parts):
            p.fill_synthetic(n_tokens, seed=int(seed) + k)

    def __repr__(self) -> str:
        return f"KVCacheGroup({', '.join(repr(p) for p in self.parts)})"
