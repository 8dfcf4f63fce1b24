"""Runtime models: the runtimes as users name them, with the options they set.

    from glmbench.predict import runtime
    runtime.names()                               # ['ik_llama.cpp', 'llama.cpp', 'llama.cpp-vulkan', 'vllm']
    p = runtime.load("llama.cpp", fa=1, ubatch=2048)   # a RuntimeProfile named "llama.cpp[fa=1,ubatch=2048]"
    runtime.describe("ik_llama.cpp")              # what it models, its options, its fit and error
    runtime.from_record(rec)                      # the runtime model a measured record ran on

This module owns the runtime profiles: RuntimeProfile (how a runtime uses the hardware: efficiencies
per op class, the kernel table, overheads, options), the JSON schema data/runtime/*.json and
data/calibrated/*.json follow (runtime_from_dict) and loading by name or path (load_runtime). The cost
model (glmbench.predict.costmodel) prices a step under one; it re-exports these names.

A runtime model is a runtime profile (RuntimeProfile, data/runtime/<name>.json) with a
kernel table (glmbench.predict.kernels: which kernel each op runs, how fast) fitted to published
results (glmbench.predict.jointfit, bench/bench_public_fit.py) and a list of the options its users
set: `fa` (llama-bench -fa 0|1), `ubatch` (-ub N / vLLM's max_num_batched_tokens), `mla`
(ik_llama.cpp -mla 2|3), `era` (a build range where the data shows a kernel change), `coopmat`
(Vulkan's cooperative-matrix extension), `fork` (whose Vulkan backend: mainline or ik_llama.cpp's
port). `ideal` and `typical` are physics profiles, not runtime
models: they take no options. An option a runtime does not have is one ValueError naming those it
has; a name that is no runtime is one ValueError naming those there are.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
from dataclasses import dataclass, field

from glmbench import vocab
from glmbench.predict import hardware
from glmbench.predict import kernels as kn

_RUNTIME_DIR = os.path.join(vocab.DATA_DIR, "runtime")
CLASSES = ("matmul", "attention", "vector")   # the op classes of a profile's efficiencies
MLA_STRATEGIES = vocab.MLA_STRATEGIES
# RuntimeProfile.quantized_matmul: a peak's dtype, or the faster of int8 and the f16 GEMM ("fastest")
QUANTIZED_MATMUL = hardware.DTYPES + ("fastest",)
EXPERT_ROUTING = ("uniform", "fewest")     # RuntimeProfile.expert_routing (costmodel.expected_distinct_experts)
PROMPT_SCAN = ("auto", "token", "chunked")  # RuntimeProfile.prompt_scan (costmodel._chain)


# ---- runtime profiles ------------------------------------------------------------------------------
BAND_CLASSES = ("dense", "moe", "mla")   # the model classes of a runtime model's error bands (band_class)


def band_class(cfg) -> str:
    """A model's class for a runtime model's error bands (RuntimeProfile.cv_band; the public fit's
    cv_bands): "mla" (MLA attention, whatever its MLP), "moe" (the other models with routed experts),
    else "dense"."""
    if getattr(cfg, "attention", None) == "mla":
        return "mla"
    return "moe" if getattr(cfg, "n_routed_experts", 0) else "dense"


# The largest value of a whole-number runtime option (ubatch): llama.cpp's argument parser reads -ub / -b as a C
# int (common/arg.cpp: the handler takes `int value`), so a larger one is no llama.cpp run; llama_context then caps
# n_ubatch at n_batch and n_batch at the context (src/llama-context.cpp), which the cost model's workspace follows
# (costmodel._compute_ubatch).
OPTION_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class RuntimeProfile:
    """How a runtime uses the hardware: efficiencies per op class (compute and memory, each in
    (0, 1]) and, for calibrated profiles (glmbench.predict.calibrate), what replaces the counted
    kernel launches and what the measurements say about particular kernels:

      mla_attention_efficiency  {strategy: e}: the memory efficiency of MLA attention run as that
                                strategy (replaces memory_efficiency.attention for MLA models)
      kv_attention_efficiency   {kv format: f}: a factor in (0, 1] on the attention efficiencies
                                (compute and memory) over a cache in that format (quantized-cache
                                kernels that dequantize in the inner loop run slower)
      step_overhead_us          fixed seconds per pass (a decode step or a prefill ubatch) per card
      layer_overhead_us         fixed seconds per layer per pass
      link_efficiency           the fraction of the rig's link bandwidth transfers reach

    Their defaults ({}, 0, 0, 1) leave a profile's predictions as they were without them.
    `calibration` holds what a fit recorded (sources, points, residuals, errors).

    Runtime models (data/runtime/llama.cpp.json, ...; names() and load() below) add what the
    runtime's kernels do (glmbench.predict.kernels):

      kernels            {"<path>[.<family>]:compute|memory": e, ...}: efficiencies per kernel path
                         and weight-type family (empty: the per-class efficiencies)
      quantized_prefill  "mmq" | "dequant_cublas": the path of quantized weights x a batch
      prefill_paths      {family: path}: where a family takes another path
      flash_attn         flash attention (-fa 1) or materialized attention (-fa 0)
      moe_kernel         "mmid" (llama.cpp mul_mat_id) | "fused_moe" (vLLM)
      attention_kernel   "default" | "ggml_cuda" (mainline ggml-cuda's flash-attention dispatch: its MLA
                         tiles' empty head columns, kernels.mla_fa_padding) | "paged_attn" (vLLM)
      mla_strategy       the MLA strategy the runtime runs (None: the Setup's)
      mla_prefill        "auto" (the cheaper of expand-once and the strategy) | "expand" | "strategy"
      cublas_acc16       f16 cuBLAS GEMMs at the card's f16-accumulate peak (llama.cpp: CUBLAS_COMPUTE_16F)
      kernel_overhead_us fixed microseconds per kernel of the cost model's structural count (launch and
                         tail of each kernel under the runtime's graphs) at the reference clock; on a
                         card it scales as kernels.clock_scale (latency is clock cycles)
      pipeline_overlap   the share of the layer-split prefill pipeline's overlap the runtime realizes (1: the
                         exact schedule; 0: cards one after another)
      expert_routing     "uniform": a batch of MoE tokens touches the experts uniform routing (or the
                         Setup's expert_skew) leaves distinct (expected_distinct_experts); "fewest": the
                         fewest a batch can touch, top_k (fewest_distinct_experts; `ideal`: a bound)
      prompt_scan        the dependent steps of a recurrent layer's prompt (Mamba-2's scan, the delta
                         rule): "token", one per token of a stream (llama.cpp's ssm_scan); "chunked", one
                         per chunk (SSM_CHUNK / GDN_CHUNK tokens: vLLM's and SGLang's chunked prompt
                         kernels; `ideal`: the fewest); "auto", chunked under paged attention (the
                         vLLM-class runtimes), else token (costmodel._chain)
      memory_fraction    the share of each card's memory the runtime may fill (weights, activations,
                         KV cache, its reserve): vLLM's --gpu-memory-utilization (0.9); 1 for llama.cpp
      ubatch_by_card     a larger default n_ubatch on big cards, {"n_ubatch": N, "min_memory_gib": G,
                         "except": [names]}: a card with at least G GiB whose name or key holds none
                         of `except` runs N unless the ubatch option is set (ubatch_for); vLLM's
                         server takes 8192 on such cards (70 GiB, not an A100), 2048 elsewhere; or
                         {"steps": [{"below_gib": G, "n_ubatch": N, "reserve_gib": R}, ..., {"n_ubatch": N,
                         "reserve_gib": R}]}: the first step whose `below_gib` the card's memory is under
                         (the last step: every larger card) gives the default n_ubatch and the memory the
                         runtime keeps back on each card (reserve_for; SGLang's chunked_prefill_size and
                         mem_fraction_static by the card's memory)
      options            the options a user may set ({name: {"values": {v: {field: value}}} or
                         {"field": f, "min": n}}) and `option_values` those applied (with_options)

    Their defaults leave `ideal` and `typical` as they were."""
    name: str
    compute_efficiency: dict = field(compare=False)
    memory_efficiency: dict = field(compare=False)
    launch_overhead: bool = True
    overhead_gib_per_card: float = 0.0
    n_ubatch: int = 512
    # dtype whose peak bounds quantized-weight matmuls; "fastest": the larger of the int8 peak and the
    # f16 GEMM peak (costmodel._wdtype; `ideal`: a runtime may multiply dequantized weights on the f16
    # tensor cores, which on Volta outrun its int8 dp4a)
    quantized_matmul: str = "int8"
    embeddings_on_host: bool = True
    description: str = field(default="", compare=False)
    sources: dict = field(default_factory=dict, compare=False)
    mla_attention_efficiency: dict = field(default_factory=dict, compare=False)
    kv_attention_efficiency: dict = field(default_factory=dict, compare=False)
    step_overhead_us: float = 0.0
    layer_overhead_us: float = 0.0
    link_efficiency: float = 1.0
    calibration: dict = field(default_factory=dict, compare=False)
    kernels: dict = field(default_factory=dict)
    quantized_prefill: str = "mmq"
    prefill_paths: dict = field(default_factory=dict)
    flash_attn: bool = True
    moe_kernel: str = "mmid"
    attention_kernel: str = "default"
    mla_strategy: str | None = None
    mla_prefill: str = "auto"
    cublas_acc16: bool = False
    pipeline_overlap: float = 1.0
    kernel_overhead_us: float = 0.0
    expert_routing: str = "uniform"
    prompt_scan: str = "auto"
    memory_fraction: float = 1.0
    ubatch_by_card: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict, compare=False)
    option_values: dict = field(default_factory=dict)

    def __hash__(self):
        return hash((self.name, tuple(sorted(self.compute_efficiency.items())),
                     tuple(sorted(self.memory_efficiency.items())), self.launch_overhead,
                     self.overhead_gib_per_card, self.n_ubatch, self.quantized_matmul, self.embeddings_on_host,
                     tuple(sorted(self.mla_attention_efficiency.items())),
                     tuple(sorted(self.kv_attention_efficiency.items())), self.step_overhead_us,
                     self.layer_overhead_us, self.link_efficiency, tuple(sorted(self.kernels.items())),
                     self.quantized_prefill, tuple(sorted(self.prefill_paths.items())), self.flash_attn,
                     self.moe_kernel, self.attention_kernel, self.mla_strategy, self.mla_prefill,
                     self.cublas_acc16, self.pipeline_overlap, self.kernel_overhead_us, tuple(sorted(self.option_values.items())),
                     self.expert_routing, self.prompt_scan, self.memory_fraction, tuple(sorted((k, str(v)) for k, v in self.ubatch_by_card.items()))))

    def with_options(self, **opts) -> "RuntimeProfile":
        """The profile with runtime options set as a user sets them (`fa=1`, `ubatch=2048`,
        `mla=3`, `era=...`: those the profile's `options` lists); None values are ignored. An
        option this runtime does not have, or a value it does not take, is a ValueError naming the
        runtime and what it has."""
        opts = {k: v for k, v in opts.items() if v is not None}
        if not opts:
            return self
        base = self.name.split("[", 1)[0]
        ch: dict = {}
        applied = dict(self.option_values)
        for k, v in opts.items():
            spec = self.options.get(k)
            if spec is None:
                have = ", ".join(f"--{n}" for n in self.options) or "none"
                raise ValueError(f"runtime {base!r} has no option {k!r} (its options: {have})")
            if "values" in spec:
                vals = spec["values"]
                key = str(int(v)) if isinstance(v, bool) else str(v)
                if key not in vals:
                    raise ValueError(f"runtime {base!r}: option {k!r} must be one of {', '.join(vals)}, got {v!r}")
                for f, x in vals[key].items():
                    if f == "kernels":
                        ch["kernels"] = {**ch.get("kernels", self.kernels), **x}
                    else:
                        ch[f] = x
                applied[k] = key
            else:
                lo = spec.get("min", 1)
                if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                    raise ValueError(f"runtime {base!r}: option {k!r} must be a whole number >= {lo}, got {v!r}")
                if v > OPTION_MAX:
                    raise ValueError(f"runtime {base!r}: option {k!r} must be at most {OPTION_MAX} (llama.cpp reads "
                                     f"-ub / -b as a C int; a ubatch above the context runs as the context), got {v!r}")
                ch[spec["field"]] = v
                applied[k] = str(v)
        name = base + ("[" + ",".join(f"{k}={v}" for k, v in applied.items()) + "]" if applied else "")
        return dataclasses.replace(self, name=name, option_values=applied, **ch)

    @property
    def calibrated(self) -> bool:
        """Fitted to measurements: a calibration block that rests on points (sglang's says it rests on
        none: its numbers are predicted, physics only)."""
        return bool(self.calibration) and self.calibration.get("n_points", 1) != 0

    @property
    def fitted_to_gpus(self) -> bool:
        """A runtime model fitted to the published GPU results (its calibration holds the public fit's
        bands; sglang's holds none, fitted to no point: its records carry the widest band, cv_band): its
        kernel paths and efficiencies are a GPU runtime's, meaningless on a CPU."""
        return (self.calibration or {}).get("cv_bands") is not None

    def weights_refused(self, fmt, option: str = "--runtime") -> str | None:
        """Why this runtime cannot run weights of format `fmt` (a vocab Format or Mix), or None. Only the
        runtime models say so (the physics and calibrated profiles price any format): llama.cpp and its
        Vulkan build run GGUF's ggml types (not vLLM's fp8 / AWQ / GPTQ checkpoints, nor ik_llama.cpp's own
        IQ*_K types, which mainline ggml lacks; the Vulkan model's fork=ik_llama.cpp runs the fork's);
        ik_llama.cpp runs ggml's and its own; vLLM and SGLang their own formats and GGUF files of ggml
        types (their GGUF loaders read ggml's type table, which holds none of ik_llama.cpp's). `option`: the
        option of the command that chose this runtime, named in the advice (calibrate's is --base)."""
        base = self.name.split("[")[0]
        name = getattr(fmt, "name", str(fmt))
        if name in vocab.VLLM_FORMATS and base in ("llama.cpp", "llama.cpp-vulkan", "ik_llama.cpp"):
            return (f"{name} is a vLLM checkpoint format ({', '.join(vocab.VLLM_FORMATS)}), which {base} does not "
                    f"run: use {option} vllm or sglang, or a GGUF type (q8_0, Q4_K_M, ...)")
        if name in vocab.IK_FORMATS:
            fork = self.option_values.get("fork")
            if base == "llama.cpp" or (base == "llama.cpp-vulkan" and fork != "ik_llama.cpp") or \
                    base in ("vllm", "sglang"):
                return (f"{name} is ik_llama.cpp's own type, which {base} does not run (mainline ggml has no such "
                        f"type): use {option} ik_llama.cpp, or a ggml type (IQ4_XS, Q4_K_M, ...)")
        return None

    @property
    def cv_label(self) -> str:
        """What cv_error is: a runtime model's public fit (cv_bands, loso_mape_*) "leave-one-source-out"; a profile
        `glmbench calibrate` fitted "leave-one-out" over its points, or "K-fold cross-validated" where its
        calibration says cv_folds (above 100 points, or --cv K)."""
        c = self.calibration or {}
        if c.get("cv_bands") or "loso_mape_decode" in c:
            return "leave-one-source-out"
        k = c.get("cv_folds")
        return f"{k}-fold cross-validated" if isinstance(k, int) and not isinstance(k, bool) else "leave-one-out"

    @property
    def cv_error(self):
        """The cross-validated (leave-one-out, or k-fold where `calibration` says cv_folds) mean absolute
        percentage error of a calibrated profile (a fraction),
        or None for a profile that was not fitted."""
        v = self.calibration.get("loo_mape") if self.calibration else None
        return float(v) if isinstance(v, (int, float)) else None

    def cv_band(self, test: str, cfg=None):
        """The cross-validated error (a fraction) a prediction of `test` ("tg"/"serve": decode,
        "pp": prefill) for a model `cfg` carries, or None for a profile that was not fitted.
        A runtime model fitted to the public set keeps its leave-one-source-out error per test
        and model class (`cv_bands`: "mla" with MLA attention, "moe" with routed experts, else
        "dense"; bench/bench_public_fit.py, which also widens a class to the error on the
        runtime's published points shipped but never fitted), since one runtime can be well known
        on dense models and barely on MoE or MLA ones (llama.cpp-vulkan: one MoE source; mainline
        llama.cpp: no MLA source); an MLA model takes the MLA band, else its MLP's class's; where
        neither is held the runtime's error for the test (all classes) is the band; a runtime
        model with no public point of the test at all (vLLM's prefill) takes the widest band any
        runtime model has on that test (unvalidated_band), not its other test's error; a profile
        calibrated on one user's file has one error (cv_error) for the tests it has points of; a test it
        has no point of (a file of decode points only: its prefill) was never measured, so it takes the
        widest band of the runtime models on that test (unvalidated_band), not the other test's error."""
        c = self.calibration or {}
        key = "decode" if test in ("tg", "serve", "decode") else "prefill" if test in ("pp", "prefill") else None
        if key is None:
            return self.cv_error
        if c.get("cv_bands") is None and isinstance(c.get("points"), list) and c["points"]:
            if not any(isinstance(p, dict) and ("decode" if p.get("test") in ("tg", "serve") else "prefill") == key
                       for p in c["points"]):
                band = unvalidated_band(key)
                return float(band) if isinstance(band, (int, float)) else self.cv_error
        row = (c.get("cv_bands") or {}).get(key) or {}
        band = None
        if cfg is not None:
            # an MLA model: its class's band where the fit kept one, then its MLP's (moe / dense)
            order = dict.fromkeys([band_class(cfg), "moe" if getattr(cfg, "n_routed_experts", 0) else "dense"])
            band = next((row[k] for k in order if isinstance(row.get(k), (int, float))), None)
        if not isinstance(band, (int, float)):
            band = c.get(f"loso_mape_{key}")
        if not isinstance(band, (int, float)) and c.get("cv_bands") is not None:
            # a runtime model with no public point of this test at all (vLLM's prefill): its fit says
            # nothing about it, so not its other test's error but the widest any runtime model has on it
            band = unvalidated_band(key)
        return float(band) if isinstance(band, (int, float)) else self.cv_error

    def attention_efficiency(self, cfg, strategy: str, kv: str) -> tuple:
        """(compute, memory) efficiency of attention for a model, MLA strategy and KV format."""
        ce, me = self.compute_efficiency["attention"], self.memory_efficiency["attention"]
        if cfg.attention == "mla" and strategy in self.mla_attention_efficiency:
            me = self.mla_attention_efficiency[strategy]
        f = self.kv_attention_efficiency.get(kv, 1.0)
        return ce * f, me * f

    def to_dict(self) -> dict:
        """The profile as the JSON fields runtime_from_dict reads."""
        d = {"name": self.name, "description": self.description,
             "compute_efficiency": dict(self.compute_efficiency), "memory_efficiency": dict(self.memory_efficiency),
             "launch_overhead": self.launch_overhead, "overhead_gib_per_card": self.overhead_gib_per_card,
             "n_ubatch": self.n_ubatch, "quantized_matmul": self.quantized_matmul,
             "embeddings_on_host": self.embeddings_on_host, "mla_attention_efficiency": dict(self.mla_attention_efficiency),
             "kv_attention_efficiency": dict(self.kv_attention_efficiency), "step_overhead_us": self.step_overhead_us,
             "layer_overhead_us": self.layer_overhead_us, "link_efficiency": self.link_efficiency,
             "sources": dict(self.sources)}
        if self.kernels or self.options or self.quantized_prefill != "mmq" or not self.flash_attn \
                or self.moe_kernel != "mmid" or self.attention_kernel != "default" or self.mla_strategy \
                or self.mla_prefill != "auto" or self.prefill_paths or self.cublas_acc16 or self.pipeline_overlap != 1.0 \
                or self.kernel_overhead_us:
            d.update(kernels=dict(self.kernels), quantized_prefill=self.quantized_prefill,
                     prefill_paths=dict(self.prefill_paths), flash_attn=self.flash_attn, moe_kernel=self.moe_kernel,
                     attention_kernel=self.attention_kernel, mla_strategy=self.mla_strategy,
                     mla_prefill=self.mla_prefill, cublas_acc16=self.cublas_acc16,
                     pipeline_overlap=self.pipeline_overlap, kernel_overhead_us=self.kernel_overhead_us,
                     options=self.options, option_values=dict(self.option_values))
        if self.expert_routing != "uniform":
            d["expert_routing"] = self.expert_routing
        if self.prompt_scan != "auto":
            d["prompt_scan"] = self.prompt_scan
        if self.memory_fraction != 1.0:
            d["memory_fraction"] = self.memory_fraction
        if self.ubatch_by_card:
            d["ubatch_by_card"] = dict(self.ubatch_by_card)
        if self.calibration:
            d["calibration"] = self.calibration
        return d


def list_runtimes() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(_RUNTIME_DIR) if f.endswith(".json"))


@functools.lru_cache(maxsize=None)
def unvalidated_band(key: str) -> float | None:
    """The band of a test ("decode" / "prefill") a runtime model has no published point of: the widest
    band of that test (any model class, or the pooled leave-one-source-out error) among the shipped
    runtime models fitted to the public set. Nothing bounds the untested runtime's error there better;
    the widest known one is the honest floor. None if no runtime model holds one."""
    out = []
    for n in list_runtimes():
        c = hardware._read_table(os.path.join(_RUNTIME_DIR, n + ".json")).get("calibration") or {}
        row = (c.get("cv_bands") or {}).get(key) or {}
        out += [v for k, v in row.items() if k in BAND_CLASSES and isinstance(v, (int, float))]
        if isinstance(c.get(f"loso_mape_{key}"), (int, float)):
            out.append(c[f"loso_mape_{key}"])
    return max(out) if out else None


_CALIBRATED_DIR = os.path.join(vocab.DATA_DIR, "calibrated")


def list_calibrated() -> list[str]:
    """The calibrated profiles shipped with glmbench (data/calibrated/*.json, fitted by
    `glmbench calibrate` to the measurements in data/measured/), usable by name."""
    if not os.path.isdir(_CALIBRATED_DIR):
        return []
    return sorted(f[:-5] for f in os.listdir(_CALIBRATED_DIR) if f.endswith(".json"))


@functools.lru_cache(maxsize=None)
def _shipped_calibrated(name: str) -> RuntimeProfile:
    path = os.path.join(_CALIBRATED_DIR, name + ".json")
    return runtime_from_dict(hardware._read_table(path), where=path)


def runtime_from_dict(d: dict, where: str = "runtime") -> RuntimeProfile:
    vocab.check_table(d, where, required=("name", "compute_efficiency", "memory_efficiency"),
                      known={"name", "description", "compute_efficiency", "memory_efficiency", "launch_overhead",
                             "overhead_gib_per_card", "n_ubatch", "quantized_matmul", "embeddings_on_host", "sources",
                             "mla_attention_efficiency", "kv_attention_efficiency", "step_overhead_us",
                             "layer_overhead_us", "link_efficiency", "calibration", "kernels",
                             "quantized_prefill", "prefill_paths", "flash_attn", "moe_kernel", "attention_kernel",
                             "mla_strategy", "mla_prefill", "cublas_acc16", "pipeline_overlap", "kernel_overhead_us", "options",
                             "option_values", "expert_routing", "prompt_scan", "memory_fraction", "ubatch_by_card"})
    effs = {}
    for k in ("compute_efficiency", "memory_efficiency"):
        e = d[k]
        if not isinstance(e, dict):
            raise ValueError(f"{where}: field `{k}` must be a table of {', '.join(CLASSES)}, got {e!r}")
        for c in CLASSES:
            if c not in e:
                raise ValueError(f"{where}: field `{k}.{c}` is missing")
            v = e[c]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"{where}: field `{k}.{c}` must be in (0, 1], got {v!r}")
        extra = sorted(set(e) - set(CLASSES))
        if extra:
            raise ValueError(f"{where}: field `{k}.{extra[0]}` is not an op class ({', '.join(CLASSES)})")
        effs[k] = {c: float(e[c]) for c in CLASSES}
    lo = d.get("launch_overhead", True)
    if not isinstance(lo, bool):
        raise ValueError(f"{where}: field `launch_overhead` must be true or false, got {lo!r}")
    ov = d.get("overhead_gib_per_card", 0.0)
    if isinstance(ov, bool) or not isinstance(ov, (int, float)) or not 0 <= ov < 1000:
        raise ValueError(f"{where}: field `overhead_gib_per_card` must be in [0, 1000), got {ov!r}")
    ub = d.get("n_ubatch", 512)
    if isinstance(ub, bool) or not isinstance(ub, int) or ub < 1:
        raise ValueError(f"{where}: field `n_ubatch` must be an integer >= 1, got {ub!r}")
    if ub > OPTION_MAX:
        raise ValueError(f"{where}: field `n_ubatch` must be at most {OPTION_MAX} (llama.cpp's -ub is a C int), got {ub!r}")
    qm = d.get("quantized_matmul", "int8")
    if qm not in QUANTIZED_MATMUL:
        raise ValueError(f"{where}: field `quantized_matmul` must be one of {QUANTIZED_MATMUL}, got {qm!r}")
    eh = d.get("embeddings_on_host", True)
    if not isinstance(eh, bool):
        raise ValueError(f"{where}: field `embeddings_on_host` must be true or false, got {eh!r}")
    name = d["name"]
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: field `name` must be a non-empty string, got {name!r}")

    def table(key, keys, what):
        t = d.get(key, {})
        if not isinstance(t, dict):
            raise ValueError(f"{where}: field `{key}` must be a table of {what}, got {t!r}")
        out = {}
        for k, v in t.items():
            if k not in keys:
                raise ValueError(f"{where}: field `{key}.{k}` is not one of {', '.join(keys)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"{where}: field `{key}.{k}` must be in (0, 1], got {v!r}")
            out[k] = float(v)
        return out

    mla = table("mla_attention_efficiency", MLA_STRATEGIES, "MLA strategies")
    kva = table("kv_attention_efficiency", tuple(vocab.KV_FORMATS), "KV formats")
    over = {}
    for k in ("step_overhead_us", "layer_overhead_us"):
        v = d.get(k, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e7:
            raise ValueError(f"{where}: field `{k}` must be >= 0 (microseconds), got {v!r}")
        over[k] = float(v)
    le = d.get("link_efficiency", 1.0)
    if isinstance(le, bool) or not isinstance(le, (int, float)) or not 0 < le <= 1:
        raise ValueError(f"{where}: field `link_efficiency` must be in (0, 1], got {le!r}")
    cal = d.get("calibration", {})
    if not isinstance(cal, dict):
        raise ValueError(f"{where}: field `calibration` must be a table, got {cal!r}")
    # the errors a prediction's band is read from (cv_error, cv_band): a fraction >= 0 or null (a fit of one
    # point has no leave-one-out error); a string ("2%") dropped the band, a negative one inverted it
    for k in ("mape", "loo_mape", "base_mape", "loso_mape_decode", "loso_mape_prefill"):
        v = cal.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            raise ValueError(f"{where}: field `calibration.{k}` must be a fraction >= 0 (0.05 for 5%) or null, "
                             f"got {v!r}")
    v = cal.get("cv_folds")
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 2):
        raise ValueError(f"{where}: field `calibration.cv_folds` must be a whole number >= 2 or null, got {v!r}")
    v = cal.get("points")
    if v is not None and not isinstance(v, list):
        raise ValueError(f"{where}: field `calibration.points` must be a list, got {v!r}")
    kt = kn.check_table(d.get("kernels", {}), where)

    def choice(key, allowed, default):
        v = d.get(key, default)
        if v not in allowed:
            raise ValueError(f"{where}: field `{key}` must be one of {', '.join(map(str, allowed))}, got {v!r}")
        return v
    pp = d.get("prefill_paths", {})
    if not isinstance(pp, dict) or any(f not in kn.FAMILIES or v not in kn.QUANTIZED_PREFILL for f, v in pp.items()):
        raise ValueError(f"{where}: field `prefill_paths` must map weight families ({', '.join(kn.FAMILIES)}) "
                         f"to {' or '.join(kn.QUANTIZED_PREFILL)}, got {pp!r}")
    fa = d.get("flash_attn", True)
    if not isinstance(fa, bool):
        raise ValueError(f"{where}: field `flash_attn` must be true or false, got {fa!r}")
    opts = d.get("options", {})
    if not isinstance(opts, dict) or any(not isinstance(v, dict) or not ("values" in v or "field" in v)
                                         for v in opts.values()):
        raise ValueError(f"{where}: field `options` must map option names to tables with `values` or `field`, "
                         f"got {opts!r}")
    optv = d.get("option_values", {})
    if not isinstance(optv, dict):
        raise ValueError(f"{where}: field `option_values` must be a table, got {optv!r}")
    acc = d.get("cublas_acc16", False)
    if not isinstance(acc, bool):
        raise ValueError(f"{where}: field `cublas_acc16` must be true or false, got {acc!r}")
    po = d.get("pipeline_overlap", 1.0)
    if isinstance(po, bool) or not isinstance(po, (int, float)) or not 0 <= po <= 1:
        raise ValueError(f"{where}: field `pipeline_overlap` must be in [0, 1], got {po!r}")
    ko = d.get("kernel_overhead_us", 0.0)
    if isinstance(ko, bool) or not isinstance(ko, (int, float)) or not 0 <= ko < 1e4:
        raise ValueError(f"{where}: field `kernel_overhead_us` must be >= 0 (microseconds per kernel), got {ko!r}")
    mf = d.get("memory_fraction", 1.0)
    if isinstance(mf, bool) or not isinstance(mf, (int, float)) or not 0 < mf <= 1:
        raise ValueError(f"{where}: field `memory_fraction` must be in (0, 1] (the share of each card's memory "
                         f"the runtime may use), got {mf!r}")
    ubc = d.get("ubatch_by_card", {})
    if isinstance(ubc, dict) and "steps" in ubc:
        _check_steps(ubc, where)
    elif not isinstance(ubc, dict) or (ubc and (
            set(ubc) - {"n_ubatch", "min_memory_gib", "except"} or not {"n_ubatch", "min_memory_gib"} <= set(ubc)
            or isinstance(ubc["n_ubatch"], bool) or not isinstance(ubc["n_ubatch"], int) or ubc["n_ubatch"] < 1
            or isinstance(ubc["min_memory_gib"], bool) or not isinstance(ubc["min_memory_gib"], (int, float))
            or ubc["min_memory_gib"] < 0
            or not isinstance(ubc.get("except", []), list) or not all(isinstance(x, str) for x in ubc.get("except", [])))):
        raise ValueError(f"{where}: field `ubatch_by_card` must be a table {{n_ubatch: integer >= 1, min_memory_gib: "
                         f"number >= 0, except: [card names]}}, got {ubc!r}")
    kw = dict(kernels=kt, cublas_acc16=acc, memory_fraction=float(mf), ubatch_by_card=dict(ubc), pipeline_overlap=float(po), kernel_overhead_us=float(ko), quantized_prefill=choice("quantized_prefill", kn.QUANTIZED_PREFILL, "mmq"),
              prefill_paths=dict(pp), flash_attn=fa,
              moe_kernel=choice("moe_kernel", ("mmid", "fused_moe"), "mmid"),
              attention_kernel=choice("attention_kernel", ("default", "ggml_cuda", "paged_attn"), "default"),
              mla_strategy=choice("mla_strategy", (None,) + tuple(MLA_STRATEGIES), None),
              mla_prefill=choice("mla_prefill", ("auto", "expand", "strategy"), "auto"),
              expert_routing=choice("expert_routing", EXPERT_ROUTING, "uniform"),
              prompt_scan=choice("prompt_scan", PROMPT_SCAN, "auto"),
              options=opts, option_values=dict(optv))
    return RuntimeProfile(**kw, name=name, compute_efficiency=effs["compute_efficiency"],
                          memory_efficiency=effs["memory_efficiency"], launch_overhead=lo,
                          overhead_gib_per_card=float(ov), n_ubatch=ub, quantized_matmul=qm,
                          embeddings_on_host=eh, description=str(d.get("description", "")),
                          sources=dict(d.get("sources", {})), mla_attention_efficiency=mla,
                          kv_attention_efficiency=kva, link_efficiency=float(le), calibration=dict(cal), **over)


@functools.lru_cache(maxsize=None)
def _builtin_runtime(name: str) -> RuntimeProfile:
    with open(os.path.join(_RUNTIME_DIR, name + ".json")) as f:
        return runtime_from_dict(json.load(f), where=name)


def load_runtime(src) -> RuntimeProfile:
    """"ideal" / "typical", a .json/.toml path, a dict, or a RuntimeProfile."""
    if isinstance(src, RuntimeProfile):
        return src
    if isinstance(src, dict):
        return runtime_from_dict(src)
    if isinstance(src, (str, os.PathLike)):
        s = os.fspath(src)
        if s in list_runtimes():
            return _builtin_runtime(s)
        m = re.fullmatch(r"([^\[\]]+)\[([^\[\]]*)\]", s)
        if m and m.group(1) in list_runtimes():
            # a runtime model with options, as with_options names it: "llama.cpp[fa=1,ubatch=2048]"
            opts = {}
            for part in filter(None, (x.strip() for x in m.group(2).split(","))):
                k, eq, v = part.partition("=")
                if not eq:
                    raise ValueError(f"runtime {s!r}: option {part!r} is not name=value")
                if k.strip() in opts:
                    raise ValueError(f"runtime {s!r}: option {k.strip()!r} is given twice")
                # isdecimal, not isdigit: '²' is a digit to isdigit but no number to int()
                opts[k.strip()] = int(v) if v.strip().isdecimal() and k.strip() == "ubatch" else v.strip()
            return _builtin_runtime(m.group(1)).with_options(**opts)
        if s in list_calibrated():
            return _shipped_calibrated(s)
        if s.startswith("calibrated:"):
            # a profile written by calibration; its name records where it came from
            path = s[len("calibrated:"):]
            if not os.path.isfile(path) and path in list_calibrated():
                return _shipped_calibrated(path)
            if not os.path.isfile(path):
                raise ValueError(f"calibrated runtime profile {path!r} does not exist "
                                 f"(shipped: {', '.join(list_calibrated()) or 'none'})")
            d = hardware._read_table(path)
            return runtime_from_dict({**d, "name": s} if isinstance(d, dict) else d, where=path)
        if s.endswith((".json", ".toml")):
            if not os.path.isfile(s):
                raise ValueError(f"runtime profile file {s!r} does not exist")
            return runtime_from_dict(hardware._read_table(s), where=s)
        raise ValueError(f"unknown runtime profile {s!r}; built-in: {', '.join(list_runtimes() + list_calibrated())}, "
                         f"calibrated:<file>, or a .json/.toml path")
    raise TypeError(f"`runtime` must be a name, a path, a dict or a RuntimeProfile, got {type(src).__name__}")


# ---- runtime models as users name them ------------------------------------------------------------
PHYSICS = ("ideal", "typical")


def names() -> list[str]:
    """The built-in runtime models (profiles with options; not ideal/typical)."""
    return [n for n in list_runtimes() if n not in PHYSICS and load_runtime(n).options]


def load(name: str, **options) -> RuntimeProfile:
    """A runtime model with options set (None values are ignored): load("llama.cpp", fa=0)."""
    base = str(name).split("[", 1)[0]
    if base not in list_runtimes():
        raise ValueError(f"unknown runtime {base!r}; runtime models: {', '.join(names())} "
                         f"(physics profiles: {', '.join(PHYSICS)})")
    prof = load_runtime(name)
    opts = {k: v for k, v in options.items() if v is not None}
    if opts and not prof.options:
        raise ValueError(f"runtime profile {base!r} takes no options ({', '.join('--' + k for k in opts)}); "
                         f"the runtime models that do: {', '.join(names())}")
    return prof.with_options(**opts)


def options(name: str) -> dict:
    """{option: what it does and the values it takes} of a runtime model."""
    prof = load_runtime(str(name).split("[", 1)[0])
    out = {}
    for k, spec in prof.options.items():
        vals = list(spec["values"]) if "values" in spec else [f">= {spec.get('min', 1)}"]
        out[k] = {"values": vals, "doc": spec.get("doc", "")}
    return out


def describe(name: str) -> str:
    """A few lines: what the runtime model is, its options, what its fit rests on and its error."""
    prof = load_runtime(str(name).split("[", 1)[0])
    L = [f"{prof.name}: {prof.description}"]
    for k, o in options(name).items():
        L.append(f"  --{k} {'|'.join(o['values'])}: {o['doc']}")
    c = prof.calibration or {}
    if c and c.get("n_points", 1) == 0:
        # a runtime model no published point was fitted to (sglang): physics values, the widest bands
        L.append("  fitted to no public point (" + (c.get("note") or c.get("base") or "physics values") + ")")
        for key in ("decode", "prefill"):
            if unvalidated_band(key) is not None:
                L.append(f"  {key} band: ±{100 * unvalidated_band(key):.1f}%, the widest {key} band of the fitted "
                         "runtime models (unvalidated)")
    elif c:
        L.append(f"  fitted to {c.get('n_points')} public points; in-sample MAPE {100 * (c.get('mape') or 0):.1f}%, "
                 f"leave-one-source-out {100 * (c.get('loo_mape') or 0):.1f}% (decode and prefill pooled)")
        b = c.get("cv_bands")
        for key in ("decode", "prefill") if b else ():
            cells = [f"{cls} {100 * b[key][cls]:.1f}% ({b[key]['n'][cls]} points"
                     + (f"; {b[key]['held_out'][cls]['n']} published points never fitted: "
                        f"{100 * b[key]['held_out'][cls]['mape']:.1f}%" if (b[key].get("held_out") or {}).get(cls) else "")
                     + ")" for cls in BAND_CLASSES if b[key].get(cls) is not None]
            if cells:
                L.append(f"  {key} band (leave-one-source-out, the band of its {key} records): " + ", ".join(cells))
            elif c.get(f"loso_mape_{key}") is None and unvalidated_band(key) is not None:
                L.append(f"  {key} band: no published {key} point of this runtime: its {key} records carry "
                         f"±{100 * unvalidated_band(key):.1f}%, the widest {key} band of the runtime models (unvalidated)")
    return "\n".join(L)


def from_record(r: dict) -> str | None:
    """The runtime model a measured record ran on: its `runtime_model` or `runtime` field when that
    names one (glmbench/data/measured's records say the runtime in words and the model apart), else
    llama.cpp (or llama.cpp-vulkan for a Vulkan backend) for a llama-bench / sweep-bench record."""
    for rt in (r.get("runtime_model"), r.get("runtime")):   # runtime_model: the study's records name both
        if isinstance(rt, str) and rt.split("[", 1)[0] in names():
            return rt.split("[", 1)[0]
    be = str(r.get("backends") or "").lower()
    tool = str(r.get("tool") or "").lower()
    if "vulkan" in be:
        return "llama.cpp-vulkan"
    if "ik_llama" in tool:
        return "ik_llama.cpp"
    if "llama" in tool or be in ("cuda",):
        return "llama.cpp"
    if "vllm" in tool:
        return "vllm"
    if "sglang" in tool:
        return "sglang"
    return None


def _check_steps(ubc: dict, where: str) -> None:
    """A stepped `ubatch_by_card` ({"steps": [...]}) or a ValueError saying what is wrong."""
    steps = ubc.get("steps")
    bad = (set(ubc) != {"steps"} or not isinstance(steps, list) or not steps
           or any(not isinstance(st, dict) or set(st) - {"below_gib", "n_ubatch", "reserve_gib"}
                  or isinstance(st.get("n_ubatch"), bool) or not isinstance(st.get("n_ubatch"), int) or st["n_ubatch"] < 1
                  or isinstance(st.get("reserve_gib", 0), bool) or not isinstance(st.get("reserve_gib", 0), (int, float))
                  or st.get("reserve_gib", 0) < 0 for st in steps))
    if not bad:
        lims = [st.get("below_gib") for st in steps]
        bad = (lims[-1] is not None or any(not isinstance(x, (int, float)) or isinstance(x, bool) for x in lims[:-1])
               or any(b <= a for a, b in zip(lims[:-1], lims[1:-1])))
    if bad:
        raise ValueError(f"{where}: field `ubatch_by_card.steps` must be a list of {{below_gib: GiB (rising; none on "
                         f"the last step), n_ubatch: integer >= 1, reserve_gib: GiB >= 0}}, got {ubc!r}")


def _step_for(rt: RuntimeProfile, gpu) -> dict | None:
    """The step of a stepped `ubatch_by_card` the card's memory falls in; None for another rule."""
    steps = (rt.ubatch_by_card or {}).get("steps")
    if not steps:
        return None
    mem = float(getattr(gpu, "memory_gib", 0) or 0)
    return next(st for st in steps if st.get("below_gib") is None or mem < st["below_gib"])


def reserve_for(rt: RuntimeProfile, gpu) -> float:
    """GiB the runtime keeps back on each card of this kind beyond its overhead (a stepped
    `ubatch_by_card`'s reserve_gib; 0 otherwise)."""
    st = _step_for(rt, gpu)
    return float(st.get("reserve_gib", 0.0)) if st else 0.0


def ubatch_for(rt: RuntimeProfile, gpu) -> int:
    """The n_ubatch `rt` runs on `gpu` by default: its `ubatch_by_card` size where the card has the
    memory it asks and is none of its exceptions (vLLM 0.10's EngineArgs._set_default_args_v1: the
    API server's max_num_batched_tokens 8192 on a device of >= 70 GiB whose name has no "a100",
    2048 elsewhere), or the step its memory falls in (SGLang's chunked_prefill_size), else n_ubatch;
    the ubatch option, where set, always wins."""
    rule = rt.ubatch_by_card
    if not rule or "ubatch" in rt.option_values:
        return rt.n_ubatch
    st = _step_for(rt, gpu)
    if st is not None:
        return int(st["n_ubatch"])
    names = " ".join(str(x or "") for x in (getattr(gpu, "name", ""), getattr(gpu, "key", ""))).lower()
    if float(getattr(gpu, "memory_gib", 0) or 0) >= float(rule["min_memory_gib"]) and \
            not any(x.lower() in names for x in rule.get("except", [])):
        return int(rule["n_ubatch"])
    return rt.n_ubatch


# Mainline llama.cpp's CUDA path for a quantized matrix times a batch of more than ~32 tokens (prefill):
# builds of early / mid 2024 dequantized to f16 and ran cuBLAS on tensor cores (their ggml_cuda_init
# printed CUDA_USE_TENSOR_CORES: yes); from PR 8075 (2024-06, about build 3200) int8 MMQ is the default
# (the init lines then print GGML_CUDA_FORCE_CUBLAS: no). The llama.cpp runtime model's option `era`
# (2024-cublas / mmq). A table that prints neither line: by its build number, outside the uncertain
# span around the change (before ERA_CUBLAS_BEFORE: 2024-cublas; from ERA_MMQ_FROM on: mmq)
ERA_CUBLAS_BEFORE, ERA_MMQ_FROM = 3100, 3300


def cuda_prefill_era(flags: dict, build: int | None) -> tuple[str, str] | None:
    """(era, why) of a mainline llama.cpp CUDA run from its ggml_cuda_init flags or build number;
    None when neither tells."""
    if flags.get("GGML_CUDA_FORCE_CUBLAS") == "yes" or flags.get("CUDA_USE_TENSOR_CORES") == "yes":
        k = "GGML_CUDA_FORCE_CUBLAS" if flags.get("GGML_CUDA_FORCE_CUBLAS") == "yes" else "CUDA_USE_TENSOR_CORES"
        return "2024-cublas", f"ggml_cuda_init's {k}: yes (quantized prefill: dequantize + cuBLAS)"
    if flags.get("GGML_CUDA_FORCE_CUBLAS") == "no" or flags.get("GGML_CUDA_FORCE_MMQ") == "yes":
        return "mmq", "ggml_cuda_init's GGML_CUDA_FORCE_CUBLAS: no (quantized prefill: MMQ)"
    if isinstance(build, int) and build < ERA_CUBLAS_BEFORE:
        return "2024-cublas", f"build {build}, before llama.cpp's MMQ default (PR 8075, mid-2024)"
    if isinstance(build, int) and build >= ERA_MMQ_FROM:
        return "mmq", f"build {build}, after llama.cpp's MMQ default (PR 8075, mid-2024)"
    return None


def record_era(prof: RuntimeProfile, r: dict) -> tuple[str, str] | None:
    """(era, why) a measured mainline CUDA record states for `prof`'s `era` option (cuda_prefill_era
    of its init lines or build number), where the profile takes that value; else None."""
    vals = prof.options.get("era", {}).get("values") or {}
    if not vals or not str(r.get("backend") or "CUDA").upper().startswith("CUDA"):
        return None
    got = cuda_prefill_era(r.get("cuda_flags") or {}, r.get("build_number"))
    return got if got and got[0] in vals else None


def vulkan_fork(r: dict, text: str | None = None) -> tuple[str, str] | None:
    """(fork, why) of a Vulkan record for llama.cpp-vulkan's `fork` option, or None (mainline, the
    option's default). ik_llama.cpp where its llama-bench printed the table (its own columns); where
    `text` (a sidecar's runtime line) names ik_llama.cpp and not mainline; or where the table is
    ik_llama.cpp's sweep-bench and `text` does not name mainline (sweep-bench has a mainline port
    that prints the same header)."""
    tool = str(r.get("tool") or "")
    t = (text or "").lower()
    ik_text = "ik_llama" in t
    main_text = bool(re.search(r"mainline|ggml-org|ggerganov", t))
    if tool == "llama-bench (ik_llama.cpp)":
        return "ik_llama.cpp", f"the tool is ik_llama.cpp's ({tool})"
    if ik_text and not main_text:
        return "ik_llama.cpp", "the runtime text names ik_llama.cpp"
    if "ik_llama" in tool and not main_text:
        return "ik_llama.cpp", f"the tool is ik_llama.cpp's ({tool})"
    return None


def options_from_record(prof: RuntimeProfile, r: dict) -> dict:
    """The options of a runtime model a measured record states: `flash_attn` (llama-bench -fa) as
    `fa`, `n_ubatch` as `ubatch`, mainline CUDA's quantized prefill path as `era` (its ggml_cuda_init
    lines or build number, cuda_prefill_era), ik_llama.cpp's Vulkan port as `fork` (vulkan_fork),
    and a record's own `runtime_options`; only those the profile has."""
    out = {}
    fa = r.get("flash_attn")
    if "fa" in prof.options and fa is not None and fa != "":
        if isinstance(fa, str):
            fa = fa.strip().lower() in ("1", "true", "on", "yes")
        out["fa"] = int(bool(fa))
    ub = r.get("n_ubatch")
    if "ubatch" in prof.options and isinstance(ub, int) and not isinstance(ub, bool) and ub > 0:
        out["ubatch"] = ub
    era = record_era(prof, r)     # mainline CUDA's quantized prefill path, as the paste tells it
    if era and era[0] != prof.quantized_prefill:
        out["era"] = era[0]
    fork = vulkan_fork(r) if "fork" in prof.options else None   # ik_llama.cpp's port of the Vulkan backend
    if fork and fork[0] in prof.options["fork"].get("values", {}):
        out["fork"] = fork[0]
    for k, v in (r.get("runtime_options") or {}).items():
        if k in prof.options:
            out[k] = int(v) if k == "ubatch" else v
    return out
