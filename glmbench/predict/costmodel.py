"""The cost model: predicted decode, prefill, memory and serving for any model on any rig.

Every op of a step gets FLOPs and bytes from the architecture (configs.ModelConfig) and the
storage formats (vocab.py); its time on one card is

    t = max(tensor_flops / (peak[dtype] * eff_c[class]) + vector_flops / (peak_fp32 * eff_c["vector"]),
            bytes / (bandwidth * eff_m[class]))
        + kernels * launch_us                          (when the runtime profile counts launches)

with the efficiencies from a runtime profile (data/runtime/{ideal,typical}.json). Layers of one
kind (dense or MoE) cost the same, so each kind is costed once and multiplied. docs/COSTMODEL.md
explains the model, its assumptions and where it agrees with the study.

Conventions: depth d = tokens already cached; a decode step of batch B runs B independent streams,
each at depth d, one new token each; a prefill chunk of n tokens runs in ubatches of the
runtime's n_ubatch (each ubatch reads the weights once) and produces logits for its last token
only (as llama.cpp does for a prompt). Activations move and cross links as float32 (llama.cpp).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

from glmbench.models import configs
from glmbench import vocab
from glmbench.predict import hardware
from glmbench.predict import kernels as kn
from glmbench.predict.hardware import GIB, Rig
# the runtime profiles (their schema, loading and options) are glmbench.predict.runtime's; the cost
# model's callers name them through it too (cm.load_runtime, cm.RuntimeProfile)
from glmbench.predict.runtime import (BAND_CLASSES, CLASSES, RuntimeProfile, band_class,  # noqa: F401
                                      list_calibrated, list_runtimes, load_runtime, reserve_for, runtime_from_dict,
                                      ubatch_for)

SPLITS = vocab.SPLITS
MLA_STRATEGIES = vocab.MLA_STRATEGIES

ACT_BYTES = 4          # float32 activations (llama.cpp keeps the hidden state in f32)
# llama.cpp pads a sliding-window layer's cache to whole multiples of 256 cells
# (src/llama-kv-cache-iswa.cpp; 256 = its flash-attention padding, earlier releases 32 without it)
SWA_PAD = 256


def window_cells(context: int, window: int, n_ubatch: int, pad: int = SWA_PAD) -> int:
    """Cells (tokens) one stream's cache holds for one sliding-window layer at `context` tokens:
    llama.cpp's SWA cache rule, GGML_PAD(min(n_ctx, n_swa + n_ubatch), pad) (llama-kv-cache-iswa.cpp:
    the window plus the ubatch whose queries need the window before them), the same rule as
    glmbench's own ring (KVCache.gqa(windows=, chunk=n_ubatch, block_size=pad): pad = its block)."""
    n = min(context, window + n_ubatch)
    return -(-n // pad) * pad
SCORE_BYTES = 4        # materialized attention scores/probabilities are f32
Q_TILE = 128           # queries per flash-attention tile in prefill (FlashAttention-2's Br = 128)
DEQUANT_OPS = 2        # vector ops to dequantize one stored value (unpack + scale), per read
SOFTMAX_OPS = 5        # max, sub, exp, sum, scale per score


models_table = configs.models_table


# ---- partial offload (llama.cpp) ----------------------------------------------------------------------
# llama.cpp copies host-held weights to the card for an op of at least this many tokens (the CUDA
# backend's offload_op, GGML_OP_OFFLOAD's min batch size 32) and runs it there; below it (decode),
# the CPU runs the op where its weights are.
OP_OFFLOAD_MIN_BATCH = 32
_EXPERT_PARTS = ("gate", "up", "down")


@dataclass(frozen=True)
class Offload:
    """Where llama.cpp keeps each tensor on one card and its host:
    n_gpu_layers   -ngl: the last N decoder layers on the card (None: all, as -ngl 999); the output
                   layer (final norm, lm_head) is on the card only when N > n_layers (llama.cpp counts
                   it as layer n_layers); a layer on the host runs there, its KV cache in host memory
    n_cpu_moe      --n-cpu-moe N: the routed-expert tensors (ffn_{gate,up,down}_exps) of the first N
                   layers in host memory (n_layers: --cpu-moe); shared experts and the rest stay
    override_tensor -ot PATTERN=CPU: regexes searched in each tensor's GGUF name
                   (blk.3.ffn_down_exps.weight); the matching expert tensors in host memory
    Token embeddings are in host memory in any case (llama.cpp's input layer)."""
    n_gpu_layers: int | None = None
    n_cpu_moe: int = 0
    override_tensor: tuple = ()

    def __post_init__(self):
        if self.n_gpu_layers is not None:
            object.__setattr__(self, "n_gpu_layers", vocab.check_int("n_gpu_layers", self.n_gpu_layers, 0))
        object.__setattr__(self, "n_cpu_moe", vocab.check_int("n_cpu_moe", self.n_cpu_moe, 0))
        ot = self.override_tensor
        ot = (ot,) if isinstance(ot, str) else tuple(ot)
        for pat in ot:
            if not isinstance(pat, str):
                raise ValueError(f"`override_tensor` must hold regex strings, got {pat!r}")
            try:
                re.compile(pat)
            except re.error as e:
                raise ValueError(f"`override_tensor` pattern {pat!r} is not a valid regex: {e}") from None
        object.__setattr__(self, "override_tensor", ot)

    def check(self, cfg) -> None:
        """Errors that need the model: --n-cpu-moe on a dense model, an override matching a tensor that
        is not a routed expert."""
        if self.n_cpu_moe and not cfg.n_routed_experts:
            raise ValueError(f"`n_cpu_moe` keeps expert tensors in host memory; {cfg.name} is dense (has none)")
        for pat in self.override_tensor:
            rx = re.compile(pat)
            hits = [g for g in (vocab.gguf_tensor_name(n) for n in cfg.tensor_shapes())
                    if rx.search(_gguf_full(*g))]
            bad = [_gguf_full(*g) for g in hits if not g[0].startswith(tuple(f"ffn_{p}_exps" for p in _EXPERT_PARTS))]
            if bad:
                raise ValueError(f"`override_tensor` pattern {pat!r} matches {bad[0]}: only routed-expert tensors "
                                 f"(ffn_*_exps) can be kept in host memory in this model")
            if not hits:
                raise ValueError(f"`override_tensor` pattern {pat!r} matches no tensor of {cfg.name} "
                                 f"(GGUF names such as blk.0.ffn_up_exps.weight)")

    @property
    def label(self) -> str:
        parts = []
        if self.n_gpu_layers is not None:
            parts.append(f"ngl {self.n_gpu_layers}")
        if self.n_cpu_moe:
            parts.append(f"n-cpu-moe {self.n_cpu_moe}")
        parts += [f"-ot {p}=CPU" for p in self.override_tensor]
        return ", ".join(parts) or "no offload"

    def fields(self) -> dict:
        """Record fields (llama-bench's names where it has them)."""
        return {"n_gpu_layers": self.n_gpu_layers, "n_cpu_moe": self.n_cpu_moe,
                "override_tensor": ";".join(f"{p}=CPU" for p in self.override_tensor) or None}


def _gguf_full(name: str, layer) -> str:
    return name if layer is None else f"blk.{layer}.{name}"


# ---- setup -------------------------------------------------------------------------------------------
_INTERNED: dict = {}


def interned(cfg: configs.ModelConfig) -> configs.ModelConfig:
    """One object per distinct model config among the Setups: the per-config caches below
    (_weight_table, _cap_factor, ...) then find their key by identity, not by comparing a hundred
    fields (each Setup of a fit, a sweep or a crossover grid loads its own equal copy). Only a
    config equal in the fields equality skips too (its HF dict, rope_scaling, wrapper) is replaced."""
    got = _INTERNED.get(cfg)
    if got is cfg:
        return cfg
    if got is None:
        if len(_INTERNED) >= 512:     # bounded: a process reading many model files
            _INTERNED.clear()
        _INTERNED[cfg] = cfg
        return cfg
    same = got.hf == cfg.hf and got.rope_scaling == cfg.rope_scaling and got.wrapper == cfg.wrapper
    return got if same else cfg


@dataclass(frozen=True)
class Setup:
    """What runs where: a model, a rig, how the model is split over its cards, the formats, the
    MLA strategy (ignored for GQA models) and the runtime profile. `expert_skew`: None for uniform
    routing, a float s for a Zipf(s) expert popularity, or a per-expert histogram (counts)."""
    model: Any
    rig: Any = "rtx-3090"
    split: str = "none"
    weights: str = vocab.DEFAULTS["weights"]
    kv: str = vocab.DEFAULTS["kv"]
    mla_strategy: str = vocab.DEFAULTS["mla_strategy"]
    runtime: Any = vocab.DEFAULTS["runtime"]
    expert_skew: Any = None
    # llama.cpp's partial offload (an Offload or a dict of its fields; None: everything on the cards)
    # and the host whose memory and CPU hold and run what is offloaded (hardware.get_host)
    offload: Any = None
    host: Any = None
    # the formats resolved once from `weights` and `kv` (vocab.Format: block, bytes, dequant)
    weight_fmt: Any = field(init=False, repr=False, compare=False, default=None)
    kv_fmt: Any = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        s = object.__setattr__
        cfg = interned(configs.load(self.model))
        s(self, "model", cfg)
        rig = self.rig
        if not isinstance(rig, Rig):
            rig = Rig(hardware.get_gpu(rig))
        s(self, "rig", rig)
        if self.split not in SPLITS:
            raise ValueError(f"`split` must be one of {SPLITS}, got {self.split!r}")
        if self.split == "none" and rig.n_cards > 1:
            raise ValueError(f"`split`='none' runs on one card but the rig has {rig.n_cards}; "
                             f"use split='layer' or 'tensor', or a 1-card Rig")
        if self.split != "none" and rig.n_cards == 1:
            raise ValueError(f"`split`={self.split!r} needs a rig of 2 or more cards, got 1")
        if self.split == "layer" and rig.n_cards > cfg.n_layers:
            raise ValueError(f"`split`='layer' over {rig.n_cards} cards needs at least as many layers, got {cfg.n_layers}")
        if self.split == "tensor":
            n = rig.n_cards
            if cfg.n_heads % n:
                raise ValueError(f"`split`='tensor' over {n} cards needs num_attention_heads={cfg.n_heads} to divide evenly")
            # (DeciLM: every attention layer's own KV heads)
            kvs = sorted({cfg.layer_kv_heads(i) for i in cfg.attention_layers}) if cfg.layer_kv_list else []
            bad = next((k for k in kvs if k % n and n % k), None)
            if bad is not None:
                raise ValueError(f"`split`='tensor' over {n} cards needs each layer's KV heads to divide evenly or to "
                                 f"divide {n}; {cfg.name} has layers of {bad} (KV heads per layer: {kvs})")
            if cfg.attention != "mla" and cfg.n_kv_heads % n and n % cfg.n_kv_heads:
                # more cards than KV heads: each KV head replicated on n / n_kv cards (vLLM's
                # QKVParallelLinear, num_kv_head_replicas), which needs n a multiple of the heads
                raise ValueError(f"`split`='tensor' over {n} cards needs num_key_value_heads={cfg.n_kv_heads} to "
                                 f"divide evenly, or to divide {n} (each KV head then replicated on "
                                 f"{n} / {cfg.n_kv_heads} cards)")
        if cfg.file_weights is not None:
            # a model file: its own tensors' types and bytes (the `weights` asked for does not apply)
            s(self, "weights", cfg.file_weights.weight_format)
        s(self, "weight_fmt", vocab.weight_format(self.weights))
        s(self, "weights", self.weight_fmt.name)      # the canonical spelling ("Q8_0" -> "q8_0")
        s(self, "kv_fmt", vocab.kv_format(self.kv))
        if not cfg._kv_fits(self.kv_fmt.name):
            # (llama.cpp views its cache a head at a time, ggml_row_size of head_dim: a head that is no whole number
            # of the format's blocks does not run; EXAONE 3.5 2.4B's 80-wide heads in q8_0 / q4_0)
            raise ValueError(f"`kv`={self.kv_fmt.name!r}: {cfg.name}'s cached rows per head ({cfg.head_dim} values) are "
                             f"no whole number of its blocks; use f16, bf16 or f32")
        vocab.mla_strategy(self.mla_strategy)
        s(self, "runtime", load_runtime(self.runtime))
        why = self.runtime.weights_refused(self.weight_fmt)
        if why:
            raise ValueError(f"`weights`: {why}")
        if rig.gpu.kind == "cpu" and self.runtime.fitted_to_gpus:
            raise ValueError(f"the runtime model `{self.runtime.name}` prices a GPU runtime's kernels, fitted to published "
                             f"GPU results; {rig.gpu.name} is a CPU: use `typical` or `ideal`, or a profile calibrated "
                             "on this CPU's own records (glmbench calibrate RECORDS --hardware host)")
        if self.runtime.mla_strategy and cfg.attention == "mla":
            # the runtime model runs its own MLA kernel (ik_llama.cpp's -mla option...)
            s(self, "mla_strategy", self.runtime.mla_strategy)
        if cfg.attention == "mla":
            # without flash attention (-fa 0) a ggml runtime runs MLA unfused (kernels.mla_runs)
            s(self, "mla_strategy", kn.mla_runs(self.mla_strategy, self.runtime))
        s(self, "expert_skew", _check_skew(self.expert_skew, cfg))
        if self.offload is not None:
            off = self.offload
            if isinstance(off, dict):
                off = Offload(**off)
            if not isinstance(off, Offload):
                raise TypeError(f"`offload` must be None, an Offload or a dict of its fields, got {type(off).__name__}")
            if rig.n_cards != 1:
                raise ValueError(f"`offload` is modelled for one card; the rig has {rig.n_cards}")
            off.check(cfg)
            s(self, "offload", off)
            s(self, "host", hardware.get_host(self.host))
        elif self.host is not None:
            s(self, "host", hardware.get_host(self.host))

    @property
    def gpu(self):
        return self.rig.gpu

    @property
    def n_ubatch(self) -> int:
        """The runtime's physical batch on this card: its n_ubatch, or its larger default on big
        cards (runtime.ubatch_for: vLLM's max_num_batched_tokens 8192 on an H100) unless set."""
        return ubatch_for(self.runtime, self.rig.gpu)

    @property
    def n_cards(self) -> int:
        return self.rig.n_cards

    @property
    def label(self) -> str:
        parts = [self.model.name, self.rig.name]
        if self.split != "none":
            parts.append(f"{self.split} split")
        parts.append(f"{self.weights}/{self.kv}")
        if self.model.attention == "mla":
            parts.append(f"MLA {self.mla_strategy}")
        parts.append(self.runtime.name)
        if self.offload is not None:
            parts.append(f"{self.offload.label}, host {self.host.key or self.host.name}")
        return ", ".join(parts)

    def replace(self, **changes) -> "Setup":
        return dataclasses.replace(self, **changes)


def _check_skew(skew, cfg):
    if skew is None:
        return None
    if not cfg.n_routed_experts:
        raise ValueError(f"`expert_skew` applies to MoE models; {cfg.name} is dense")
    if isinstance(skew, bool):
        raise ValueError(f"`expert_skew` must be None, a Zipf exponent >= 0 or a histogram, got {skew!r}")
    if isinstance(skew, (int, float)):
        if not math.isfinite(skew) or skew < 0:
            raise ValueError(f"`expert_skew` Zipf exponent must be >= 0, got {skew!r}")
        return float(skew)
    try:
        h = tuple(float(x) for x in skew)
    except (TypeError, ValueError):
        raise ValueError(f"`expert_skew` must be None, a Zipf exponent >= 0 or a histogram, got {skew!r}") from None
    if len(h) != cfg.n_routed_experts:
        raise ValueError(f"`expert_skew` histogram has {len(h)} entries; {cfg.name} has {cfg.n_routed_experts} experts")
    if any(not math.isfinite(x) or x < 0 for x in h) or sum(h) <= 0:
        raise ValueError("`expert_skew` histogram needs finite counts >= 0 with a positive sum")
    return h


# ---- MoE: distinct experts -------------------------------------------------------------------------


def fewest_distinct_experts(n_experts: int, top_k: int, n_tokens: int) -> float:
    """The fewest distinct experts n_tokens tokens, each routed to top_k distinct experts of
    n_experts, can touch: top_k (every token routed to the same top_k; a token takes each expert
    once, so B top_k routes need at least top_k experts, and nothing caps the tokens an expert
    takes). The bound `ideal` reads (RuntimeProfile.expert_routing "fewest")."""
    if n_tokens <= 0 or n_experts <= 0:
        return 0.0
    return float(min(top_k, n_experts))


def expected_distinct_experts(n_experts: int, top_k: int, n_tokens: int, skew=None) -> float:
    """Expected number of distinct experts that n_tokens tokens, each routed to top_k of n_experts,
    touch. Uniform routing: N (1 - (1 - k/N)^T). With a popularity p_e (a histogram, or Zipf with
    exponent s: p_e ~ (e+1)^-s), expert e is picked by a token with probability min(1, k p_e), and
    the expectation is sum_e 1 - (1 - min(1, k p_e))^T (tokens independent)."""
    if n_tokens <= 0 or n_experts <= 0:
        return 0.0
    N, k, T = n_experts, top_k, n_tokens
    if skew is None or (isinstance(skew, float) and skew == 0.0):
        return N * (1.0 - (1.0 - k / N) ** T)
    if isinstance(skew, float):
        w = [(e + 1) ** -skew for e in range(N)]
    else:
        w = list(skew)
    tot = sum(w)
    return sum(1.0 - (1.0 - min(1.0, k * x / tot)) ** T for x in w)


# ---- op costs --------------------------------------------------------------------------------------
@dataclass
class OpCost:
    name: str           # "attn.qkv", "moe.experts", ...
    card: int
    count: int          # layers (times ubatches) this line aggregates
    flops: float        # tensor + vector FLOPs, all counted
    bytes: float
    seconds: float      # busy time on `card`
    compute_s: float
    memory_s: float
    launch_s: float

    @property
    def bound(self) -> str:
        if self.name.startswith("link"):
            return "link"
        if self.name == "overhead":
            return "overhead"
        if self.launch_s > max(self.compute_s, self.memory_s):
            return "launch"
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass
class StepCost:
    seconds: float                  # wall time of the step
    tokens: int                     # tokens it produces (decode) or ingests (prefill)
    ops: list                       # OpCost lines; their seconds are busy time per card
    kind: str = "decode"
    depth: int = 0
    batch: int = 1

    @property
    def tok_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else math.inf

    def breakdown(self) -> dict:
        """Seconds per op name, summed over layers and cards."""
        out: dict[str, float] = {}
        for o in self.ops:
            out[o.name] = out.get(o.name, 0.0) + o.seconds
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def terms(self) -> dict:
        """Seconds per (op, bound), e.g. {"moe.experts (memory)": 0.004, ...}, largest first."""
        out: dict[str, float] = {}
        for o in self.ops:
            k = f"{o.name} ({o.bound})"
            out[k] = out.get(k, 0.0) + o.seconds
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def dominant(self) -> str:
        t = self.terms()
        return next(iter(t)) if t else ""

    @property
    def flops(self) -> float:
        return sum(o.flops for o in self.ops)

    @property
    def bytes(self) -> float:
        return sum(o.bytes for o in self.ops)


class _Op:
    """One op of one layer (or of the head) on one card: raw counts before timing. `path` and
    `family`: the kernel path and weight family (glmbench.predict.kernels) whose efficiencies a
    runtime model's kernel table gives; `tpe`: tokens per expert of a MoE prefill op."""
    __slots__ = ("name", "cls", "dtype", "tflops", "vflops", "bytes", "kernels", "path", "family", "tpe", "tile", "acc16",
                 "capf", "chain", "step_cycles", "memo")

    def __init__(self, name, cls, dtype, tflops, vflops, nbytes, kernels, path=None, family=None, tpe=0.0, tile=0.0,
                 acc16=0.0):
        self.name, self.cls, self.dtype = name, cls, dtype
        self.tflops, self.vflops, self.bytes, self.kernels = tflops, vflops, nbytes, kernels
        self.path, self.family, self.tpe, self.tile = path, family, tpe, tile
        self.acc16 = acc16      # share of the tensor FLOPs accumulated in f16 (kernels.tensor_peak)
        self.capf = 1.0         # share of the per-SM GEMV cap its weight types stream (_cap_factor)
        self.chain = 0          # dependent steps one after another (a recurrence's tokens per stream)
        self.step_cycles = 0.0  # clock cycles of one such step (0: GDN_STEP_CYCLES)
        self.memo = None        # _time's: [card, kernel table, their key, _fixed, last efficiencies, last result]


def _op_efficiency(op: _Op, rt: RuntimeProfile, attn=None) -> tuple:
    """(compute, memory) efficiency of an op's tensor work under a profile: the per-class values,
    attention's for this setup (`attn`, RuntimeProfile.attention_efficiency), then the runtime
    model's kernel table for the op's path and weight family (kernels.efficiency)."""
    e_c, e_m = rt.compute_efficiency[op.cls], rt.memory_efficiency[op.cls]
    if attn is not None and op.cls == "attention":
        e_c, e_m = attn
    if rt.kernels and op.path:
        e_c = kn.efficiency(rt.kernels, op.path, op.family, "compute", e_c, rt.attention_kernel)
        e_m = kn.efficiency(rt.kernels, op.path, op.family, "memory", e_m, rt.attention_kernel)
        if op.tpe:
            e_c *= kn.moe_occupancy(rt.kernels, op.tpe, op.tile)
    return e_c, e_m


def _time(op: _Op, gpu, rt: RuntimeProfile, attn=None):
    """attn: (compute, memory) efficiency of attention ops for this setup
    (RuntimeProfile.attention_efficiency); None: the profile's attention class.

    What does not depend on the profile's per-class efficiencies (the kernel table's entries, the card's
    peaks and per-SM limits, launch time: _fixed) is worked out once per op, card and kernel table and kept
    on the op (op.memo); an op priced again with the same efficiencies returns its last result. A
    calibration's trials share their op lists (same_ops_as) and most change one op class's efficiency."""
    ce, me = rt.compute_efficiency, rt.memory_efficiency
    e_c, e_m = ce[op.cls], me[op.cls]
    if attn is not None and op.cls == "attention":
        e_c, e_m = attn
    ev = ce["vector"] if op.vflops else None
    fkey = (rt.attention_kernel, bool(rt.options), rt.launch_overhead, rt.kernel_overhead_us)
    m = op.memo
    if m is None or m[0] is not gpu or m[1] is not rt.kernels or m[2] != fkey:
        m = op.memo = [gpu, rt.kernels, fkey, _fixed(op, gpu, rt), None, None]
    dkey = (e_c, e_m, ev)
    if m[4] == dkey:
        return m[5]
    hit_c, hit_m, occ1, cf, f_m, tden, tc2, vden, chain_t, bw, cap, tl = m[3]
    if hit_c is not None:
        e_c = hit_c
    if hit_m is not None:
        e_m = hit_m
    if occ1 is not None:
        e_c *= occ1
    if cf is not None:
        e_c *= cf
        e_m *= f_m
    tc = 0.0
    if op.tflops:
        tc += op.tflops / (tden * e_c)
        if tc2 is not None:
            tc += tc2
    if op.vflops:
        tc += op.vflops / (vden * ev)
    if op.chain:
        tc = max(tc, chain_t)
    tm = op.bytes / (bw * e_m)
    if cap is not None:
        tm = max(tm, cap)
    out = (max(tc, tm) + tl, tc, tm, tl)
    m[4], m[5] = dkey, out
    return out


def _fixed(op: _Op, gpu, rt: RuntimeProfile) -> tuple:
    """The parts of _time's arithmetic that do not depend on the profile's per-class efficiencies, in the
    order _time combines them: (the kernel table's compute and memory efficiency of the op's path, or
    None: the class's; its MoE occupancy factor or None; the card and architecture factors on compute
    (None without a kernel table) and on memory; the tensor peak x 1e12 x the path's reach of it; the
    per-SM FLOP limit's seconds or None; fp32 peak x 1e12; a recurrence's seconds; bandwidth x 1e9; the
    per-SM byte limit's seconds or None; launch seconds)."""
    hit_c = hit_m = occ1 = None
    if rt.kernels and op.path:
        hit_c = kn.efficiency(rt.kernels, op.path, op.family, "compute", None, rt.attention_kernel)
        hit_m = kn.efficiency(rt.kernels, op.path, op.family, "memory", None, rt.attention_kernel)
        if op.tpe:
            occ1 = kn.moe_occupancy(rt.kernels, op.tpe, op.tile)
    peak, sm_f, sm_b, smg = 1.0, 0.0, 0.0, 0.0
    if rt.kernels or rt.options:
        # runtime models: the kernel path's reach of the datasheet peak and its per-SM limits
        # (kernels.mma_peak_factor, kernels.sm_flop, kernels.sm_bytes)
        peak = kn.mma_peak_factor(gpu, op.path, rt, op.family)
        sm_f = kn.sm_flop(rt.kernels, op.path)
        sm_b = kn.sm_bytes(rt.kernels, op.path)
        smg = kn.sm_ghz(gpu)
    cf, f_m = None, 1.0
    if rt.kernels:
        cf = kn.card_factor(rt.kernels, gpu.key, "compute") * kn.arch_factor(rt.kernels, gpu, "compute")
        f_m = kn.card_factor(rt.kernels, gpu.key, "memory") * kn.arch_factor(rt.kernels, gpu, "memory")
    tden = tc2 = vden = chain_t = cap = None
    if op.tflops:
        tden = kn.tensor_peak(gpu, op.dtype, op.acc16) * 1e12 * peak
        if sm_f and smg:
            # the per-SM work of MMQ, the tile loads, is spread over the tile's tokens: MoE's few
            # tokens per expert lose on it as on the tensor part (kernels.moe_occupancy)
            occ = kn.moe_occupancy(rt.kernels, op.tpe, op.tile) if op.tpe else 1.0
            tc2 = op.tflops / (smg * 1e9 * sm_f * occ * kn.card_factor(rt.kernels, gpu.key, "compute")
                               * kn.arch_factor(rt.kernels, gpu, "compute"))
    if op.vflops:
        vden = gpu.tflops["fp32"] * 1e12
    if op.chain:
        # a recurrence: each step waits for the previous one (GDN_STEP_CYCLES at the card's clock)
        chain_t = op.chain * (op.step_cycles or GDN_STEP_CYCLES) / ((getattr(gpu, "boost_mhz", None) or kn.REF_CLOCK_MHZ) * 1e6)
    bw = gpu.bandwidth_gbs * 1e9
    if sm_b and smg and op.bytes:
        # the weight GEMV's loads in flight per SM (kernels.SM_BYTES): on a card with more bandwidth
        # than its SMs' resident warps can keep busy, the stream is capped at SMs x clock x bytes
        # (kernels.mmvq_pass_factor: less for a weight type that packs fewer bytes into a pass)
        cap = op.bytes / (smg * 1e9 * sm_b * f_m * op.capf)
    tl = op.kernels * gpu.launch_us * 1e-6 if rt.launch_overhead else 0.0
    if rt.kernel_overhead_us:
        tl += op.kernels * rt.kernel_overhead_us * 1e-6 * kn.clock_scale(gpu)
    return hit_c, hit_m, occ1, cf, f_m, tden, tc2, vden, chain_t, bw, cap, tl


@functools.lru_cache(maxsize=256)
def _weight_table(cfg: configs.ModelConfig, weights: str) -> dict:
    """Stored bytes of every layer's tensor groups and of the head, in `weights` (vocab.tensor_format
    per tensor: 1-D tensors and the router stay unquantized; a llama.cpp mix gives each tensor its
    own type; a model file's config, cfg.file_weights: the file's bytes). {"layers": [{"attn": {name: bytes},
    "linear": {name: bytes} (a hybrid's linear-attention layer), "norms", "mlp", "experts" (all routed
    experts), "router", "shared"}, ...], "embed", "lm_head", "final_norm"}."""
    fmt, ctx = vocab.weight_format(weights), cfg.tensor_context()
    layers = [{"attn": {}, "linear": {}, "norms": 0, "mlp": 0, "experts": 0, "router": 0, "shared": 0, "latent": 0,
               "ple": 0} for _ in range(cfg.n_layers)]
    # (Gemma 4's per-layer embeddings: the table, and the input embedding's projection with its norm)
    head = {"embed": 0, "lm_head": 0, "final_norm": 0, "ple_table": 0, "ple_proj": 0}
    # a config read from a model file: every tensor's real bytes (tensors the config does not name,
    # `extra_bytes`, are counted with the head; MTP layers are not counted)
    fw = getattr(cfg, "file_weights", None)
    real = fw.bytes_of() if fw is not None else {}
    if fw is not None:
        head["final_norm"] += fw.extra_bytes
    for name, shape in cfg.tensor_shapes().items():
        b = real[name] if name in real else vocab.tensor_nbytes(fmt, name, shape, ctx)
        if not name.startswith("model.layers."):
            head[{"model.embed_tokens.weight": "embed", "lm_head.weight": "lm_head",
                  "model.embed_tokens_per_layer.weight": "ple_table",
                  "model.per_layer_model_projection.weight": "ple_proj",
                  "model.per_layer_projection_norm.weight": "ple_proj",
                  # (Gemma 3n's AltUp projections into and out of its streams: once per pass, as the PLE projection)
                  "model.altup_projections.weight": "ple_proj",
                  "model.altup_unembed_projections.weight": "ple_proj"}.get(name, "final_norm")] += b
            continue
        i, rest = name[len("model.layers."):].split(".", 1)
        L = layers[int(i)]
        if rest.startswith("self_attn."):
            L["attn"][rest[len("self_attn."):]] = b
        elif rest.startswith("linear_attn."):
            L["linear"][rest[len("linear_attn."):]] = b
        elif rest.endswith(("layernorm.weight", "layernorm.bias")) or "_layernorm_" in rest:
            L["norms"] += b
        elif rest.startswith(("per_layer_", "post_per_layer_input_norm.", "layer_scalar", "altup.", "laurel.")):
            # (Gemma 3n's AltUp and LAuReL: the layer's small extras beside the PLE step, priced with it)
            L["ple"] += b
        elif rest.startswith("mlp.experts."):
            L["experts"] += b
        elif rest.startswith("mlp.shared_experts."):
            L["shared"] += b
        elif rest.startswith("mlp.gate."):
            L["router"] += b
        elif rest.startswith(("mlp.fc1_latent_proj.", "mlp.fc2_latent_proj.")):
            L["latent"] += b
        else:
            L["mlp"] += b
    return {"layers": layers, **head}


# the tensors (HF names after "model.layers.N.", or whole names for the head) each weight op reads
_CAP_TENSORS = {"attn.qkv": ("self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj."),
                "attn.o_proj": ("self_attn.o_proj.",), "attn.q_a": ("self_attn.q_a_proj.",),
                "attn.q_b": ("self_attn.q_b_proj.",), "attn.q_proj": ("self_attn.q_proj.",),
                "attn.kv_a": ("self_attn.kv_a_proj_with_mqa.",), "attn.absorb_q": ("self_attn.kv_b_proj.",),
                "attn.absorb_out": ("self_attn.kv_b_proj.",),
                "mlp": ("mlp.gate_proj.", "mlp.up_proj.", "mlp.down_proj."),
                "lin.in_proj": ("linear_attn.in_proj", "linear_attn.q_proj.", "linear_attn.k_proj.",
                                "linear_attn.v_proj.", "linear_attn.b_proj.", "linear_attn.g_a_proj.",
                                "linear_attn.forget_gate.f_a_proj."),
                "lin.gate_up": ("linear_attn.g_b_proj.", "linear_attn.forget_gate.f_b_proj."),
                "lin.out_proj": ("linear_attn.out_proj.", "linear_attn.o_proj."),
                "moe.experts": ("mlp.experts.",), "moe.shared": ("mlp.shared_experts.",)}


@functools.lru_cache(maxsize=1024)
def _cap_factor(cfg: configs.ModelConfig, weights: str, op_name: str) -> float:
    """The share of the per-SM weight-GEMV cap (kernels.SM_BYTES) op `op_name` streams: its tensors'
    bytes over the sum of each tensor's bytes / kernels.mmvq_pass_factor of its type (all layers;
    a model file's own types and bytes, else `weights`' rule, vocab.tensor_format). 1.0 for a plain
    Q4_0-like format and for ops without weights."""
    fw = getattr(cfg, "file_weights", None)
    real, types = (fw.bytes_of(), fw.types()) if fw is not None else ({}, {})
    fmt, ctx = vocab.weight_format(weights), cfg.tensor_context()
    shapes = cfg.tensor_shapes()
    if op_name == "head.lm_head":
        name = "lm_head.weight" if "lm_head.weight" in shapes else "model.embed_tokens.weight"
        picked = [name] if name in shapes else []
    elif op_name in _CAP_TENSORS:
        pre = _CAP_TENSORS[op_name]
        picked = [n for n in shapes if n.startswith("model.layers.") and n.split(".", 3)[3].startswith(pre)]
    else:
        return 1.0
    total = capped = 0.0
    for n in picked:
        if n in real:
            b, t = real[n], types.get(n, "")
        else:
            b = vocab.tensor_nbytes(fmt, n, shapes[n], ctx)
            t = vocab.tensor_format(fmt, n, shapes[n], ctx).name
        total += b
        capped += b / kn.mmvq_pass_factor(t)
    return total / capped if capped else 1.0


@functools.lru_cache(maxsize=1024)
def _expert_types(cfg: configs.ModelConfig, weights: str) -> tuple:
    """((type, elements, bytes), ...) of the routed experts' tensors over all layers, by ggml type (a model
    file's own types and bytes, else `weights`' rule, vocab.tensor_format, as _cap_factor reads them): a mix
    stores the experts' matrices in several types (Q3_K_M: gate / up q3_K, down q4_K / q5_K), and mainline
    ggml-cuda runs each matrix's mul_mat_id by its own type's GEMV limit (kernels.mmvq_mmid_max_batch)."""
    fw = getattr(cfg, "file_weights", None)
    real, types = (fw.bytes_of(), fw.types()) if fw is not None else ({}, {})
    fmt, ctx, shapes = vocab.weight_format(weights), cfg.tensor_context(), cfg.tensor_shapes()
    pre = _CAP_TENSORS["moe.experts"]
    out: dict = {}
    for n, shape in shapes.items():
        if not (n.startswith("model.layers.") and n.split(".", 3)[3].startswith(pre)):
            continue
        if n in real:
            b, t = real[n], types.get(n, "")
        else:
            b, t = vocab.tensor_nbytes(fmt, n, shape, ctx), vocab.tensor_format(fmt, n, shape, ctx).name
        e0, b0 = out.get(t, (0, 0))
        out[t] = (e0 + math.prod(shape), b0 + b)
    return tuple((t, e, b) for t, (e, b) in sorted(out.items()))


def _mmid_gemv_parts(setup: Setup, T: int) -> list:
    """[(path, element share, byte share, cap factor), ...] of the routed experts of a step of T <= MMV_MAX_BATCH
    tokens on mainline ggml-cuda (kernels.mmid_type_limits): the matrices whose type's mmvq_mmid_max_batch
    is below T run MMQ over all experts ("mmid"), the others MMVQ over the ids ("mmid_vec"). [] where every
    matrix runs MMVQ (the op as before)."""
    if not kn.mmid_type_limits(setup.runtime):
        return []
    parts = {"mmid_vec": [0, 0, 0.0], "mmid": [0, 0, 0.0]}
    for t, e, b in _expert_types(setup.model, setup.weights):
        p = parts["mmid" if T > kn.mmvq_mmid_max_batch(t, setup.gpu) else "mmid_vec"]
        p[0], p[1], p[2] = p[0] + e, p[1] + b, p[2] + b / kn.mmvq_pass_factor(t)
    if not parts["mmid"][0]:
        return []
    te, tb = sum(p[0] for p in parts.values()), sum(p[1] for p in parts.values())
    return [(k, e / te, b / tb, b / c if c else 1.0) for k, (e, b, c) in parts.items() if e]


def _mean(values):
    """The mean of per-layer byte counts: an int when they are all equal (a plain format), else a float."""
    values = list(values)
    if not values:
        return 0
    return values[0] if all(v == values[0] for v in values) else sum(values) / len(values)


@functools.lru_cache(maxsize=256)
def _layer_weight_bytes(cfg: configs.ModelConfig, weights: str) -> dict:
    """Stored bytes per tensor group of one dense layer, one MoE layer (one routed expert), and the
    head, in `weights`; the mean over the layers of its kind where a llama.cpp mix gives layers
    different types (the per-layer figures: _weight_table). A config read from a model file
    (cfg.file_weights) gives the file's real bytes instead, whatever `weights` says: see
    _file_layer_weight_bytes."""
    if getattr(cfg, "file_weights", None) is not None:
        return _file_layer_weight_bytes(cfg)
    t = _weight_table(cfg, weights)
    layers = t["layers"]
    dense = [layers[i] for i in cfg.dense_layers]
    moe = [layers[i] for i in cfg.moe_layers]
    # attention tensors: the mean over the layers that have them (a hybrid's linear layers apart)
    al = [layers[i] for i in cfg.attention_layers]
    att = {k: _mean(L["attn"].get(k, 0) for L in al) for k in al[0]["attn"]}
    out = {"attn": att, "norms": _mean(L["norms"] for L in layers)}
    if cfg.linear_layers:
        ll = [layers[i] for i in cfg.linear_layers]
        out["linear"] = {k: _mean(L["linear"][k] for L in ll) for k in ll[0]["linear"]}
    if cfg.intermediate_size:
        out["mlp"] = _mean(L["mlp"] for L in dense) if dense else \
            _weight_bytes_uniform(cfg, weights, "mlp")
    if cfg.n_routed_experts:
        E = cfg.n_routed_experts
        per = [L["experts"] for L in moe]
        out["expert"] = _mean(v // E if v % E == 0 else v / E for v in per)
        out["router"] = _mean(L["router"] for L in moe)
        out["shared"] = _mean(L["shared"] for L in moe)
        out["latent"] = _mean(L["latent"] for L in moe)
    out["ple"] = _mean(L["ple"] for L in layers)
    for k in ("embed", "lm_head", "final_norm", "ple_table", "ple_proj"):
        out[k] = t[k]
    return out


def _file_layer_weight_bytes(cfg) -> dict:
    """_layer_weight_bytes from a file's real tensor bytes: each group is the mean over the layers of
    its kind (dense or MoE), so n_layers x group sums to the file's exact bytes (a file that mixes
    types per layer, like llama.cpp's Q4_K_M, is exact in total and averaged per layer). Tensors the
    config does not name (`extra_bytes`) are counted with the head; MTP layers are not counted."""
    fw = cfg.file_weights
    b = fw.bytes_of()
    dense = list(cfg.dense_layers)
    moe = list(cfg.moe_layers)
    parts = ("gate", "up", "down") if cfg.mlp_gated else ("up", "down")

    def mean(layers, names):
        return sum(b.get(f"model.layers.{i}.{n}", 0) for i in layers for n in names) / max(1, len(layers))

    allL = range(cfg.n_layers)
    att = {name: mean(cfg.attention_layers, ["self_attn." + name]) for name in cfg._attention_tensors()}
    # (the post-norm layers of OLMo 2 / 3 and EXAONE 4: post_attention_ and post_feedforward_layernorm)
    # (Apertus's two: attention_layernorm and feedforward_layernorm, HF's names)
    norms = ["input_layernorm.weight", "post_attention_layernorm.weight"] + \
        (["post_feedforward_layernorm.weight"] if cfg.post_norms else []) + \
        (["attention_layernorm.weight", "feedforward_layernorm.weight"] if cfg.model_type == "apertus" else []) + \
        (["input_layernorm.bias", "post_attention_layernorm.bias"] if cfg.norm_bias else [])
    out = {"attn": att, "norms": mean(allL, norms)}
    if cfg.linear_layers:
        out["linear"] = {name: mean(cfg.linear_layers, ["linear_attn." + name]) for name in cfg._linear_tensors()}
    if cfg.intermediate_size:
        out["mlp"] = mean(dense, [f"mlp.{n}_proj.weight" for n in parts])
    if cfg.n_routed_experts:
        out["expert"] = mean(moe, [f"mlp.experts.{n}_proj" for n in parts]) / cfg.n_routed_experts
        out["router"] = mean(moe, ["mlp.gate.weight", "mlp.gate.e_score_correction_bias"])
        out["shared"] = mean(moe, [f"mlp.shared_experts.{n}_proj.weight" for n in parts])
        out["latent"] = mean(moe, ["mlp.fc1_latent_proj.weight", "mlp.fc2_latent_proj.weight"])
    out["embed"] = b.get("model.embed_tokens.weight", 0)
    out["lm_head"] = b.get("lm_head.weight", 0)
    out["final_norm"] = b.get("model.norm.weight", 0) + fw.extra_bytes
    t = _weight_table(cfg, "f16")       # (a file's config: the file's bytes, whatever format is named)
    out["ple"] = _mean(L["ple"] for L in t["layers"])
    out["ple_table"], out["ple_proj"] = t["ple_table"], t["ple_proj"]
    return out


def _weight_bytes_uniform(cfg, weights, what):
    """A dense MLP's bytes for a model whose layers are all MoE (the cost model never runs it)."""
    F, D = cfg.intermediate_size, cfg.hidden_size
    fmt = vocab.weight_format(weights)
    base = fmt.base if isinstance(fmt, vocab.Mix) else fmt
    return (cfg.mlp_matrices - 1) * vocab.tensor_nbytes(base, "", (F, D)) + vocab.tensor_nbytes(base, "", (D, F))


@functools.lru_cache(maxsize=256)
def _layer_total(cfg, weights) -> tuple:
    """Stored bytes of each decoder layer (all its tensors)."""
    return tuple(sum(L["attn"].values()) + sum(L["linear"].values()) + L["norms"] + L["mlp"] + L["experts"] + L["router"]
                 + L["shared"] + L["latent"] + L["ple"] for L in _weight_table(cfg, weights)["layers"])


@functools.lru_cache(maxsize=256)
def _attn_kind_bytes(cfg: configs.ModelConfig, weights: str, layers: tuple) -> dict:
    """Stored bytes of each attention tensor, the mean over `layers` (one kind of attention layer:
    _attn_kinds), in `weights` or a model file's real bytes."""
    t = _weight_table(cfg, weights)["layers"]
    keys = t[layers[0]]["attn"]
    return {k: _mean(t[i]["attn"].get(k, 0) for i in layers) for k in keys}


@functools.lru_cache(maxsize=256)
def _attn_kinds(cfg: configs.ModelConfig) -> tuple:
    """The attention layers grouped by what a pass prices differently: global or windowed (the work,
    Gemma 4's head dim and KV heads) and whether the layer projects and caches its own K / V (Gemma
    4's kv-shared layers do not), and by KV heads (DeciLM's per-layer counts). ((windowed, owns_kv, layers), ...); a
    plain model has one or two."""
    win = frozenset(cfg.windowed_layers)
    groups: dict = {}
    # (DeciLM's layers: each its own KV heads, cfg.layer_kv_list; a kind per count)
    for i in cfg.attention_layers:
        groups.setdefault((i in win, cfg.owns_kv(i), cfg.layer_kv_heads(i)), []).append(i)
    return tuple((w, o, tuple(ls)) for (w, o, _k), ls in sorted(groups.items()))


@dataclass(frozen=True)
class _Placement:
    on_card: tuple          # per decoder layer: the layer runs on the card
    host_experts: tuple     # per decoder layer: bytes of its routed-expert tensors in host memory
    experts: tuple          # per decoder layer: bytes of all its routed-expert tensors
    output_on_card: bool


@functools.lru_cache(maxsize=256)
def _placement(setup: Setup) -> _Placement:
    """Which layer runs where and which expert bytes live in host memory (Offload's rules)."""
    cfg, off = setup.model, setup.offload
    L = cfg.n_layers
    ngl = L + 1 if off.n_gpu_layers is None else off.n_gpu_layers
    first_on_card = max(L - ngl, 0)
    fmt, ctx = vocab.weight_format(setup.weights), cfg.tensor_context()
    rx = [re.compile(p) for p in off.override_tensor]
    host_e, all_e = [], []
    for i in range(L):
        h = a = 0
        if cfg.is_moe_layer(i) and cfg.n_routed_experts:
            for part in _EXPERT_PARTS if cfg.mlp_gated else _EXPERT_PARTS[1:]:
                name = f"model.layers.{i}.mlp.experts.{part}_proj"
                b = vocab.tensor_nbytes(fmt, name, cfg.tensor_shapes()[name], ctx)
                a += b
                gg = f"blk.{i}.ffn_{part}_exps.weight"
                if i < off.n_cpu_moe or any(r.search(gg) for r in rx):
                    h += b
        host_e.append(h)
        all_e.append(a)
    return _Placement(tuple(i >= first_on_card for i in range(L)), tuple(host_e), tuple(all_e), ngl > L)


def _scaled(op: "_Op", f: float, name: str | None = None) -> "_Op":
    return _Op(name or op.name, op.cls, op.dtype, op.tflops * f, op.vflops * f, op.bytes * f, op.kernels)


def _host_time(op: "_Op", host) -> tuple:
    """(seconds, compute, memory) of an op on the host CPU: its FLOPs at the host's matmul rate for
    the dtype (vector work at its fp32 rate) against its bytes at the host's streamed bandwidth."""
    tc = 0.0
    if op.tflops:
        # a card's extra peaks (f16 accumulate, FP8 tensor cores) are the host's fp16 rate
        tc += op.tflops / (host.tflops[{"fp16_acc16": "fp16", "fp8": "fp16"}.get(op.dtype, op.dtype)] * 1e12)
    if op.vflops:
        tc += op.vflops / (host.tflops["fp32"] * 1e12)
    tm = op.bytes / (host.bandwidth_gbs * 1e9)
    return max(tc, tm), tc, tm


def _pcie(setup: Setup) -> tuple:
    """(GB/s, latency us) of the host <-> card link: the host profile's, else the card's link, else
    PCIe 4.0 x16's ~25 GB/s and 10 us."""
    h, g = setup.host, setup.gpu
    bw = h.pcie_gbps or g.link_gbps or 25.0
    lat = h.pcie_latency_us if h.pcie_latency_us is not None else (g.link_latency_us if g.link_latency_us is not None else 10.0)
    return bw, lat


def _pass_offload(setup: Setup, T: int, work, T_out: int):
    """One pass of T tokens with part of the model in host memory (llama.cpp's scheduler, one card):
    ops whose weights are on the card run there; below OP_OFFLOAD_MIN_BATCH tokens, ops whose
    weights are in host memory run on the host CPU (its bandwidth and FLOP/s) and the hidden state
    crosses PCIe to them and back; from OP_OFFLOAD_MIN_BATCH tokens on, host-held weights are copied
    to the card each pass and run there. A layer on the host keeps its KV cache there, so its
    attention runs on the host. The card, the host and the link work one after another."""
    cfg, gpu, rt, host = setup.model, setup.gpu, setup.runtime, setup.host
    pl = _placement(setup)
    upload = T >= OP_OFFLOAD_MIN_BATCH
    lin = frozenset(cfg.linear_layers)
    kinds = _attn_kind_ops(setup, T, work, 1.0)
    ple = _ple_ops(setup, T, 1.0)
    lin_ops = _linear_ops(setup, T, work, 1.0) if lin else []
    dense_kinds = _dense_kinds(setup, T, 1.0)
    lin_blocks = _linear_block_kinds(setup, T, 1.0)
    moe = _ffn_ops(setup, T, True, 1.0) if cfg.n_moe_layers else []
    head = _head_ops(setup, T_out, 1.0) if T_out else []
    bw, lat = _pcie(setup)
    hid = ACT_BYTES * T * cfg.hidden_size
    route = 8 * T * cfg.n_experts_per_tok          # expert ids and weights (int32 + f32)
    layer_bytes = _layer_total(cfg, setup.weights)
    costs, total = [], 0.0

    def on_card(op):
        nonlocal total
        sec, tc, tm, tl = _time(op, gpu, rt)
        total += sec
        costs.append(OpCost(op.name, 0, 1, op.tflops + op.vflops, op.bytes, sec, tc, tm, tl))

    def on_host(op):
        nonlocal total
        sec, tc, tm = _host_time(op, host)
        total += sec
        costs.append(OpCost(op.name + " (host)", 0, 1, op.tflops + op.vflops, op.bytes, sec, tc, tm, 0.0))

    def cross(name, nbytes):
        nonlocal total
        sec = transfer_seconds(nbytes, bw, lat)
        total += sec
        costs.append(OpCost(name, 0, 1, 0.0, nbytes, sec, 0.0, 0.0, 0.0))

    where = "host"                                   # the embeddings are looked up in host memory
    block = _block_norm_ops(setup, T)
    att = frozenset(cfg.attention_layers)
    for i in range(cfg.n_layers):
        # a layer's token mixer: Mamba-2 / linear attention, softmax attention, or both side by side (a parallel
        # hybrid's layer, cfg.parallel_mixers: Falcon-H1)
        a_ops = ((lin_ops if i in lin else []) + (next(ops for ls, ops in kinds if i in ls) if i in att else [])) \
            if cfg.has_mixer(i) else []
        dense = next((ops for ls, ops in dense_kinds if i in ls), [])
        f_ops = ((moe if cfg.is_moe_layer(i) and cfg.n_routed_experts else dense) if cfg.has_ffn(i) else []) + \
            block * _n_block_norms(cfg, i) + [o for ls, ops in lin_blocks if i in ls for o in ops] + ple
        if not pl.on_card[i]:
            if where == "card":
                cross("link.pcie_activations", hid)
                where = "host"
            if upload:
                # matmul weights copied to the card and run there; attention over the host-held cache
                cross("link.pcie_weights", layer_bytes[i])
                for op in a_ops + f_ops:
                    (on_card if op.cls == "matmul" else on_host)(op)
                cross("link.pcie_activations", 2 * hid)
            else:
                for op in a_ops + f_ops:
                    on_host(op)
            continue
        if where == "host" and i > 0:
            cross("link.pcie_activations", hid)
        where = "card"
        for op in a_ops:
            on_card(op)
        frac = pl.host_experts[i] / pl.experts[i] if pl.experts[i] else 0.0
        for op in f_ops:
            if op.name != "moe.experts" or not frac:
                on_card(op)
            elif upload:
                cross("link.pcie_weights", pl.host_experts[i])
                on_card(op)
            else:
                if frac < 1:
                    on_card(_scaled(op, 1 - frac))
                cross("link.pcie_activations", hid + route)
                on_host(_scaled(op, frac))
                cross("link.pcie_activations", hid)
    if head:
        if pl.output_on_card:
            if where == "host":
                cross("link.pcie_activations", ACT_BYTES * T_out * cfg.hidden_size)
            for op in head:
                on_card(op)
        else:
            if where == "card":
                cross("link.pcie_activations", ACT_BYTES * T_out * cfg.hidden_size)
            for op in head:
                on_host(op)
    return [total], 0.0, _merge(costs)


def _wdtype(setup: Setup) -> str:
    """The peak a weight matmul runs against. fp8 weights (vLLM's fp8 / fp8_per_channel; llama.cpp
    has no fp8 type): on a card with FP8 tensor cores (a `tflops.fp8` peak: Ada sm_89, Hopper,
    Blackwell) W8A8, the activations quantized to fp8 per token and the GEMM on the FP8 tensor cores
    (vLLM's CUTLASS scaled_mm, f32 accumulate); on older cards weight-only (vLLM's FP8 Marlin
    kernel, W8A16: f16 tensor cores). AWQ / GPTQ int4 weights (vLLM's Marlin, Machete and AWQ
    kernels: W4A16, the weights dequantized to f16/bf16 in registers and multiplied on the f16
    tensor cores; no int8 activations): the f16 peak. Other quantized formats (llama.cpp's MMQ,
    int8 activations): the profile's `quantized_matmul`; "fastest" (`ideal`) the larger of the int8
    peak and the f16 GEMM's (_cublas_dtype): dequantized weights on the f16 tensor cores, as
    llama.cpp's cuBLAS path and Vulkan's coopmat run them, outrun int8 dp4a on Volta."""
    f = setup.weight_fmt
    if f.dequant and kn.family(f.name) == "fp8":
        return "fp8" if "fp8" in setup.gpu.tflops else "fp16"
    if f.dequant and kn.family(f.name) == "int4":
        return "fp16"
    if f.dequant and setup.runtime.quantized_matmul == "fastest":
        peak = setup.gpu.tflops
        return max(("int8", _cublas_dtype(setup)), key=lambda d: peak.get(d, 0.0))
    if f.dequant:
        return setup.runtime.quantized_matmul
    return {"f32": "fp32", "f64": "fp32", "f16": "fp16", "bf16": "bf16"}[f.name]


def _matmul(name, T, n_out, n_in, wbytes, setup, share=1.0, kernels=1):
    """y[T, n_out] = x[T, n_in] W^T with W stored in `wbytes` bytes; `share` of it on this card.
    The kernel path (kernels.matmul_path) is the runtime's for T tokens; dequantize + cuBLAS
    multiplies on the fp16 tensor cores and writes and reads the f16 copy of the weights."""
    quant = setup.weight_fmt.dequant
    rt = setup.runtime
    fam = kn.family(setup.weight_fmt.name)
    path = kn.matmul_path(quant, fam, T, rt, setup.gpu)
    dtype, extra = _wdtype(setup), 0.0
    if path == "dequant_cublas":
        dtype, extra = "fp16", 2 * 2.0 * n_out * n_in * share
    if path in ("cublas", "dequant_cublas") and dtype == "fp16":
        dtype = _cublas_dtype(setup)
    if path == "mmq" and _ggml_graph(setup):
        # a llama.cpp-family runtime model's MMQ loads the weights again for each column tile of the
        # batch (kernels.mmq_weight_passes); the physics profiles, vLLM and SGLang price one pass
        extra = (kn.mmq_weight_passes(T) - 1) * wbytes * share
    op = _Op(name, "matmul", dtype, 2.0 * T * n_out * n_in * share,
             DEQUANT_OPS * n_out * n_in * share if quant else 0.0,
             wbytes * share + extra + ACT_BYTES * T * (n_in + n_out * share), kernels, path, fam)
    op.capf = _cap_factor(setup.model, setup.weights, name)
    return op


@dataclass(frozen=True)
class _Attn:
    """Attention work of one step, summed over its streams."""
    n_q: int            # new query tokens (= tokens written to the cache)
    keys: float         # sum over queries of keys each sees
    read: float         # cached tokens read, summed over streams and tile passes
    expanded: float     # tokens whose latent a naive MLA step expands (sum over streams)
    prefill: bool = False


@dataclass(frozen=True)
class _Works:
    """The attention work of a step for the full-attention layers and for the windowed ones, and the
    streams (sequences) its tokens belong to (a hybrid's linear layers read and write one recurrent
    state per stream)."""
    full: _Attn
    windowed: _Attn | None = None
    streams: int = 1
    # DeepSeek Sparse Attention: the MLA attention's work where each query attends to at most index_topk keys
    # (a runtime with sparse kernels: _dsa_sparse); None for other models
    topk: _Attn | None = None


def _decode_attn(depth, batch, window, chunked=False) -> _Attn:
    """One new token per stream at position `depth`: it sees depth + 1 keys, the last `window` of
    them, or (chunked) those of its own chunk of `window` tokens, depth % window + 1."""
    span = depth + 1
    if window:
        span = depth % window + 1 if chunked else min(span, window)
    return _Attn(batch, batch * span, batch * span, batch * span)


def _chunk_keys(P: int, w: int) -> int:
    """sum of (p % w) + 1 for p = 0 .. P - 1: the keys queries 0 .. P - 1 see under chunked attention."""
    full, r = divmod(P, w)
    return full * w * (w + 1) // 2 + r * (r + 1) // 2


def _window_keys(a: int, b: int, w: int) -> int:
    """sum of min(p, w) for p = a .. b: the keys seen by queries that see p keys unwindowed."""
    if b <= w:
        return (a + b) * (b - a + 1) // 2
    if a >= w:
        return w * (b - a + 1)
    return (a + w) * (w - a + 1) // 2 + w * (b - w)


def _prefill_attn(depth, n, window, chunked=False) -> _Attn:
    """n queries at positions depth .. depth + n - 1; the query at p sees p + 1 keys, or the last
    `window` of them (itself included: HF's and llama.cpp's sliding window, p - k < window), or
    (chunked: Llama 4's chunked attention, llama.cpp's LLAMA_SWA_TYPE_CHUNKED) the keys of its own
    chunk, p - p % window .. p."""
    tiles = -(-n // Q_TILE)
    if not window:
        keys = n * depth + n * (n + 1) / 2
        # tile t reads the cache up to its last query: depth + min(n, (t+1) Q) tokens
        read = sum(depth + min(n, (t + 1) * Q_TILE) for t in range(tiles))
        return _Attn(n, keys, read, depth + n, True)
    w = window
    if chunked:
        keys = _chunk_keys(depth + n, w) - _chunk_keys(depth, w)
    else:
        keys = _window_keys(depth + 1, depth + n, w)
    # tile t: queries q0 .. q1 read keys max(0, q0 - w + 1) .. q1 (at most w + Q - 1 rows); chunked,
    # from the start of q0's chunk
    read = 0
    for t in range(tiles):
        q0, q1 = depth + t * Q_TILE, depth + min(n, (t + 1) * Q_TILE) - 1
        read += q1 + 1 - (q0 - q0 % w if chunked else max(0, q0 - w + 1))
    return _Attn(n, keys, read, depth + n, True)


def _topk_attn(cfg, depth, n, prefill) -> _Attn | None:
    """A DSA model's MLA work when each query attends to its index_topk chosen keys (min(keys, top-k)
    each: the sum of a window of index_topk); a prefill query gathers its own chosen rows (FlashMLA's
    sparse kernels: no tile of queries shares them), so the rows read are its keys. None without DSA."""
    K = cfg.index_topk
    if not K:
        return None
    if not prefill:
        return _decode_attn(depth, n, K)
    a = _prefill_attn(depth, n, K)
    return dataclasses.replace(a, read=a.keys)


def _decode_work(cfg, depth, batch) -> _Works:
    w = cfg.sliding_window if cfg.windowed_layers else None
    return _Works(_decode_attn(depth, batch, None),
                  _decode_attn(depth, batch, w, cfg.window_chunked) if w else None, batch,
                  _topk_attn(cfg, depth, batch, False))


def _prefill_work(cfg, depth, n) -> _Works:
    w = cfg.sliding_window if cfg.windowed_layers else None
    return _Works(_prefill_attn(depth, n, None), _prefill_attn(depth, n, w, cfg.window_chunked) if w else None,
                  topk=_topk_attn(cfg, depth, n, True))


def _attention_ops(setup: Setup, T: int, work: _Attn, share: float, layers: tuple) -> list:
    """One attention layer's ops for a pass of T tokens doing `work`: a layer of `layers` (one kind of
    _attn_kinds: their geometry and mean weight bytes)."""
    cfg = setup.model
    kvf = setup.kv_fmt
    deq = DEQUANT_OPS if kvf.dequant else 0
    H = cfg.n_heads * share
    wb = _attn_kind_bytes(cfg, setup.weights, tuple(layers))
    D = cfg.hidden_size
    ops = []
    if cfg.attention == "gqa":
        i0 = layers[0]
        # (Gemma 4: a global layer's own head dim and KV heads; a kv-shared layer projects only q and
        # attends over an earlier layer's cache of the same geometry)
        Hq, Hk, Dh, Dv = cfg.n_heads, cfg.layer_kv_heads(i0), cfg.layer_head_dim(i0), cfg.layer_v_dim(i0)
        own = cfg.owns_kv(i0)
        ks = _kv_share(setup) if share < 1.0 else share       # KV heads replicated past their count (_kv_share)
        # (AFMoE: the gate is its own gate_proj, read beside q_proj as Qwen3-Next's doubled q_proj is)
        q_w = sum(v for k, v in wb.items() if k.split(".")[0] in ("q_proj", "gate_proj"))
        kv_w = sum(v for k, v in wb.items() if k.split(".")[0] in ("k_proj", "v_proj"))
        # a gated output (Qwen3-Next, Qwen3.5): q_proj also gives the gate, one value per output channel
        gq = 2 if cfg.attn_output_gate else 1
        kv_out = (Hk * Dh + (Hk * Dv if cfg.layer_v_proj(i0) else 0)) if own else 0
        if ks == share or not own:
            ops.append(_matmul("attn.qkv", T, gq * Hq * Dh + kv_out, D, q_w + kv_w, setup, share,
                               kernels=3 if own else 1))
        else:
            # q's heads split over the cards, each card's KV heads whole (a KV head on several cards)
            q = _matmul("attn.qkv", T, gq * Hq * Dh, D, q_w, setup, share, kernels=3)
            kv = _matmul("attn.qkv", T, kv_out, D, kv_w, setup, ks)
            ops.append(_Op("attn.qkv", q.cls, q.dtype, q.tflops + kv.tflops, q.vflops + kv.vflops, q.bytes + kv.bytes,
                           q.kernels, q.path, q.family))
            ops[-1].capf = q.capf
        nk = (2 if own else 1) * (2 if cfg.qk_norm else 1)   # rope q, k (+ q/k norm)
        hk = Hk * ks if own else 0.0
        ops.append(_Op("attn.rope_norm", "vector", "fp32", 0.0, (6 + (4 if cfg.qk_norm else 0)) * T * (Hq * share + hk) * Dh,
                       2 * ACT_BYTES * T * (Hq * share + hk) * Dh, nk))
        row = sum(kvf.nbytes(r) for r in cfg.kv_rows_per_layer(cfg.kv_source(i0))) * ks
        elems = cfg.kv_elems_per_token_per_layer(cfg.kv_source(i0)) * ks
        if own:
            ops.append(_Op("attn.kv_write", "vector", "fp32", 0.0, deq * elems * work.n_q,
                           work.n_q * (row + ACT_BYTES * elems), 2))
        rt = setup.runtime
        path = kn.attention_path("gqa", setup.mla_strategy, work.prefill, rt.flash_attn, rt)
        if path == "attn_mat":
            # without flash attention (llama.cpp -fa 0): K.Q over every cached and new key of the
            # ubatch (the causal mask does not skip work), f32 scores written, softmaxed in place
            # and read by P.V; the cache is read by both products
            # ggml broadcasts K and V over the query heads of a group: each query head's product
            # reads its KV head's rows again (Hq / Hk times the cache traffic of a fused kernel)
            keys = work.keys + (work.n_q * work.n_q / 2.0 if work.prefill else 0.0)
            rep = Hq / Hk
            ops.append(_Op("attn.core", "attention", "fp16", 2.0 * H * (Dh + Dv) * keys,
                           SOFTMAX_OPS * H * keys + deq * elems * work.read * rep,
                           rep * row * work.read + 4 * SCORE_BYTES * H * keys + ACT_BYTES * T * H * (Dh + Dv), 4, path))
        else:
            ops.append(_Op("attn.core", "attention", "fp16", 2.0 * H * (Dh + Dv) * work.keys,
                           SOFTMAX_OPS * H * work.keys + deq * elems * work.read,
                           row * work.read + ACT_BYTES * T * H * (Dh + Dv), 2, path,
                           acc16=kn.fa_acc16_share(path, rt, Dh, Dv)))
        if cfg.attn_output_gate:
            # sigmoid of the gate times the attention output, before o_proj
            ops.append(_Op("attn.gate", "vector", "fp32", 0.0, 6 * T * Hq * share * Dv, 3 * ACT_BYTES * T * Hq * share * Dv, 1))
        ops.append(_matmul("attn.o_proj", T, D, Hq * Dv, wb["o_proj.weight"], setup, share))
        return ops

    # MLA
    R, Dr, Dn, Dv = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim
    Hf = cfg.n_heads
    if cfg.q_lora_rank:
        # q_a is tiny and replicated under tensor split; q_b is split by heads
        ops.append(_matmul("attn.q_a", T, cfg.q_lora_rank, D, wb["q_a_proj.weight"], setup, 1.0))
        ops.append(_Op("attn.q_a_norm", "vector", "fp32", 0.0, 4 * T * cfg.q_lora_rank, 2 * ACT_BYTES * T * cfg.q_lora_rank, 1))
        ops.append(_matmul("attn.q_b", T, Hf * (Dn + Dr), cfg.q_lora_rank, wb["q_b_proj.weight"], setup, share))
    else:
        ops.append(_matmul("attn.q_proj", T, Hf * (Dn + Dr), D, wb["q_proj.weight"], setup, share))
    # the latent and the rope key are computed once per token and, under tensor split, on every card
    ops.append(_matmul("attn.kv_a", T, R + Dr, D, wb["kv_a_proj_with_mqa.weight"], setup, 1.0))
    row = kvf.nbytes(R) + kvf.nbytes(Dr)
    ops.append(_Op("attn.rope_norm", "vector", "fp32", 0.0, 4 * T * R + 6 * T * (Hf * share + 1) * Dr + deq * T * (R + Dr),
                   2 * ACT_BYTES * T * (R + Dr + Hf * share * Dr) + row * work.n_q, 4))
    kvb_w = wb["kv_b_proj.weight"] * share
    kvb = R * Hf * (Dn + Dv) * share             # kv_b weights on this card
    strat = setup.mla_strategy
    if strat == "naive":
        # every step expands every cached latent through kv_b (f16 K and V written, then read)
        ops.extend(_kv_b_expand_ops(setup, work.expanded, kvb, kvb_w, row, H))
        kq = 2.0 * H * (Dn + Dr) * work.keys
        pv = 2.0 * H * Dv * work.keys
        ops.append(_Op("attn.core", "attention", "fp16", kq + pv, SOFTMAX_OPS * H * work.keys,
                       2 * H * (Dn + Dr + Dv) * work.read + 4 * SCORE_BYTES * H * work.keys
                       + ACT_BYTES * T * H * (Dn + Dr + Dv), 4, "mla_naive"))
    elif work.prefill and not _dsa_sparse(setup) and _mla_expands(setup, T, work, share):
        # (a sparse DSA runtime runs its prompts absorbed too: FlashMLA's sparse prefill kernel over the latents)
        ops.extend(_mla_expand_once_ops(setup, T, work, share))
    else:
        ops.extend(_mla_absorbed_ops(setup, T, work, share, kvb_w))
    ops.append(_matmul("attn.o_proj", T, D, Hf * Dv, wb["o_proj.weight"], setup, share))
    return ops


# FLOPs per token, value head and k_dim x v_dim state entry of the gated delta rule's recurrent
# form: the state decayed (1), read against k (2), the rank-1 update (2) and read against q (2)
GDN_FLOPS_PER_STATE = 7.0
# SM cycles one token's step of the fused recurrence takes when it waits on the previous one: two
# warp-wide reductions of k_dim (5 shuffle rounds each, ~30 cycles a round) and the token's q, k,
# v, decay and beta loads (L2 latency, ~250 cycles); an estimate from the kernel's structure
# (ggml-cuda/gated_delta_net.cu), not fitted: no public result of a hybrid model is in the set
GDN_STEP_CYCLES = 550.0
GDN_CHUNK = 64      # vLLM's prompt kernels (fla chunk_gated_delta_rule): tokens per chunk


def _linear_ops(setup: Setup, T: int, work: _Works, share: float) -> list:
    """One Gated DeltaNet layer (a hybrid's linear attention: Qwen3-Next, Qwen3.5) for T tokens of
    work.streams streams, `share` of its heads on this card. As llama.cpp builds it
    (src/models/qwen35.cpp, qwen3next.cpp, delta-net-base.cpp): the input projections (q, k, v, the
    output gate z, and b, a for the per-head step and decay), the causal depthwise convolution over
    q, k, v with the stream's last K - 1 inputs (ssm_conv; the conv state read and written), the q /
    k L2 norms, decay and beta, then the fused recurrence (GGML_OP_GATED_DELTA_NET,
    ggml-cuda/gated_delta_net.cu): token by token for decode and prompt alike, each value head's
    k_dim x v_dim f32 state read once per stream and written back, GDN_FLOPS_PER_STATE FLOPs per
    state entry and token on the f32 units; then the gated RMSNorm with z and out_proj. The
    recurrence does no more work at depth: the linear layers' cost is flat in the context. Its
    tokens of one stream run one after another: a prompt takes at least tokens x GDN_STEP_CYCLES
    at the card's clock per layer, whatever the throughput."""
    cfg = setup.model
    if cfg.linear_kind == "mamba2":
        return _mamba2_ops(setup, T, work, share)
    if cfg.linear_kind == "kda":
        return _kda_ops(setup, T, work, share)
    if cfg.linear_kind == "shortconv":
        return _shortconv_ops(setup, T, work, share)
    D, Hk, Hv = cfg.hidden_size, cfg.linear_k_heads, cfg.linear_v_heads
    dk, dv, K, C = cfg.linear_k_dim, cfg.linear_v_dim, cfg.linear_conv, cfg.linear_conv_dim
    wb = _layer_weight_bytes(cfg, setup.weights)["linear"]
    S = work.streams
    w_in = sum(v for k, v in wb.items() if k.startswith("in_proj_"))
    n_in = sum(1 for k in wb if k.startswith("in_proj_"))
    rows_in = 2 * Hk * dk + 2 * Hv * dv + 2 * Hv
    state = 4 * Hv * dk * dv * share                 # f32 recurrent state of one stream, this card's heads
    conv_state = 4 * (K - 1) * C * share
    ops = [_matmul("lin.in_proj", T, rows_in, D, w_in, setup, share, kernels=n_in),
           _Op("lin.conv", "vector", "fp32", 0.0, (2 * K + 4) * T * C * share,
               2 * ACT_BYTES * T * C * share + wb.get("conv1d.weight", 0) * share + 2 * S * conv_state, 3),
           # L2 norms of q and k, softplus decay and sigmoid beta
           _Op("lin.prep", "vector", "fp32", 0.0, 8 * T * (2 * Hk * dk + 2 * Hv) * share,
               2 * 4 * T * (2 * Hk * dk + 2 * Hv) * share, 6),
           _Op("lin.recurrence", "vector", "fp32", 0.0, GDN_FLOPS_PER_STATE * T * Hv * dk * dv * share,
               2 * S * state + 4 * T * share * (Hv * (2 * dk + 2 * dv + 2)), 1),
           _Op("lin.norm_gate", "vector", "fp32", 0.0, 10 * T * Hv * dv * share,
               3 * ACT_BYTES * T * Hv * dv * share + wb.get("norm.weight", 0), 3),
           _matmul("lin.out_proj", T, D, Hv * dv, wb["out_proj.weight"], setup, share)]
    # the recurrence: tokens per stream, in order; vLLM's prompts run FLA's chunked kernels (chunks of
    # GDN_CHUNK tokens in parallel within, the state carried from chunk to chunk)
    ops[3].chain = _chain(setup, T, S, GDN_CHUNK)
    return ops


def _shortconv_ops(setup: Setup, T: int, work: _Works, share: float) -> list:
    """One LFM2 gated short-convolution layer (HF Lfm2ShortConv) for T tokens of work.streams streams, `share` of
    its channels on this card. As llama.cpp builds it (src/models/lfm2.cpp build_shortconv_block): in_proj (hidden
    -> B, C, x in one matrix), the gate B * x, the stream's last K - 1 inputs (the conv state, f32: n_embd_r =
    hidden x (K - 1)) read and prepended (concat), the new last K - 1 written back, the depthwise causal conv of K
    taps (ssm_conv), the gate C * conv, out_proj. No recurrence: every token's output depends only on the K - 1
    inputs before it, so a prompt's tokens run in parallel (no chain), and the cost is flat in the context (the
    state is K - 1 rows whatever the depth)."""
    cfg = setup.model
    D, K = cfg.hidden_size, cfg.linear_conv
    wb = _layer_weight_bytes(cfg, setup.weights)["linear"]
    S = work.streams
    C = D * share
    conv_state = 4 * (K - 1) * C                     # f32 conv window of one stream, this card's channels
    return [_matmul("lin.in_proj", T, 3 * D, D, wb["in_proj.weight"] + wb.get("in_proj.bias", 0), setup, share),
            # B * x, then C * (the conv's output): two elementwise products, each two reads and a write
            _Op("lin.gates", "vector", "fp32", 0.0, 2 * T * C, 6 * ACT_BYTES * T * C, 2),
            # the state prepended (concat: read it and the tokens, write both), the last K - 1 copied back to the
            # state, the K-tap conv (a multiply-add per tap) with its bias
            _Op("lin.conv", "vector", "fp32", 0.0, (2 * K + 1) * T * C,
                4 * ACT_BYTES * T * C + (wb.get("conv1d.weight", 0) + wb.get("conv1d.bias", 0)) * share
                + 3 * S * conv_state, 3),
            _matmul("lin.out_proj", T, D, D, wb["out_proj.weight"] + wb.get("out_proj.bias", 0), setup, share)]


def _chain(setup: Setup, T: int, streams: int, chunk: int) -> int:
    """Dependent steps of a recurrence over T tokens of `streams` streams: each stream's tokens in order,
    or one step per `chunk` tokens where the runtime's prompt kernels are chunked (RuntimeProfile.
    prompt_scan: vLLM's and SGLang's by default, `ideal`'s as the fewest steps)."""
    per = -(-T // streams)
    scan = setup.runtime.prompt_scan
    chunked = scan == "chunked" or (scan == "auto" and setup.runtime.attention_kernel == "paged_attn")
    return -(-per // chunk) if chunked and per > 1 else per


def _kda_ops(setup: Setup, T: int, work: _Works, share: float) -> list:
    """One Kimi Delta Attention layer (Kimi-Linear) for T tokens of work.streams streams, `share` of its
    heads on this card, as HF's KimiLinearDeltaAttention computes it and llama.cpp builds it
    (src/models/kimi-linear.cpp): the q / k / v, beta and the two low-rank gates' first projections from
    the hidden state (lin.in_proj), the gates' second projections (lin.gate_up: the forget gate per channel,
    the output gate), the short convolution over q, k and v, the per-channel decay (softplus, exp),
    the delta rule's recurrence as the Gated DeltaNet's (its decay a vector per head instead of a scalar:
    one more multiply per state entry), the gated RMSNorm and o_proj; flat in the depth, a stream's
    tokens in order (GDN_STEP_CYCLES each; GDN_CHUNK under vLLM)."""
    cfg = setup.model
    D, H, dk, dv, K, C = (cfg.hidden_size, cfg.linear_v_heads, cfg.linear_k_dim, cfg.linear_v_dim, cfg.linear_conv,
                          cfg.linear_conv_dim)
    wb = _layer_weight_bytes(cfg, setup.weights)["linear"]
    S = work.streams
    first = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "b_proj.weight", "g_a_proj.weight",
             "forget_gate.f_a_proj.weight")
    second = ("forget_gate.f_b_proj.weight", "g_b_proj.weight")
    state = 4 * H * dk * dv * share
    conv_state = 4 * (K - 1) * C * share
    ops = [_matmul("lin.in_proj", T, 2 * H * dk + H * dv + H + 2 * dk, D, sum(wb[k] for k in first), setup, share,
                   kernels=len(first)),
           _matmul("lin.gate_up", T, H * dk + H * dv, dk, sum(wb[k] for k in second), setup, share, kernels=2),
           _Op("lin.conv", "vector", "fp32", 0.0, (2 * K + 4) * T * C * share,
               2 * ACT_BYTES * T * C * share + wb.get("conv1d.weight", 0) * share + 2 * S * conv_state, 3),
           _Op("lin.prep", "vector", "fp32", 0.0, 8 * T * (2 * H * dk + H) * share,
               2 * 4 * T * (3 * H * dk + H) * share, 6),
           _Op("lin.recurrence", "vector", "fp32", 0.0, (GDN_FLOPS_PER_STATE + 1) * T * H * dk * dv * share,
               2 * S * state + 4 * T * share * (H * (3 * dk + 2 * dv + 1)), 1),
           _Op("lin.norm_gate", "vector", "fp32", 0.0, 10 * T * H * dv * share,
               3 * ACT_BYTES * T * H * dv * share + wb.get("o_norm.weight", 0), 3),
           _matmul("lin.out_proj", T, D, H * dv, wb["o_proj.weight"], setup, share)]
    ops[4].chain = _chain(setup, T, S, GDN_CHUNK)
    return ops


# Mamba-2's scan (llama.cpp's GGML_OP_SSM_SCAN, ggml-cuda/ssm-scan.cu; mamba_ssm's selective state
# update): per state entry and token the decay multiply, the dt x B x x add and the C dot's multiply-add
SSM_FLOPS_PER_STATE = 5.0
# a Mamba-2 step waits on one reduction over d_state (y = S C) where the delta rule's waits on two
# dependent ones (k^T S, then q^T S): estimated at half GDN_STEP_CYCLES, not fitted (no public
# result of a Mamba-2 hybrid is in the set)
SSM_STEP_CYCLES = GDN_STEP_CYCLES / 2
SSM_CHUNK = 256     # vLLM's prompt kernels (mamba_chunk_scan_combined): tokens per chunk (the models' chunk_size 128-256)


def _mamba2_ops(setup: Setup, T: int, work: _Works, share: float) -> list:
    """One Mamba-2 layer (Nemotron-H, Granite 4.0-H) for T tokens of work.streams streams, `share` of
    its heads on this card. As llama.cpp builds it (src/models/mamba-base.cpp build_mamba2_layer):
    in_proj (the gate z, x / B / C and dt in one matrix), the causal depthwise convolution over x, B, C
    with its bias and silu (ssm_conv: the stream's last K - 1 inputs read and written), then the scan
    (ssm_scan: each head's head_dim x d_state f32 state read once per stream and written back,
    SSM_FLOPS_PER_STATE per entry and token; dt's softplus and the D skip), the gated group RMSNorm
    (y silu(z)) and out_proj. Like the delta rule it is flat in the context, and a stream's tokens run
    one after another (SSM_STEP_CYCLES each; per SSM_CHUNK-token chunk under vLLM)."""
    cfg = setup.model
    D, G, H = cfg.hidden_size, cfg.linear_k_heads, cfg.linear_v_heads
    N, P, K, C = cfg.linear_k_dim, cfg.linear_v_dim, cfg.linear_conv, cfg.linear_conv_dim
    wb = _layer_weight_bytes(cfg, setup.weights)["linear"]
    S = work.streams
    di = H * P
    state = 4 * H * P * N * share                    # f32 SSM state of one stream, this card's heads
    conv_state = 4 * (K - 1) * C * share
    ops = [_matmul("lin.in_proj", T, di + C + H, D, wb["in_proj.weight"], setup, share),
           _Op("lin.conv", "vector", "fp32", 0.0, (2 * K + 5) * T * C * share,
               2 * ACT_BYTES * T * C * share + (wb.get("conv1d.weight", 0) + wb.get("conv1d.bias", 0)) * share
               + 2 * S * conv_state, 3),
           _Op("lin.recurrence", "vector", "fp32", 0.0, SSM_FLOPS_PER_STATE * T * H * P * N * share + 12 * T * H * share,
               2 * S * state + 4 * T * share * (2 * di + 2 * G * N + H), 1),
           _Op("lin.norm_gate", "vector", "fp32", 0.0, 10 * T * di * share,
               3 * ACT_BYTES * T * di * share + wb.get("norm.weight", 0), 3),
           _matmul("lin.out_proj", T, D, di, wb["out_proj.weight"], setup, share)]
    ops[2].chain = _chain(setup, T, S, SSM_CHUNK)
    ops[2].step_cycles = SSM_STEP_CYCLES
    return ops


def _mla_expand_once_ops(setup: Setup, T: int, work: _Attn, share: float) -> list:
    """MLA prefill as fused attention over K/V expanded once per ubatch (the form ik_llama.cpp's
    mla=3 and vLLM/SGLang use for prompts): kv_b expands the d + n cached latents to per-head
    k_nope and v (f16), then plain flash attention with 2 (Dn + Dr + Dv) FLOPs per key and head
    instead of the absorbed 2 (2R + Dr)."""
    cfg = setup.model
    kvf = setup.kv_fmt
    R, Dr, Dn, Dv = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim
    H = cfg.n_heads * share
    kvb = R * cfg.n_heads * (Dn + Dv) * share
    kvb_w = _layer_weight_bytes(cfg, setup.weights)["attn"]["kv_b_proj.weight"] * share
    row = kvf.nbytes(R) + kvf.nbytes(Dr)
    return _kv_b_expand_ops(setup, work.expanded, kvb, kvb_w, row, H) + [
        _Op("attn.core", "attention", "fp16", 2.0 * H * (Dn + Dr + Dv) * work.keys, SOFTMAX_OPS * H * work.keys,
            (2 * H * (Dn + Dv) + 2 * Dr) * work.read + ACT_BYTES * T * H * (Dn + Dr + Dv), 2, "mla_expand"),
    ]


def _mla_absorbed_ops(setup: Setup, T: int, work: _Attn, share: float, kvb_w: float) -> list:
    """MLA attention in the absorbed form for T tokens doing `work` (`share` of the heads and kvb_w
    bytes of kv_b on this card), under setup.mla_strategy "absorbed" or "flash": q_nope (Dn) ->
    latent query (R) per head through kv_b's K part, MQA over the latent cache (R + Dr wide keys, R
    wide values), latent output -> Dv through kv_b's V part."""
    cfg = setup.model
    kvf = setup.kv_fmt
    deq = DEQUANT_OPS if kvf.dequant else 0
    R, Dr, Dn, Dv = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim
    H = cfg.n_heads * share
    row = kvf.nbytes(R) + kvf.nbytes(Dr)
    strat = setup.mla_strategy
    ops = [_mm_path(setup, _Op("attn.absorb_q", "matmul", _wdtype(setup), 2.0 * T * H * Dn * R,
                               DEQUANT_OPS * H * Dn * R if setup.weight_fmt.dequant else 0.0,
                               kvb_w * Dn / (Dn + Dv) + ACT_BYTES * T * H * (Dn + R), 1), T)]
    flops = 2.0 * H * (R + Dr + R) * work.keys
    if strat == "flash":
        # mainline ggml-cuda's MMA tiles compute the columns of heads and tokens they leave
        # empty (kernels.mla_fa_padding: GLM-4.7-Flash's 20 heads in tiles of 16 or 32); a
        # decode step's streams each bring one query (llama.cpp's default: a cache per stream)
        n_q = T if work.prefill else 1
        flops *= kn.mla_fa_padding(setup.runtime, setup.gpu, R + Dr, round(H), n_q,
                                   work.keys / max(work.n_q, 1))
    vec = SOFTMAX_OPS * H * work.keys + deq * (R + Dr) * work.read
    if strat == "absorbed":
        # unfused: K.Q and P.V are separate kernels, each reading the latent cache, with f32
        # scores written, softmaxed in place (read + write) and read back
        nbytes = 2 * row * work.read + 4 * SCORE_BYTES * H * work.keys
        kernels = 4
        if setup.runtime.attention_kernel == "ggml_cuda":
            # mainline's graph without flash attention: V is a view of the latent cache, not
            # stored transposed, so P.V first copies it transposed (ggml_cont of
            # ggml_transpose, build_attn_mha): read and written once more per step
            nbytes += 2 * kvf.nbytes(R) * work.read
            kernels += 1
    else:
        # flash: one fused pass over the cache, split over it (split-K) and combined
        nbytes = row * work.read
        kernels = 2
    mpath = "mla_absorbed" if strat == "absorbed" else "mla_flash"
    ops.append(_Op("attn.core", "attention", "fp16", flops, vec, nbytes + ACT_BYTES * T * H * (R + Dr + R), kernels,
                   mpath, acc16=kn.fa_acc16_share(mpath, setup.runtime, R + Dr, R)))
    ops.append(_mm_path(setup, _Op("attn.absorb_out", "matmul", _wdtype(setup), 2.0 * T * H * R * Dv,
                                   DEQUANT_OPS * H * R * Dv if setup.weight_fmt.dequant else 0.0,
                                   kvb_w * Dv / (Dn + Dv) + ACT_BYTES * T * H * (R + Dv), 1), T))
    return ops


def _kv_b_expand_ops(setup: Setup, E: float, kvb: float, kvb_w: float, row: float, H: float) -> list:
    """kv_b expanding E cached latents to per-head k_nope | v for attention. Idealized (physics
    profiles, vLLM): written once in f16. A ggml graph (_ggml_graph): mul_mat writes f32, read
    back once more to join k_nope with the rope key repeated over the heads and to cast K and V to
    the f16 that flash attention reads (llama.cpp's own unabsorbed DeepSeek-2 graph: ggml_mul_mat
    of wkv_b, ggml_cont of the V view, ggml_concat with ggml_repeat_4d of k_pe; each node a kernel
    with its own pass, so one pass is the least of it)."""
    cfg = setup.model
    kvf = setup.kv_fmt
    R, Dr, Dn, Dv = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim, cfg.v_head_dim
    deq = DEQUANT_OPS if kvf.dequant else 0
    vec = (DEQUANT_OPS * kvb if setup.weight_fmt.dequant else 0.0) + deq * R * E
    if not _ggml_graph(setup):
        return [_mm_path(setup, _Op("attn.kv_b_expand", "matmul", _wdtype(setup), 2.0 * kvb * E, vec,
                                    kvb_w + row * E + 2 * H * (Dn + Dv) * E, 2), E, cache_operand=True)]
    out_b = ACT_BYTES * H * (Dn + Dv) * E
    return [_mm_path(setup, _Op("attn.kv_b_expand", "matmul", _wdtype(setup), 2.0 * kvb * E, vec,
                                kvb_w + row * E + out_b, 2), E, cache_operand=True),
            _Op("attn.kv_cast", "vector", "fp32", 0.0, H * (Dn + Dr + Dv) * E,
                out_b + kvf.nbytes(Dr) * E + 2 * H * (Dn + Dr + Dv) * E, 2)]


def _ggml_graph(setup: Setup) -> bool:
    """A llama.cpp-family runtime model (kernel table, not vLLM's paged attention): its ops are ggml
    graph nodes, whose matmuls write f32."""
    return kn.ggml_runtime(setup.runtime)


def _expand_once_wins(setup: Setup, T: int, work: _Attn, share: float) -> bool:
    """A runtime picks the cheaper fused prefill form per ubatch; so does the model: the whole of
    each form's attention ops priced as the layer prices them (the ops both forms share, the q, kv_a
    and o projections, left out), so that a card better in every figure never picks the dearer one."""
    gpu, rt = setup.gpu, setup.runtime
    attn = _attn_eff(setup)
    once = sum(_time(o, gpu, rt, attn)[0] for o in _mla_expand_once_ops(setup, T, work, share))
    kvb_w = _layer_weight_bytes(setup.model, setup.weights)["attn"]["kv_b_proj.weight"] * share
    absorbed = sum(_time(o, gpu, rt, attn)[0] for o in _mla_absorbed_ops(setup, T, work, share, kvb_w))
    return once < absorbed


def _mla_expands(setup: Setup, T: int, work: _Attn, share: float) -> bool:
    """Whether an MLA prefill ubatch runs as expand-once + fused MHA: the runtime model says so
    (`mla_prefill` "expand": ik_llama.cpp's -mla 2/3 prompt path), never ("strategy"), or, by
    default, the flash strategy picks the cheaper form per ubatch."""
    mode = setup.runtime.mla_prefill
    if mode == "expand":
        return True
    if mode == "strategy":
        return False
    return setup.mla_strategy == "flash" and _expand_once_wins(setup, T, work, share)


def _cublas_dtype(setup: Setup) -> str:
    """The peak an f16 cuBLAS GEMM of this runtime runs against: llama.cpp's CUDA backend computes
    f16 GEMMs with f16 accumulation (CUBLAS_COMPUTE_16F) where the card has it at full rate, so a
    runtime model with `cublas_acc16` uses the card's `fp16_acc16` peak (twice the FP32-accumulate
    one on GeForce cards); others the fp16 (FP32-accumulate) peak."""
    if setup.runtime.cublas_acc16 and "fp16_acc16" in setup.gpu.tflops:
        return "fp16_acc16"
    return "fp16"


def _mm_path(setup: Setup, op: _Op, n_cols, cache_operand: bool = False) -> _Op:
    """A weight-times-activations op outside _matmul, given the kernel path for n_cols columns.
    `cache_operand`: the other operand is the KV cache (MLA's kv_b expanding the cached latents),
    which the runtime keeps in f16: kn.cache_operand_path."""
    quant = setup.weight_fmt.dequant
    op.family = kn.family(setup.weight_fmt.name)
    op.path = kn.matmul_path(quant, op.family, n_cols, setup.runtime, setup.gpu)
    if cache_operand and _ggml_graph(setup):   # llama.cpp's rule (not ideal's / typical's, not vLLM's)
        op.path = kn.cache_operand_path(op.path, setup.kv_fmt.name, setup.runtime.name)
    if op.path == "dequant_cublas":
        op.dtype = "fp16"
    if op.path in ("cublas", "dequant_cublas") and op.dtype == "fp16":
        op.dtype = _cublas_dtype(setup)
    op.capf = _cap_factor(setup.model, setup.weights, op.name)
    return op


def _attn_eff(setup: Setup) -> tuple:
    return setup.runtime.attention_efficiency(setup.model, setup.mla_strategy, setup.kv_fmt.name)


def _dense_kinds(setup: Setup, T: int, share: float) -> list:
    """[(dense layers of one MLP width, their ops), ...]: one group (the mean width's ops) unless the config lists a
    width per layer (cfg.layer_intermediates: DeciLM's, Gemma 3n's), then a group per width, each priced at it."""
    cfg = setup.model
    if not (cfg.intermediate_size and cfg.n_dense_layers):
        return []
    if not cfg.layer_intermediates:
        return [(frozenset(cfg.dense_layers), _ffn_ops(setup, T, False, share))]
    groups: dict = {}
    for i in cfg.dense_layers:
        groups.setdefault(cfg.layer_intermediate(i), []).append(i)
    return [(frozenset(ls), _ffn_ops(setup, T, False, share, tuple(ls))) for _, ls in sorted(groups.items())]


def _linear_block_kinds(setup: Setup, T: int, share: float) -> list:
    """[(layers, ops), ...] of DeciLM's linear stand-ins (cfg.linear_attn_layers, cfg.linear_mlp_layers): each
    block its norm and one hidden x hidden matmul; [] for every other family."""
    cfg = setup.model
    D = cfg.hidden_size
    t = _weight_table(cfg, setup.weights)["layers"]
    out = []
    for name, ls, key in (("attn.linear", cfg.linear_attn_layers, "attn"), ("mlp.linear", cfg.linear_mlp_layers, "mlp")):
        if not ls:
            continue
        wb = _mean((t[i][key]["linear_attn.weight"] if key == "attn" else t[i]["mlp"]) for i in ls)
        out.append((frozenset(ls), _block_norm_ops(setup, T) + [_matmul(name, T, D, D, wb, setup, share)]))
    return out


def _n_block_norms(cfg, i: int) -> int:
    """Layer i's norms priced apart from its FFN ops (_block_norm_ops): Nemotron-H's mixer block's one; DeciLM's
    one before its attention (its linear stand-in's is in that block's ops); 0 elsewhere."""
    if cfg.ffn_layers is None:
        return 0
    if cfg.model_type == "nemotron-nas":
        return int(cfg.has_mixer(i))
    return int(not cfg.has_ffn(i))


def _ffn_ops(setup: Setup, T: int, moe: bool, share: float, layers: tuple | None = None) -> list:
    cfg = setup.model
    D = cfg.hidden_size
    wb = _layer_weight_bytes(cfg, setup.weights)
    if layers:   # (dense layers of one width, _dense_kinds: their own bytes)
        t = _weight_table(cfg, setup.weights)["layers"]
        # (a DeciLM layer's norm before its MLP: its layer's norms shared out, the attention's priced apart)
        deci = cfg.model_type == "nemotron-nas"
        wb = {**wb, "mlp": _mean(t[i]["mlp"] for i in layers),
              "norms": _mean(t[i]["norms"] / (cfg.has_attn_block(i) + 1) if deci else t[i]["norms"] for i in layers)}
    # a layer's two norms (one where each layer is one block: Nemotron-H, whose mixer blocks price
    # theirs apart, _block_norm_ops)
    nn = 1 if cfg.mixer_layers is not None else 2
    ops = [_Op("norms", "vector", "fp32", 0.0, nn * 4 * T * D, nn * (2 * ACT_BYTES * T * D) + wb["norms"], 2 * nn)]
    m = cfg.mlp_matrices
    if not moe:
        # (the mean width over the dense layers: Gemma 4 E2B's kv-shared layers are twice as wide)
        F = cfg.layer_intermediate(layers[0]) if layers else \
            _mean(cfg.layer_intermediate(i) for i in cfg.dense_layers) if cfg.double_wide_mlp else cfg.intermediate_size
        ops.append(_matmul("mlp", T, m * F, D, wb["mlp"], setup, share, kernels=m + 1))
        return ops
    E, k, Fe = cfg.n_routed_experts, cfg.n_experts_per_tok, cfg.moe_intermediate_size
    De = cfg.expert_input_size      # the experts' width: hidden, or a latent MoE's latent size
    # the router runs in f32 on every card (replicated under tensor split)
    ops.append(_Op("moe.router", "matmul", "fp32", 2.0 * T * E * D, 8 * T * E,
                   wb["router"] + ACT_BYTES * T * (D + 2 * E), 5))
    rt = setup.runtime
    u = (fewest_distinct_experts(E, k, T) if rt.expert_routing == "fewest"
         else expected_distinct_experts(E, k, T, setup.expert_skew))
    quant = setup.weight_fmt.dequant
    # mul_mat_id (llama.cpp) or a fused MoE kernel (vLLM); in prefill each touched expert gets
    # T k / u tokens of the ubatch (kernels.moe_occupancy)
    path = kn.moe_path(T, rt)
    fam = kn.family(setup.weight_fmt.name)
    dtype, extra = _wdtype(setup), 0.0
    if path == "mmid" and kn.mul_mat_id_fallback(quant, fam, T, rt, setup.gpu):
        # ggml-cuda's mul_mat_id without MMQ for the batch's token count: one dense product per expert
        # (kernels.mul_mat_id_fallback, ggml-cuda.cu ggml_cuda_mul_mat_id)
        ops += _mmid_fallback_ops(setup, T, share, fam, wb["expert"])
        path = None
    elif path == "mmid" and quant:
        sub = kn.matmul_path(quant, fam, T * k / max(u, 1.0), rt, setup.gpu)
        if sub == "dequant_cublas":
            dtype, extra = _cublas_dtype(setup), 2 * 2.0 * u * m * De * Fe * share
    parts = _mmid_gemv_parts(setup, T) if path == "mmid_vec" and quant else []
    if parts:
        # mainline's mul_mat_id per matrix by its type's MMVQ limit (kernels.mmvq_mmid_max_batch): the matrices
        # above it run MMQ over all experts, each op its share of the experts' elements and bytes
        for p, fe, fb, capf in parts:
            ops.append(_Op("moe.experts", "matmul", dtype, 2.0 * T * k * m * De * Fe * share * fe,
                           (DEQUANT_OPS * u * m * De * Fe * share + 4 * T * k * Fe * share) * fe,
                           u * wb["expert"] * share * fb + ACT_BYTES * T * k * (2 * De + m * Fe * share) * fe,
                           (m + 2) * fe, p, fam, T * k / max(u, 1.0) if p != "mmid_vec" else 0.0, kn.mmq_tile(T)))
            ops[-1].capf = capf
    elif path is not None:
        ops.append(_Op("moe.experts", "matmul", dtype, 2.0 * T * k * m * De * Fe * share,
                       (DEQUANT_OPS * u * m * De * Fe * share if quant else 0.0) + 4 * T * k * Fe * share,
                       u * wb["expert"] * share + extra + ACT_BYTES * T * k * (2 * De + m * Fe * share), m + 2,
                       path, fam, T * k / max(u, 1.0) if path != "mmid_vec" else 0.0, kn.mmq_tile(T)))
        ops[-1].capf = _cap_factor(cfg, setup.weights, "moe.experts")
    if cfg.shared_expert_intermediate_size:
        ops.append(_matmul("moe.shared", T, m * cfg.shared_expert_intermediate_size, D, wb["shared"], setup, share,
                           kernels=m + 1))
    if cfg.moe_latent_size:
        # the latent MoE's projections down to the experts' width and back (two matmuls of D x latent)
        ops.append(_matmul("moe.latent", T, 2 * De, D, wb["latent"], setup, share, kernels=2))
    return ops


def _expert_probs(setup: Setup) -> list:
    """[(q, count), ...]: each routed expert's chance that a token picks it, as expected_distinct_experts
    takes it (uniform k / E; under `expert_skew` min(1, k p_e)); the `fewest` routing's k experts every token."""
    cfg = setup.model
    E, k = cfg.n_routed_experts, cfg.n_experts_per_tok
    if setup.runtime.expert_routing == "fewest":
        return [(1.0, min(k, E))]
    skew = setup.expert_skew
    if skew is None or (isinstance(skew, float) and skew == 0.0):
        return [(min(1.0, k / E), E)]
    w = [(e + 1) ** -skew for e in range(E)] if isinstance(skew, float) else list(skew)
    tot = sum(w)
    out: dict = {}
    for x in w:
        q = min(1.0, k * x / tot)
        out[q] = out.get(q, 0) + 1
    return sorted(out.items())


# the per-expert products of a runtime model whose mul_mat_id always loops on the host (ik_llama.cpp) keep its
# MoE kernel-table entries: the dense kernel of each band as that loop's
_LOOP_ENTRIES = {"mmvq": "mmid_vec", "mmq": "mmid", "dequant_cublas": "mmid"}


def _mmid_fallback_ops(setup: Setup, T: int, share: float, fam: str, expert_bytes: float) -> list:
    """The routed experts of a ubatch of T tokens as ggml-cuda's mul_mat_id fallback runs them
    (kernels.mul_mat_id_fallback: a CUDA llama.cpp-family runtime model, no MMQ for the batch's T tokens, as on
    Volta from 64 tokens or in the 2024 dequantize + cuBLAS era): a dense product per expert that has rows, its
    kernel ggml_cuda_mul_mat's for that expert's own token count (ggml-cuda.cu ggml_cuda_mul_mat_id, the loop
    after its MMVQ / MMQ / MMF checks): MMVQ up to 8 tokens, MMQ or dequantize + cuBLAS above
    (kernels.fallback_bands, fallback_paths). One "moe.experts" op per band that holds experts, each priced as
    that many dense products of its path (weights read once per expert; dequantize + cuBLAS also writes and
    reads the f16 copy; ik_llama.cpp's under its mmid / mmid_vec entries, _LOOP_ENTRIES). Launches: the op's m + 2 shared out, and on mainline (attention_kernel "ggml_cuda",
    whose MMQ / MMVQ read the ids on the device, so its mmid:expert_us prices nothing) 2 per expert with rows
    and matrix (the activations' quantization or the weights' conversion, then the product), launched from
    the host loop; ik_llama.cpp's mmid:expert_us already prices its host loop's per-expert time."""
    cfg = setup.model
    m, Fe, De = cfg.mlp_matrices, cfg.moe_intermediate_size, cfg.expert_input_size
    quant = setup.weight_fmt.dequant
    bands = kn.fallback_bands(T, _expert_probs(setup))
    paths = kn.fallback_paths(quant, fam, setup.runtime, setup.gpu)
    mainline = setup.runtime.attention_kernel == "ggml_cuda"
    per_expert = 2 * m if mainline else 0
    if not mainline:    # ik_llama.cpp: its mul_mat_id entries were fitted on this very loop
        paths = [_LOOP_ENTRIES.get(p, p) for p in paths]
    n_exp = sum(e for e, _ in bands) or 1.0
    mat = m * De * Fe * share           # one expert's weights on this card (elements)
    ops = []
    for (e, t), path in zip(bands, paths):
        if e <= 0 and t <= 0:
            continue
        dtype, extra = _wdtype(setup), 0.0
        if path == "dequant_cublas":
            dtype, extra = _cublas_dtype(setup), 2 * 2.0 * e * mat
        # a batched product keeps the MoE occupancy of its expert's tokens, padded to its own tile
        # (kernels.moe_occupancy: the tile sized to the expert's count, not to the ubatch's); a GEMV none
        tpe = t / e if e > 0 and path not in ("mmvq", "mmid_vec") else 0.0
        op = _Op("moe.experts", "matmul", dtype, 2.0 * t * mat, DEQUANT_OPS * e * mat + 4 * t * Fe * share,
                 e * expert_bytes * share + extra + ACT_BYTES * t * (2 * De + m * Fe * share),
                 (m + 2) * e / n_exp + per_expert * e, path, fam, tpe, kn.mmq_tile(tpe) if tpe else 0.0)
        op.capf = _cap_factor(cfg, setup.weights, "moe.experts")
        ops.append(op)
    return ops


def _block_norm_ops(setup: Setup, T: int) -> list:
    """The one RMSNorm of a block without an MLP (Nemotron-H's Mamba-2 and attention blocks; [] for
    a model whose layers all hold an MLP, whose norms _ffn_ops prices)."""
    cfg = setup.model
    if cfg.ffn_layers is None:
        return []
    D = cfg.hidden_size
    return [_Op("norms", "vector", "fp32", 0.0, 4 * T * D, 2 * ACT_BYTES * T * D + 4 * D, 2)]


def _head_ops(setup: Setup, T_out: int, share: float) -> list:
    cfg = setup.model
    D, V = cfg.hidden_size, cfg.vocab_size
    wb = _layer_weight_bytes(cfg, setup.weights)
    lm = wb["lm_head"] or wb["embed"]
    return [_Op("head.norm", "vector", "fp32", 0.0, 4 * T_out * D, 2 * ACT_BYTES * T_out * D + wb["final_norm"], 1),
            _matmul("head.lm_head", T_out, V, D, lm, setup, share)]


def _layer_counts(setup: Setup) -> list:
    """Per card: (n dense layers, n MoE layers, holds the head)."""
    cfg, N = setup.model, setup.n_cards
    moe = set(cfg.moe_layers)
    if setup.split != "layer":
        nm = len(moe)
        return [(cfg.n_layers - nm, nm, True)] * (1 if setup.split == "none" else N)
    out, start = [], 0
    for c in range(N):
        # llama.cpp splits layers in proportion to each card's memory: equal cards, equal shares
        n = cfg.n_layers // N + (1 if c < cfg.n_layers % N else 0)
        layers = range(start, start + n)
        start += n
        nm = sum(1 for i in layers if i in moe)
        out.append((n - nm, nm, c == N - 1))
    return out


def _layer_ranges(setup: Setup) -> list:
    """Per card: the decoder layers it holds (every layer on every card unless split by layers)."""
    cfg, N = setup.model, setup.n_cards
    if setup.split != "layer":
        return [range(cfg.n_layers)] * (1 if setup.split == "none" else N)
    out, start = [], 0
    for c in range(N):
        n = cfg.n_layers // N + (1 if c < cfg.n_layers % N else 0)
        out.append(range(start, start + n))
        start += n
    return out


def _kv_share(setup: Setup) -> float:
    """The share of a layer's KV heads (their cache and their k / v projections) on each card:
    1 / cards under tensor split, but at least one head: with more cards than KV heads vLLM
    replicates each KV head on cards / n_kv_heads cards (QKVParallelLinear's num_kv_head_replicas).
    MLA's latent is on every card (1)."""
    cfg = setup.model
    if setup.split != "tensor" or cfg.attention == "mla":
        return 1.0
    return max(1.0 / setup.n_cards, 1.0 / cfg.n_kv_heads)


def _attn_kind_ops(setup: Setup, T: int, work: _Works, share: float) -> list:
    """[(layers of one kind, its ops), ...] for every kind of attention layer (_attn_kinds): the
    windowed ones doing work.windowed, the global ones work.full (a DSA model's on a sparse runtime:
    work.topk); a DSA model's layers with an indexer of their own apart, their indexer ops added."""
    out = []
    for w, _own, ls in _attn_kinds(setup.model):
        main = work.topk if work.topk is not None and _dsa_sparse(setup) else work.windowed if w else work.full
        ops = _attention_ops(setup, T, main, share, ls)
        out += _with_indexer(setup, T, work.full, ls, ops)
    return out


# ---- DeepSeek Sparse Attention (configs.DSA_FAMILIES) ----------------------------------------------
def _dsa_sparse(setup: Setup) -> bool:
    """Whether the runtime runs a DSA model's MLA over the chosen keys only (vLLM / SGLang: FlashMLA's sparse
    kernels; the physics profiles `ideal` / `typical`), not as a mask over every cached key: llama.cpp's
    graph (src/llama-graph.cpp build_attn with top_k: the top-k indices unmask a copy of the KQ mask,
    ggml_set_rows, and the usual MLA flash attention runs over the whole cache; so do ik_llama.cpp and
    the Vulkan backend, _ggml_graph)."""
    return bool(setup.model.index_topk) and not _ggml_graph(setup)


def _with_indexer(setup: Setup, T: int, work: _Attn, layers, ops: list) -> list:
    """[(layers, ops)] of one kind of attention layer, those with a DSA indexer of their own (cfg.indexer_layers)
    apart with the indexer's ops before their attention's (GLM's "shared" layers reuse the previous full
    layer's top-k: the attention alone)."""
    cfg = setup.model
    full = tuple(i for i in layers if cfg.has_indexer(i))
    if not full:
        return [(frozenset(layers), ops)]
    shared = frozenset(layers) - frozenset(full)
    return [(frozenset(full), _indexer_ops(setup, T, work, full) + ops)] + ([(shared, ops)] if shared else [])


# vector ops per score of a top-k selection over a query's scores (a radix / bitonic select: a pass per bit
# of the key it sorts on, ~log2 of the keys kept)
def _topk_ops(K: int) -> float:
    return max(1.0, math.log2(max(K, 2)))


def _index_row_bytes(setup: Setup) -> float:
    """Bytes of one token's cached indexer key: vLLM / SGLang keep it in fp8 with an f32 scale per 128 values
    (vLLM's DeepseekV32IndexerCache: index_head_dim + index_head_dim / 128 x 4 bytes of uint8); llama.cpp in
    its cache's K type (src/llama-kv-cache-dsa.cpp: the indexer cache kv_lid is a llama_kv_cache of type_k, one
    key head of indexer_head_size, K only); the physics profiles in the cache format."""
    Dk = setup.model.index_head_dim
    if setup.runtime.attention_kernel == "paged_attn":
        return Dk + 4 * -(-Dk // 128)
    return setup.kv_fmt.nbytes(Dk)


def _indexer_ops(setup: Setup, T: int, work: _Attn, layers: tuple) -> list:
    """A DSA layer's lightning indexer for T tokens (HF GlmMoeDsaIndexer; llama.cpp src/models/glm-dsa.cpp,
    deepseek32.cpp): its projections (wq_b from the q latent; wk and weights_proj from the hidden state), the
    key's LayerNorm, rope and Hadamard rotation with its cache write, the scores over every cached key
    (2 x heads x head dim FLOPs per query and key, relu, the heads' weighted sum; each cached indexer key
    read), and the top-k choice over each query's scores. Replicated on every card under tensor split (as
    the MLA latent is: every card attends over the whole latent cache)."""
    cfg, rt = setup.model, setup.runtime
    H, Dk, D, Q, Dr = cfg.index_n_heads, cfg.index_head_dim, cfg.hidden_size, cfg.q_lora_rank, cfg.qk_rope_head_dim
    wb = _attn_kind_bytes(cfg, setup.weights, tuple(layers))
    kv_w = wb["indexer.wk.weight"] + wb["indexer.weights_proj.weight"]
    row = _index_row_bytes(setup)
    # (llama.cpp rotates q and k by a Dk x Dk Hadamard matrix, a matmul; vLLM's fp8 path too)
    vec = T * (5 * Dk + 6 * (H + 1) * Dr + 2 * Dk * Dk * (H + 1))
    fp8 = rt.attention_kernel == "paged_attn" and "fp8" in setup.gpu.tflops
    keys = work.keys
    ops = [_matmul("attn.indexer", T, H * Dk, Q, wb["indexer.wq_b.weight"], setup, 1.0),
           _matmul("attn.indexer", T, Dk + H, D, kv_w, setup, 1.0, kernels=2),
           _Op("attn.indexer_norm", "vector", "fp32", 0.0, vec,
               ACT_BYTES * T * 4 * (H + 1) * Dk + row * work.n_q + wb["indexer.k_norm.weight"] * 2, 5),
           # q.k on the tensor cores (vLLM: fp8 DeepGEMM logits; llama.cpp: its fused lightning-indexer kernel
           # over the f16 cache), relu, the heads' weights and sum; f32 scores written, masked
           _Op("attn.indexer_score", "attention", "fp8" if fp8 else "fp16", 2.0 * H * Dk * keys, 3.0 * H * keys,
               row * work.read + SCORE_BYTES * keys + ACT_BYTES * T * H * (Dk + 1), 1)]
    K = min(cfg.index_topk, max(keys / max(work.n_q, 1), 1))
    sel = _Op("attn.topk", "vector", "fp32", 0.0, _topk_ops(K) * keys, SCORE_BYTES * keys + 4 * work.n_q * K, 1)
    ops.append(sel)
    if _ggml_graph(setup):
        # llama.cpp's mask: a copy of the KQ mask with the chosen keys unmasked (ggml_set_rows), added to the
        # causal mask (ggml_add): f32 rows over every cached key, written and read
        ops.append(_Op("attn.topk_mask", "vector", "fp32", 0.0, keys, 3 * SCORE_BYTES * keys, 2))
    return ops


def _ple_ops(setup: Setup, T: int, share: float) -> list:
    """Gemma 4's per-layer-embedding step in one layer (llama.cpp's gemma4 graph): the gate (hidden -> P)
    and the projection back (P -> hidden) as one pair of matmuls, the GELU, the product with the layer's
    slice of the per-layer input, the norm and the residual add; [] without PLE. Gemma 3n's AltUp and LAuReL
    with it (llama.cpp's gemma3n graph): LAuReL's two rank-r matmuls, AltUp's router (hidden -> n, before the
    layer and after it) as more rows of the same D-wide matmuls, and the streams' prediction (n x n per
    token) and correction as vector work over the n copies of the hidden state."""
    cfg = setup.model
    if not (cfg.ple_size or cfg.altup_inputs or cfg.laurel_rank):
        return []
    D, P, n, r = cfg.hidden_size, cfg.ple_size, cfg.altup_inputs, cfg.laurel_rank
    wb = _layer_weight_bytes(cfg, setup.weights)
    ops = [_matmul("ple.layer", T, 2 * P + 2 * r + 2 * n, D, wb["ple"], setup, share,
                   kernels=2 + (2 if r else 0) + (2 if n else 0)),
           _Op("ple.layer_vec", "vector", "fp32", 0.0, T * (10 * P + 6 * D), ACT_BYTES * T * (3 * P + 4 * D), 4)]
    if n:
        ops.append(_Op("altup.streams", "vector", "fp32", 0.0, T * (2 * n * n * D + 6 * n * D + 12 * D),
                       ACT_BYTES * T * D * (4 * n + 6), 12))
    return ops


def _ple_input_ops(setup: Setup, T: int, share: float) -> list:
    """Gemma 4's per-layer inputs, once per pass (on the first card): the input embedding projected to
    layers x P, normed, plus the token's rows of the per-layer table (gathered, scaled), times 1/sqrt(2);
    [] without PLE."""
    cfg = setup.model
    if not (cfg.ple_size or cfg.altup_inputs):
        return []
    D, LP = cfg.hidden_size, cfg.ple_size * cfg.n_layers
    wb = _layer_weight_bytes(cfg, setup.weights)
    row = wb["ple_table"] / max(cfg.ple_vocab, 1)          # one token's row of the table, as stored
    # (Gemma 3n: its n - 1 AltUp projections into the streams and n - 1 out of them, D x D each, as more rows)
    alt = 2 * (cfg.altup_inputs - 1) * D if cfg.altup_inputs else 0
    return [_matmul("ple.input_proj", T, LP + alt, D, wb["ple_proj"], setup, share),
            _Op("ple.input_vec", "vector", "fp32", 0.0, 8 * T * LP, T * (row + 4 * ACT_BYTES * LP), 4)]


# ---- op lists kept across a calibration's trial profiles ------------------------------------------------
# A calibration prices the same points under trial profiles that differ from the one it started from only
# in numbers no op list reads (_time and _pass read them: OPS_NEVER_READ). calibrate registers each trial
# (same_ops_as) and _card_ops reuses the op lists built for the first profile of its line; where such a
# number does choose the ops, the flash MLA prefill form (_mla_expands, by _expand_once_wins' prices), the
# choice is made for the trial and is part of the key.
OPS_NEVER_READ = frozenset({"compute_efficiency", "memory_efficiency", "mla_attention_efficiency",
                            "kv_attention_efficiency", "step_overhead_us", "layer_overhead_us", "link_efficiency"})
_SAME_OPS: dict = {}     # id(trial profile) -> (a weak reference to it, the profile whose op lists it shares)
_OPS: dict = {}          # _ops_key -> (op lists, the objects the key names by id, held so no id is reused)
_OPS_MAX = 4096


def same_ops_as(profile: RuntimeProfile, base: RuntimeProfile, changed) -> None:
    """Register `profile`, made from `base` by changing the RuntimeProfile fields `changed`, as building
    the same op lists as `base` when every changed field is one no op list reads (else nothing)."""
    if not set(changed) <= OPS_NEVER_READ:
        return
    got = _SAME_OPS.get(id(base))
    root = got[1] if got is not None and got[0]() is base else base
    _SAME_OPS[id(profile)] = (weakref.ref(profile, lambda _, k=id(profile): _SAME_OPS.pop(k, None)), root)


def _ops_key(setup: Setup, T: int, work: _Works, T_out: int):
    """The key of a pass's op lists shared by a line of registered profiles (same_ops_as), else None."""
    rt = setup.runtime
    got = _SAME_OPS.get(id(rt))
    if got is None or got[0]() is not rt:
        return None
    forms = None
    if (setup.model.attention == "mla" and work.full.prefill and setup.mla_strategy == "flash"
            and rt.mla_prefill not in ("expand", "strategy")):
        # the prefill form each kind of attention layer takes at this profile's prices (as _attn_kind_ops asks)
        share = 1.0 / setup.n_cards if setup.split == "tensor" else 1.0
        sparse = work.topk is not None and _dsa_sparse(setup)
        forms = tuple(_mla_expands(setup, T, work.topk if sparse else work.windowed if w else work.full, share)
                      for w, _own, _ls in _attn_kinds(setup.model))
    return (id(got[1]), id(setup.model), id(setup.rig), setup.split, setup.weights, setup.kv, setup.mla_strategy,
            id(setup.expert_skew), id(setup.offload), id(setup.host), T, work, T_out, forms)


def _card_ops(setup: Setup, T: int, work: _Works, T_out: int) -> list:
    """[(card, [(count, _Op), ...]), ...] for one pass of T tokens through the whole model (the op lists
    of a registered calibration trial's line built once: same_ops_as)."""
    key = _ops_key(setup, T, work, T_out)
    if key is not None:
        hit = _OPS.get(key)
        if hit is not None:
            return hit[0]
    out = _built_card_ops(setup, T, work, T_out)
    if key is not None:
        if len(_OPS) >= _OPS_MAX:
            _OPS.clear()
        _OPS[key] = (out, (_SAME_OPS[id(setup.runtime)][1], setup.model, setup.rig, setup.expert_skew, setup.offload,
                           setup.host))
    return out


def _built_card_ops(setup: Setup, T: int, work: _Works, T_out: int) -> list:
    share = 1.0 / setup.n_cards if setup.split == "tensor" else 1.0
    cfg = setup.model
    lin = frozenset(cfg.linear_layers)
    kinds = _attn_kind_ops(setup, T, work, share)
    lin_ops = _linear_ops(setup, T, work, share) if lin else []
    dense_kinds = _dense_kinds(setup, T, share) + _linear_block_kinds(setup, T, share)
    moe = _ffn_ops(setup, T, True, share) if cfg.n_moe_layers else []
    head = _head_ops(setup, T_out, share) if T_out else []
    ple, ple_in = _ple_ops(setup, T, share), _ple_input_ops(setup, T, share)
    block = _block_norm_ops(setup, T)
    out = []
    for c, ((nd, nm, has_head), rng) in enumerate(zip(_layer_counts(setup), _layer_ranges(setup))):
        n_lin = sum(1 for i in rng if i in lin)
        # Nemotron-H's mixer blocks: their one norm (an FFN layer's norms are in the FFN ops); DeciLM's attention's
        n_blk = sum(_n_block_norms(cfg, i) for i in rng) if block else 0
        lines = []
        # (a parallel hybrid's layer, cfg.parallel_mixers, is among the attention layers and the linear ones: both
        # mixers' ops counted)
        for ls, ops in kinds:
            n = sum(1 for i in rng if i in ls)
            lines += [(n, o) for o in ops]
        for ls, ops in dense_kinds:      # (the dense MLPs by width; DeciLM's linear blocks)
            n = sum(1 for i in rng if i in ls)
            lines += [(n, o) for o in ops]
        lines += [(n_lin, o) for o in lin_ops] + [(nm, o) for o in moe] + \
            [(n_blk, o) for o in block] + [(len(rng), o) for o in ple]
        if c == 0 or setup.split == "tensor":
            lines += [(1, o) for o in ple_in]
        if has_head:
            lines += [(1, o) for o in head]
        out.append((c, [(n, o) for n, o in lines if n]))
    return out


def allreduce_seconds(nbytes: float, n_cards: int, link_gbps: float, latency_us: float,
                      switched: bool = False) -> float:
    """All-reduce of `nbytes` over n cards. A ring (PCIe, or NVLink without a switch: NCCL's ring):
    2(n-1) steps, each one latency plus a 1/n slice of the data, so 2(n-1) latencies + 2(n-1)/n *
    bytes / bandwidth. On a switched fabric (`switched`: SXM cards on an NVSwitch baseboard, where
    every card reaches every other directly) the two-stage direct form: a reduce-scatter and an
    all-gather each written straight to the peers, 2 latencies + the same 2(n-1)/n * bytes /
    bandwidth (vLLM's custom all-reduce on fully NVLink-connected cards, one or two stages; NCCL's
    NVLS on NVSwitch): the two forms agree for two cards."""
    if n_cards <= 1:
        return 0.0
    steps = 2 * (n_cards - 1)
    hops = 2 if switched else steps
    return hops * latency_us * 1e-6 + steps / n_cards * nbytes / (link_gbps * 1e9)


def transfer_seconds(nbytes: float, link_gbps: float, latency_us: float) -> float:
    return latency_us * 1e-6 + nbytes / (link_gbps * 1e9)


def moe_fixed_us(rt, cfg, T: float) -> float:
    """A runtime model's fixed microseconds per MoE layer of a pass of T tokens at the reference
    clock: mmid:layer_us, and mmid:expert_us per routed expert the pass selects
    (kernels.KERNEL_PARAMS, kernels.experts_touched)."""
    if not rt.kernels:
        return 0.0
    e = rt.kernels.get(kn.EXPERT_US, 0.0)
    touched = kn.experts_touched(cfg.n_routed_experts, cfg.n_experts_per_tok, T) if e else 0.0
    return rt.kernels.get("mmid:layer_us", 0.0) + e * touched


def _pass(setup: Setup, T: int, work: _Works, T_out: int):
    """One pass of T tokens: (per-card busy seconds, link seconds per boundary or per pass, OpCosts)."""
    if setup.offload is not None:
        return _pass_offload(setup, T, work, T_out)
    gpu, rt = setup.gpu, setup.runtime
    attn = _attn_eff(setup)
    costs, card_s = [], []
    counts = _layer_counts(setup)
    for c, lines in _card_ops(setup, T, work, T_out):
        tot = 0.0
        for n, op in lines:
            s, tc, tm, tl = _time(op, gpu, rt, attn)
            tot += n * s
            costs.append(OpCost(op.name, c, n, n * (op.tflops + op.vflops), n * op.bytes, n * s, n * tc, n * tm, n * tl))
        moe_us = moe_fixed_us(rt, setup.model, T)
        if rt.step_overhead_us or rt.layer_overhead_us or moe_us:
            # a calibrated profile's fixed costs (in place of counted launches): per pass and per layer
            # (and per MoE layer for a runtime model's routing kernels and per-expert launches)
            n_layers = counts[c][0] + counts[c][1]
            ov = (rt.step_overhead_us + rt.layer_overhead_us * n_layers
                  + moe_us * counts[c][1] * kn.clock_scale(gpu)) * 1e-6
            tot += ov
            costs.append(OpCost("overhead", c, 1, 0.0, 0.0, ov, 0.0, 0.0, ov))
        card_s.append(tot)
    rig = setup.rig
    link = 0.0
    link_gbps = rig.link_gbps * rt.link_efficiency if rig.link_gbps else rig.link_gbps
    if setup.split == "layer":
        link = transfer_seconds(ACT_BYTES * T * setup.model.hidden_size, link_gbps, rig.link_latency_us)
        for c in range(setup.n_cards - 1):
            costs.append(OpCost("link.activations", c, 1, 0.0, ACT_BYTES * T * setup.model.hidden_size, link, 0.0, 0.0, 0.0))
    elif setup.split == "tensor":
        cfg = setup.model
        # two all-reduces of the hidden state per layer (after o_proj and after the MLP), and the
        # vocabulary-split logits gathered once
        sw = rig.switched
        ar = allreduce_seconds(ACT_BYTES * T * cfg.hidden_size, setup.n_cards, link_gbps, rig.link_latency_us, sw)
        gather = allreduce_seconds(ACT_BYTES * T_out * cfg.vocab_size / 2, setup.n_cards, link_gbps,
                                   rig.link_latency_us, sw)
        link = 2 * cfg.n_layers * ar + gather
        costs.append(OpCost("link.allreduce", 0, 2 * cfg.n_layers, 0.0,
                            2 * cfg.n_layers * ACT_BYTES * T * cfg.hidden_size, 2 * cfg.n_layers * ar, 0.0, 0.0, 0.0))
        costs.append(OpCost("link.logits", 0, 1, 0.0, ACT_BYTES * T_out * cfg.vocab_size, gather, 0.0, 0.0, 0.0))
    return card_s, link, costs


def _sequential_seconds(setup, card_s, link):
    if setup.split == "layer":
        return sum(card_s) + (setup.n_cards - 1) * link
    if setup.split == "tensor":
        return max(card_s) + link
    return card_s[0]


_check_int = vocab.check_int


def _setup(s) -> Setup:
    if not isinstance(s, Setup):
        raise TypeError(f"`setup` must be a costmodel.Setup, got {type(s).__name__}")
    return s


def _pipelined(stages, links, setup=None) -> float:
    """Seconds of ubatches run through the cards of a layer split as llama.cpp's pipeline
    parallelism runs them: card c starts ubatch u when it has finished u-1 and card c-1 has sent
    u (stages[u][c]: card c's busy seconds on ubatch u; links[u]: one boundary's transfer). A
    boundary's link carries one ubatch at a time: card c sends u when it has finished u and the
    link has sent u-1 (bandwidth is not shared out to ubatches in flight). A runtime that realizes
    only part of the overlap (`RuntimeProfile.pipeline_overlap` < 1, a fitted runtime model) lands
    between that schedule and the ubatches one after another."""
    fin = [0.0] * len(stages[0])
    sent = [0.0] * len(stages[0])       # when boundary c (card c -> c+1) has sent its last ubatch
    for st, link in zip(stages, links):
        ready = 0.0
        for c, busy in enumerate(st):
            fin[c] = max(fin[c], ready) + busy
            sent[c] = max(fin[c], sent[c]) + link
            ready = sent[c]
    seconds = fin[-1]
    po = 1.0 if setup is None else setup.runtime.pipeline_overlap
    if po < 1.0:
        seq = sum(_sequential_seconds(setup, st, link) for st, link in zip(stages, links))
        seconds = po * seconds + (1.0 - po) * seq
    return seconds


def decode(setup: Setup, depth: int, batch: int = 1) -> StepCost:
    """One decode step: `batch` streams, each with `depth` tokens cached, one new token each.

    One schedule for every multi-card step (docs/COSTMODEL.md, "Several cards"): the step's
    tokens are cut into ubatches of the runtime's n_ubatch, as llama_decode cuts a batch; under
    layer split, ubatches pipeline through the cards (`_pipelined`), so a batch of at most
    n_ubatch streams (one ubatch) runs the cards one after the other."""
    setup = _setup(setup)
    depth = _check_int("depth", depth, 0)
    batch = _check_int("batch", batch, 1)
    ub = setup.n_ubatch
    if setup.split != "layer" or batch <= ub:
        card_s, link, costs = _pass(setup, batch, _decode_work(setup.model, depth, batch), batch)
        return StepCost(_sequential_seconds(setup, card_s, link), batch, costs, "decode", depth, batch)
    n_ub = _check_ubatches(batch, ub, "decode")
    stages, links, merged = [], [], {}
    for u in range(n_ub):
        T = min(ub, batch - u * ub)
        card_s, link, costs = _pass(setup, T, _decode_work(setup.model, depth, T), T)
        stages.append(card_s)
        links.append(link)
        _merge_into(merged, costs)
    return StepCost(_pipelined(stages, links, setup), batch, list(merged.values()), "decode", depth, batch)


# A prefill is priced one ubatch at a time (each at its own depth): at most this many ubatches in one
# prediction, about a minute's work for a large model (131,072 ubatches: 64M tokens at n_ubatch 512,
# or a 128K prompt at n_ubatch 1). Past it a prompt would take hours to price, not to refuse. The same
# bound holds for a decode step under layer split, whose batch is priced a ubatch of streams at a time.
MAX_PREFILL_UBATCHES = 1 << 17


def _check_ubatches(n: int, ub: int, step: str = "prefill") -> int:
    """The number of ubatches of `ub` tokens in a prefill of `n` (or a layer-split decode step of `n`
    streams, `step` "decode"); a ValueError past MAX_PREFILL_UBATCHES."""
    n_ub = -(-n // ub)
    if n_ub > MAX_PREFILL_UBATCHES and step == "decode":
        raise ValueError(f"a decode step of {n:,} streams under layer split is {n_ub:,} ubatches of {ub:,}, each "
                         f"priced on its own: more than the {MAX_PREFILL_UBATCHES:,} one prediction prices (at most "
                         f"{MAX_PREFILL_UBATCHES * ub:,} streams at this ubatch); price fewer streams or a larger ubatch")
    if n_ub > MAX_PREFILL_UBATCHES:
        raise ValueError(f"a prefill of {n:,} tokens is {n_ub:,} ubatches of {ub:,}, each priced on its own: more than "
                         f"the {MAX_PREFILL_UBATCHES:,} one prediction prices (at most {MAX_PREFILL_UBATCHES * ub:,} "
                         "tokens at this ubatch); price a shorter prompt (`--n-prompt N`: N tokens at each depth) "
                         "or a larger ubatch")
    return n_ub


def prefill(setup: Setup, n_tokens: int, depth: int = 0) -> StepCost:
    """Ingest a chunk of `n_tokens` on top of `depth` cached tokens (one stream), in ubatches of
    the runtime's n_ubatch; logits for the last token only. Under layer split the ubatches
    pipeline through the cards (llama.cpp's pipeline parallelism)."""
    setup = _setup(setup)
    n = _check_int("n_tokens", n_tokens, 1)
    depth = _check_int("depth", depth, 0)
    ub = setup.n_ubatch
    n_ub = _check_ubatches(n, ub)
    cfg = setup.model
    merged, stages, links = {}, [], []
    for u in range(n_ub):
        T = min(ub, n - u * ub)
        card_s, link, costs = _pass(setup, T, _prefill_work(cfg, depth + u * ub, T), 1 if u == n_ub - 1 else 0)
        stages.append(card_s)
        links.append(link)
        _merge_into(merged, costs)
    if setup.split == "layer":
        seconds = _pipelined(stages, links, setup)
    else:
        seconds = sum(_sequential_seconds(setup, s, l) for s, l in zip(stages, links))
    return StepCost(seconds, n, list(merged.values()), "prefill", depth, 1)


def _sum_attn(parts) -> _Attn:
    """The attention work of several sequences' query segments in one pass (their sums)."""
    return _Attn(sum(a.n_q for a in parts), sum(a.keys for a in parts), sum(a.read for a in parts),
                 sum(a.expanded for a in parts), True)


def prefill_batch(setup: Setup, n_tokens: int, streams: int, depth: int = 0) -> StepCost:
    """Ingest `streams` independent prompts of `n_tokens` tokens each, every one on top of `depth`
    cached tokens of its own sequence, submitted as one batch (llama-batched-bench's PP phase, a
    server prefilling several prompts at once). The sequences are laid one after the other, as
    llama-batched-bench adds them (tools/batched-bench/batched-bench.cpp: for each sequence j, its
    positions 0 .. PP-1), and cut into ubatches of the runtime's n_ubatch: each ubatch reads the
    weights once for all its tokens (so short prompts share the weight reads: B = 4 prompts of 512
    tokens are one 2048-token ubatch), and each sequence's queries attend to its own cache only
    (the attention work of a ubatch is the sum over the sequence segments it holds). Logits for
    each sequence's last token. Under layer split the ubatches pipeline through the cards.
    `streams` = 1 is prefill()."""
    setup = _setup(setup)
    n = _check_int("n_tokens", n_tokens, 1)
    B = _check_int("streams", streams, 1)
    depth = _check_int("depth", depth, 0)
    ub = setup.n_ubatch
    cfg = setup.model
    w = cfg.sliding_window if cfg.windowed_layers else None
    total = n * B
    _check_ubatches(total, ub)
    merged, stages, links = {}, [], []
    start = 0
    while start < total:
        T = min(ub, total - start)
        full, win, top, outs = [], [], [], 0
        pos = start
        while pos < start + T:
            j, p = divmod(pos, n)                 # sequence j, its position p (before `depth`)
            seg = min(n - p, start + T - pos)
            full.append(_prefill_attn(depth + p, seg, None))
            if w:
                win.append(_prefill_attn(depth + p, seg, w, cfg.window_chunked))
            if cfg.index_topk:
                top.append(_topk_attn(cfg, depth + p, seg, True))
            outs += 1 if p + seg == n else 0
            pos += seg
        work = _Works(_sum_attn(full), _sum_attn(win) if w else None, len(full), _sum_attn(top) if top else None)
        card_s, link, costs = _pass(setup, T, work, outs)
        stages.append(card_s)
        links.append(link)
        _merge_into(merged, costs)
        start += T
    if setup.split == "layer":
        seconds = _pipelined(stages, links, setup)
    else:
        seconds = sum(_sequential_seconds(setup, st, lk) for st, lk in zip(stages, links))
    return StepCost(seconds, total, list(merged.values()), "prefill", depth, B)


def _merge(costs):
    return list(_merge_into({}, costs).values())


def _merge_into(out: dict, costs) -> dict:
    """Add OpCosts `costs` into `out` ({(name, card): OpCost}, summed in order): a prefill merges each
    ubatch's as it goes, so its memory does not grow with the prompt."""
    for o in costs:
        k = (o.name, o.card)
        if k in out:
            m = out[k]
            m.count += o.count
            m.flops += o.flops
            m.bytes += o.bytes
            m.seconds += o.seconds
            m.compute_s += o.compute_s
            m.memory_s += o.memory_s
            m.launch_s += o.launch_s
        else:   # a copy (the fields as they are: dataclasses.replace is 5x slower, and _merge runs per step)
            out[k] = OpCost(o.name, o.card, o.count, o.flops, o.bytes, o.seconds, o.compute_s, o.memory_s, o.launch_s)
    return out


def ttft(setup: Setup, prompt_len: int) -> float:
    """Time to first token for a prompt of `prompt_len` tokens from an empty cache."""
    return prefill(setup, prompt_len, 0).seconds


def closed_loop_tpot(setup: Setup, prompt_len: int, gen_len: int, streams: int) -> float:
    """Mean time per output token (seconds) of a serving benchmark's closed loop: `streams` requests in
    flight (vLLM's `bench serve` / SGLang's `bench_serving` with --max-concurrency), each a prompt of
    `prompt_len` then `gen_len` tokens, the next request sent when one finishes. In steady state every
    slot starts a new request once per `gen_len` steps, and its prompt's prefill runs beside the
    others' decode steps (vLLM's chunked prefill puts the chunks in the decode steps' token budget;
    SGLang runs a prefill batch between them): each step costs one decode step of `streams` streams
    (mean over the depths prompt .. prompt + gen - 1) plus streams / gen_len of one prompt's prefill,
    priced apart (the replay's upper bound: a runtime fusing both into one pass shares the weight
    reads). TPOT = (finish - first token) / (output - 1) per request, as both benchmarks count it."""
    prompt_len = vocab.check_int("prompt_len", prompt_len, 0)
    gen_len = vocab.check_int("gen_len", gen_len, 1)
    streams = vocab.check_int("streams", streams, 1)
    step = _mean_decode_seconds(setup, prompt_len, gen_len, streams)
    if streams > 1 and prompt_len > 0:
        step += streams / gen_len * ttft(setup, prompt_len)
    return step


# ---- memory ------------------------------------------------------------------------------------------
@dataclass
class CardMemory:
    weights: int
    kv: int
    workspace: int
    overhead: int
    capacity: int

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.workspace + self.overhead

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity

    @property
    def free(self) -> int:
        return self.capacity - self.total


@dataclass
class Memory:
    cards: list
    context: int
    batch: int
    host: Any = None        # HostMemory with an offload: what lives in system memory

    @property
    def fits(self) -> bool:
        return all(c.fits for c in self.cards) and (self.host is None or self.host.fits)

    def _sum(self, k):
        return sum(getattr(c, k) for c in self.cards)

    weights = property(lambda self: self._sum("weights"))
    kv = property(lambda self: self._sum("kv"))
    workspace = property(lambda self: self._sum("workspace"))
    overhead = property(lambda self: self._sum("overhead"))
    total = property(lambda self: self._sum("total"))
    capacity = property(lambda self: self._sum("capacity"))


def _compute_ubatch(setup: Setup, batch: int, context: int | None) -> int:
    """The ubatch a runtime sizes its compute buffer for: its n_ubatch; on a llama.cpp-family runtime model at
    most the context of all `batch` streams, as llama.cpp caps it (src/llama-context.cpp, llama_context's
    constructor: n_batch = min(n_ctx, n_batch) for a causal model, n_ubatch = min(n_batch, n_ubatch); the
    graph is reserved for min(n_ctx, n_ubatch) tokens). `context` None: uncapped (a bound from above)."""
    ub = setup.n_ubatch
    if context is not None and _ggml_graph(setup):
        ub = min(ub, max(1, context * batch))
    return ub


def _memory_terms(setup: Setup, batch: int, context: int | None = None):
    """Per card: (weight bytes, workspace bytes, overhead bytes, KV bytes per token of context of
    the full-attention layers, expansion-buffer bytes per token of context, KV bytes per token
    of the windowed layers, which stop growing at the window, recurrent-state bytes of a hybrid's
    linear layers, which do not grow). `context`: the workspace's ubatch capped at it (_compute_ubatch)."""
    cfg = setup.model
    N = setup.n_cards
    wb = _layer_weight_bytes(cfg, setup.weights)
    if cfg.tie_word_embeddings:
        head_w = wb["final_norm"] + wb["embed"]      # the table is the lm_head: it lives on the card
    else:
        head_w = wb["final_norm"] + wb["lm_head"] + (0 if setup.runtime.embeddings_on_host else wb["embed"])
    # Gemma 4's per-layer inputs: the projection on the card; the table, like the token embeddings, in host
    # memory where the runtime keeps its input layer there (llama.cpp: per_layer_token_embd is an input tensor)
    head_w += wb["ple_proj"] + (0 if setup.runtime.embeddings_on_host else wb["ple_table"])
    cache, win = frozenset(cfg.cache_layers), frozenset(cfg.windowed_layers)
    kv_of = _cache_rows_of(setup)

    def kv_sum(layers, windowed):
        """Cache bytes per token of the caching layers among `layers`, windowed or global."""
        return sum(kv_of[i] for i in layers if i in cache and (i in win) == windowed)
    D = cfg.hidden_size
    # activations of one ubatch (f32): residual, normed input, q/k/v (or MLA's q, latent query,
    # latent and output), FFN intermediate (gate, up) and router scores; plus the logits buffer
    # (llama.cpp: vocab x outputs, one output per stream)
    # (the widest dense MLP where widths differ per layer: DeciLM, Gemma 3n)
    F_act = max(max((cfg.layer_intermediate(i) for i in cfg.dense_layers), default=0) if cfg.layer_intermediates
                else cfg.intermediate_size if cfg.n_dense_layers else 0,
                cfg.n_experts_per_tok * cfg.moe_intermediate_size + cfg.shared_expert_intermediate_size)
    if cfg.attention == "mla":
        qkv = cfg.n_heads * (cfg.head_dim + cfg.kv_lora_rank + cfg.v_head_dim) + cfg.kv_lora_rank + cfg.qk_rope_head_dim
    else:
        qkv = cfg.n_heads * cfg.head_dim + cfg.n_kv_heads * (cfg.head_dim + cfg.v_head_dim) + cfg.n_heads * cfg.v_head_dim
    act = ACT_BYTES * max(_compute_ubatch(setup, batch, context), batch) * (3 * D + qkv + 2 * F_act + cfg.n_routed_experts)
    logits = ACT_BYTES * cfg.vocab_size * batch
    # the runtime's own reserve, and the share of the card it leaves unused (vLLM's
    # --gpu-memory-utilization: weights, activations and the KV pool within 0.9 of the card by default;
    # SGLang's reserve by the card's memory, runtime.reserve_for)
    overhead = int((setup.runtime.overhead_gib_per_card + reserve_for(setup.runtime, setup.gpu)) * GIB
                   + (1.0 - setup.runtime.memory_fraction) * setup.gpu.memory_gib * GIB)
    tp = setup.split == "tensor"
    out = []
    per_layer = _layer_total(cfg, setup.weights)
    lin = frozenset(cfg.linear_layers)
    # one stream's recurrent state per linear layer (configs.recurrent_state_bytes, f32)
    st_layer = cfg.recurrent_state_bytes() / len(lin) if lin else 0.0
    if setup.offload is not None:   # one card: what is not in host memory (_host_memory_terms)
        pl = _placement(setup)
        card = [i for i in range(cfg.n_layers) if pl.on_card[i]]
        w = sum(per_layer[i] - pl.host_experts[i] for i in card) + (head_w if pl.output_on_card else 0)
        n_lin = sum(1 for i in card if i in lin)
        ws = act + (logits if pl.output_on_card else 0)
        return [(int(w), ws, overhead, batch * kv_sum(card, False), 0.0, batch * kv_sum(card, True),
                 batch * st_layer * n_lin)]
    for (nd, nm, has_head), rng in zip(_layer_counts(setup), _layer_ranges(setup)):
        n_lin = sum(1 for i in rng if i in lin)
        st = st_layer * n_lin / (N if tp else 1)   # under tensor split each card holds its heads' states
        if tp:
            w = (sum(per_layer) + head_w) / N
            ks = _kv_share(setup)
            if cfg.attention != "mla" and ks > 1.0 / N:
                # KV heads replicated past their count: each card holds its heads' whole k / v projections
                kv_w = sum(v for k, v in wb["attn"].items() if k.split(".")[0] in ("k_proj", "v_proj"))
                w += cfg.n_kv_layers * kv_w * (ks - 1.0 / N)
            # an MLA latent is on every card; GQA's KV heads split, at least one per card (_kv_share)
            kv_tok = kv_sum(rng, False) * ks
            kv_win = kv_sum(rng, True) * ks
        else:
            w = sum(per_layer[i] for i in rng) + (head_w if has_head else 0)
            kv_tok = kv_sum(rng, False)            # the global layers' cache grows with the context
            kv_win = kv_sum(rng, True)
        expand_tok = 0.0
        if cfg.attention == "mla" and setup.mla_strategy == "naive":
            # the expanded f16 K and V of one layer at a time, for every stream
            expand_tok = 2 * cfg.n_heads * (cfg.head_dim + cfg.v_head_dim) / (N if tp else 1)
        ws = act + (logits if (has_head or tp) else 0)
        out.append((int(w), ws, overhead, batch * kv_tok, batch * expand_tok, batch * kv_win, batch * st))
    return out


def _cache_rows_of(setup: Setup) -> dict:
    """{caching layer: cache bytes one token takes there under this setup}: its rows in the cache format, a
    DSA layer's indexer key (the last row, configs.kv_rows_per_layer) as the runtime stores it
    (_index_row_bytes)."""
    cfg = setup.model
    idx = _index_row_bytes(setup) if cfg.attention == "mla" and cfg.indexer_layers else 0
    return _cache_rows(cfg, setup.kv_fmt.name, idx)


@functools.lru_cache(maxsize=256)
def _cache_rows(cfg: configs.ModelConfig, kv: str, index_row: float) -> dict:
    """{layer: cache bytes per token} over the caching layers (_cache_rows_of; `index_row`: a DSA layer's
    indexer key bytes as the runtime stores it). Memoised: memory() asks for every layer at every point."""
    kvf = vocab.kv_format(kv)
    out = {}
    for i in cfg.cache_layers:
        rows = cfg.kv_rows_per_layer(i)
        if cfg.attention == "mla" and cfg.has_indexer(i):
            out[i] = sum(kvf.nbytes(r) for r in rows[:-1]) + index_row
        else:
            out[i] = sum(kvf.nbytes(r) for r in rows)
    return out


def _host_memory_terms(setup: Setup, batch: int) -> tuple:
    """With an offload: (weight bytes in host memory, KV bytes per token of context of the host's
    full-attention layers, of its windowed layers, its linear layers' recurrent-state bytes)."""
    cfg = setup.model
    pl = _placement(setup)
    t = _weight_table(cfg, setup.weights)
    total = sum(_layer_total(cfg, setup.weights)) + t["embed"] + t["lm_head"] + t["final_norm"] + t["ple_table"] \
        + t["ple_proj"]
    card_w = _memory_terms(setup, batch)[0][0]
    host_layers = [i for i in range(cfg.n_layers) if not pl.on_card[i]]
    win, lin = frozenset(cfg.windowed_layers), frozenset(cfg.linear_layers)
    n_lin = sum(1 for i in host_layers if i in lin)
    rows = _cache_rows_of(setup)     # (its keys: the caching layers)
    kv = lambda windowed: sum(rows[i] for i in host_layers if i in rows and (i in win) == windowed)
    st = cfg.recurrent_state_bytes() / len(lin) * n_lin if lin else 0.0
    return (total - card_w, batch * kv(False), batch * kv(True), batch * st)


@dataclass
class HostMemory:
    weights: int
    kv: int
    capacity: int          # 0: unknown (not checked)

    @property
    def total(self) -> int:
        return self.weights + self.kv

    @property
    def fits(self) -> bool:
        return not self.capacity or self.total <= self.capacity


def memory(setup: Setup, context: int, batch: int = 1) -> Memory:
    """Bytes per card holding `batch` streams of `context` tokens each: weights, KV cache (a
    windowed layer: `window_cells` per stream, llama.cpp's window + n_ubatch, padded), workspace
    (activations of one ubatch, the logits buffer, naive MLA's expanded K/V) and the runtime's
    fixed overhead, against the card's capacity."""
    setup = _setup(setup)
    context = _check_int("context", context, 0)
    batch = _check_int("batch", batch, 1)
    cfg = setup.model
    cap = setup.gpu.memory_bytes
    # a windowed layer holds the runtime's SWA cells (window + n_ubatch, padded), not the window alone
    cells = window_cells(context, cfg.sliding_window, setup.n_ubatch) if cfg.windowed_layers else 0
    cards = [CardMemory(weights=w, kv=math.ceil(kv * context + kvw * cells + st), workspace=math.ceil(ws + ex * context),
                        overhead=ov, capacity=cap)
             for w, ws, ov, kv, ex, kvw, st in _memory_terms(setup, batch, context)]
    if setup.offload is None:
        return Memory(cards, context, batch)
    hw, hkv, hkvw, hst = _host_memory_terms(setup, batch)
    return Memory(cards, context, batch,
                  HostMemory(hw, math.ceil(hkv * context + hkvw * cells + hst), setup.host.memory_bytes))


def max_context(setup: Setup, batch: int = 1) -> int:
    """The largest context (tokens per stream) whose memory fits on every card; 0 if even an
    empty cache does not fit. Not capped at the model's max_position_embeddings."""
    setup = _setup(setup)
    batch = _check_int("batch", batch, 1)
    cap = setup.gpu.memory_bytes
    best = math.inf
    # a windowed layer's cells stop growing at the window + n_ubatch (window_cells)
    full = (window_cells(2 ** 62, setup.model.sliding_window, setup.n_ubatch)
            if setup.model.windowed_layers else 0)

    def longest(room, grow, kvw):
        if room < kvw * full:      # short of the full ring: at most one pad of cells above the context
            return max(0, (room - kvw * SWA_PAD) // (grow + kvw)) if grow + kvw else math.inf
        return (room - kvw * full) // grow if grow else math.inf

    for w, ws, ov, kv, ex, kvw, st in _memory_terms(setup, batch):
        room = cap - (w + math.ceil(ws) + ov + math.ceil(st))
        if room < 0:
            # (the workspace at the full ubatch; llama.cpp caps it at the context, _compute_ubatch: a shorter
            # context may still fit, which the search below finds)
            best = 0
            break
        best = min(best, longest(room, kv + ex, kvw))
    if setup.offload is not None and setup.host.memory_bytes:
        hw, hkv, hkvw, hst = _host_memory_terms(setup, batch)
        room = setup.host.memory_bytes - hw - math.ceil(hst)
        if room < 0:
            return 0
        best = min(best, longest(room, hkv, hkvw))
    if math.isinf(best):
        return 2 ** 62
    n = int(best)
    # the estimate is a lower bound up to rounding: step it up while the next context fits
    # (bisection; the padding of the windowed cells is a step function), then down on rounding
    if n < 2 ** 62 and memory(setup, n + 1, batch).fits:
        lo, hi = n + 1, n + 2
        while memory(setup, hi, batch).fits:
            lo, hi = hi, hi + 2 * (hi - n)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if memory(setup, mid, batch).fits else (lo, mid)
        n = lo
    while n > 0 and not memory(setup, n, batch).fits:
        n -= 1
    return n


def spill_context(setup: Setup, batch: int = 1) -> int:
    """The context beyond which the model no longer fits on one card of the rig (where a second
    card becomes necessary)."""
    one = setup.replace(rig=Rig(setup.gpu, 1), split="none")
    return max_context(one, batch)


def max_batch(setup: Setup, context: int) -> int:
    """How many streams of `context` tokens fit at once."""
    lo, hi = 0, 1
    while memory(setup, context, hi).fits:
        lo, hi = hi, hi * 2
        if hi > 1 << 20:
            return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if memory(setup, context, mid).fits:
            lo = mid
        else:
            hi = mid
    return lo


# ---- serving -----------------------------------------------------------------------------------------
def serve(setup: Setup, concurrency: int, context: int) -> dict:
    """Steady-state continuous batching: `concurrency` streams generating at `context` tokens each.
    Streams beyond what the KV memory holds wait (they do not run), so the aggregate comes from
    the streams that fit. Each step is `decode(setup, context, streams)`: under layer split the
    cards pipeline only a batch longer than one ubatch, as llama.cpp does (the trace replay times
    its steps with the same `decode`). Prefill of arriving requests is not
    included (see decide() for whole requests)."""
    setup = _setup(setup)
    C = _check_int("concurrency", concurrency, 1)
    context = _check_int("context", context, 0)
    fit = min(C, max_batch(setup, context))
    res = {"concurrency": C, "context": context, "streams": fit, "fits": fit == C, "setup": setup.label}
    if fit == 0:
        mem = memory(setup, context, 1)
        why = "weights" if memory(setup, 0, 1).fits is False else "kv_memory"
        res.update(aggregate_tok_s=0.0, per_stream_tok_s=0.0, limited_by=f"memory ({why})",
                   step_seconds=math.inf, memory_per_card=[c.total for c in mem.cards])
        return res
    step = decode(setup, context, fit)
    agg = step.tok_s
    ub = setup.n_ubatch
    schedule = "one batch" if fit <= ub or setup.split != "layer" else f"{-(-fit // ub)} pipelined ubatches"
    res.update(aggregate_tok_s=agg, per_stream_tok_s=agg / fit, step_seconds=fit / agg,
               limited_by="kv_memory" if fit < C else step.dominant, schedule=schedule,
               memory_per_card=[c.total for c in memory(setup, context, fit).cards])
    return res


# ---- crossovers and decisions ------------------------------------------------------------------------
def crossover(xs: Sequence[float], ya: Sequence[float], yb: Sequence[float]) -> list[float]:
    """Every x where ya - yb changes sign, linearly interpolated between samples; an x where the
    curves meet exactly and then part to opposite sides is reported once. Empty when they never
    cross; curves that touch without crossing give nothing."""
    xs, ya, yb = list(map(float, xs)), list(map(float, ya)), list(map(float, yb))
    if not (len(xs) == len(ya) == len(yb)):
        raise ValueError(f"`xs`, `ya`, `yb` must have equal lengths, got {len(xs)}, {len(ya)}, {len(yb)}")
    if any(b <= a for a, b in zip(xs, xs[1:])):
        raise ValueError("`xs` must be strictly increasing")
    if any(not math.isfinite(v) for v in xs + ya + yb):
        raise ValueError("`xs`, `ya`, `yb` must be finite")
    d = [a - b for a, b in zip(ya, yb)]
    out = []
    prev = None          # index of the last nonzero difference
    for i, v in enumerate(d):
        if v == 0:
            continue
        if prev is not None and (d[prev] > 0) != (v > 0):
            if i - prev == 1:
                x0, x1 = xs[prev], xs[i]
                out.append(x0 + (x1 - x0) * d[prev] / (d[prev] - v))
            else:
                # they met at one or more samples in between: report the middle of that stretch
                out.append((xs[prev + 1] + xs[i - 1]) / 2)
        prev = i
    return out


Workload = vocab.Workload


def _mean_decode_seconds(setup, d0, n_out, batch, points=5) -> float:
    """Mean decode step seconds over depths d0 .. d0 + n_out - 1 (trapezoid over a few depths;
    decode time is close to linear in depth). _mean_decode adds the middle step's StepCost."""
    if n_out == 1:
        return decode(setup, d0, batch).seconds
    ds = [d0 + round(i * (n_out - 1) / (points - 1)) for i in range(points)]
    ts = [decode(setup, d, batch).seconds for d in ds]
    area = sum((ds[i + 1] - ds[i]) * (ts[i] + ts[i + 1]) / 2 for i in range(points - 1))
    return area / (ds[-1] - ds[0])


def _mean_decode(setup, d0, n_out, batch, points=5):
    """(mean decode step seconds over depths d0 .. d0 + n_out - 1 (_mean_decode_seconds), the middle
    depth's StepCost)."""
    mid = d0 if n_out == 1 else d0 + round((points // 2) * (n_out - 1) / (points - 1))
    return _mean_decode_seconds(setup, d0, n_out, batch, points), decode(setup, mid, batch)


def _share(step: StepCost, top=2) -> str:
    t = step.terms()
    tot = sum(t.values()) or 1.0
    return ", ".join(f"{k} {100 * v / tot:.0f}%" for k, v in list(t.items())[:top])


def decide(workload, setups: Sequence[Setup]) -> list[dict]:
    """Rank setups for a workload (prompt, output, concurrency[, objective]) by latency (one
    stream) or throughput (several), setups that fit in memory first. Each row gives the figures
    and the reasons: what does not fit, and which terms dominate prefill and decode."""
    if isinstance(workload, dict):
        workload = vocab.Workload(**workload)
    if not isinstance(workload, Workload):
        raise TypeError(f"`workload` must be a dict or a Workload, got {type(workload).__name__}")
    if not setups:
        raise ValueError("`setups` is empty")
    P, O, C = workload.prompt, workload.output, workload.concurrency
    rows = []
    for s in setups:
        s = _setup(s)
        ctx = P + O
        mem = memory(s, ctx, C)
        fit = min(C, max_batch(s, ctx))
        reasons = []
        row = {"setup": s.label, "model": s.model.name, "rig": s.rig.name, "split": s.split,
               "weights": s.weights, "kv": s.kv, "runtime": s.runtime.name,
               "memory_per_card_gib": [round(c.total / GIB, 2) for c in mem.cards],
               "capacity_gib": round(s.gpu.memory_bytes / GIB, 2), "fits": fit >= 1, "streams_at_once": fit}
        if fit == 0:
            worst = max(mem.cards, key=lambda c: c.total - c.capacity)
            reasons.append(f"does not fit: needs {worst.total / GIB:.1f} GiB on a card of {worst.capacity / GIB:.1f} GiB "
                           f"(weights {worst.weights / GIB:.1f}, KV {worst.kv / GIB:.1f})")
            row.update(ttft_s=math.inf, tpot_s=math.inf, e2e_s=math.inf, throughput_tok_s=0.0, reasons=reasons)
            rows.append(row)
            continue
        pf = prefill(s, P, 0)
        t_first = pf.seconds
        tpot, mid = _mean_decode(s, P, O, 1)
        e2e = t_first + (O - 1) * tpot       # the prefill step already produced the first token
        # C requests: each prefilled in turn, then decoded together in waves of what fits
        waves = -(-C // fit)
        tpot_c, mid_c = _mean_decode(s, P, O, fit) if fit > 1 else (tpot, mid)
        total = waves * (fit * t_first + O * tpot_c)
        thr = C * O / total
        reasons.append(f"prefill {P}: {pf.tokens / pf.seconds:.0f} tok/s, mostly {_share(pf)}")
        reasons.append(f"decode at {P + O // 2}: {1 / tpot:.1f} tok/s, mostly {_share(mid)}")
        if fit < C:
            reasons.append(f"KV memory holds {fit} of {C} streams at {ctx} tokens: {waves} waves")
        if C > 1:
            reasons.append(f"{fit} streams together: {fit / tpot_c:.0f} tok/s while decoding, {_share(mid_c, 1)}")
        row.update(ttft_s=t_first, tpot_s=tpot, e2e_s=e2e, throughput_tok_s=thr, reasons=reasons)
        rows.append(row)
    key = (lambda r: (not r["fits"], r["e2e_s"])) if workload.objective == "latency" \
        else (lambda r: (not r["fits"], -r["throughput_tok_s"]))
    rows.sort(key=key)
    for i, r in enumerate(rows):
        r["rank"] = i + 1
        r["objective"] = workload.objective
    return rows
