"""Kernel paths: which kernel a runtime runs for an op, and the efficiency it reaches.

The cost model (costmodel.py) counts the FLOPs and bytes of every op of a step; this module says
which of a runtime's kernels does the work, because the same matmul runs at very different rates
depending on the path: llama.cpp's CUDA backend multiplies a quantized matrix by one token with a
dequantizing GEMV (MMVQ), by a few hundred tokens either with its int8 MMQ kernels or by
dequantizing the weights to f16 and calling cuBLAS, and the choice depends on the batch size, the
weight type, the GPU generation and the build. Every op therefore carries

    path    the kernel path (PATHS below, each with its source in docs/COSTMODEL.md)
    family  the weight-type family of its weights (FAMILIES: f16, q8_0, q4_0, k, iq, mxfp4, ...)

and a runtime profile's `kernels` table gives efficiencies per path and, where the data says
they differ, per path and family:

    "mmq.k:compute": 0.21         # MMQ on K-quants reaches 21% of the int8 tensor peak
    "cublas:compute": 0.55        # f16 cuBLAS GEMM
    "mmvq:memory": 0.78           # every quantized GEMV streams weights at 78% of the bandwidth

Lookup order for an op: "<path>.<family>:<which>", then "<path>:<which>", then the profile's
per-class efficiency (compute_efficiency / memory_efficiency[class]). `typical` and `ideal` have
no kernel table, so their numbers are the per-class physics as before.

Kernel parameters that are not efficiencies live in the same table under their own names:

    "card.<gpu>:compute|memory"  a factor on every efficiency on that card (card_factor)
    "arch.<arch>:compute|memory" a factor on every efficiency on cards of that architecture (arch_factor)
    "mmid:layer_us"     fixed microseconds per MoE layer and pass at the reference clock: the routing,
                        sorting and gathering kernels around mul_mat_id that the structural kernel
                        count does not see (clock_scale)
    "mmid:expert_us"    beside it: fixed microseconds per routed expert a pass's tokens select, per MoE
                        layer, at the reference clock (experts_touched: k for one token, nearly all
                        E for a prefill ubatch). ggml-cuda's mul_mat_id before device-side expert ids
                        copied the ids to the host, synchronized, and looped on the host over the
                        experts that have rows, launching each one's gather, activation quantization,
                        matmul and scatter in turn (ggml-cuda.cu ggml_cuda_mul_mat_id; ik_llama.cpp
                        kept that loop, its -fmoe fusing only the up and gate products): a few
                        launches per expert, without CUDA graphs, so a time per expert, not per
                        layer (DeepSeek-V2-Lite selects 6 of 64 per token, GLM-4.7-Flash 4 of 64).
                        Mainline's MMVQ / MMQ read the ids on the device and fit ~0 here.
    "mmid:half_tokens"  MoE prefill (mul_mat_id) reaches half of its efficiency when each expert
                        gets this many tokens of a ubatch (few tokens per expert leave the GPU
                        idle: one small GEMM per expert). 0 (the default): no such loss.
    "mmq:flop_per_sm_clk"  MMQ's (and mul_mat_id's) work per SM and clock cycle beside the tensor
                        cores: the tile loads through shared memory, the fragment loads (ldmatrix)
                        and the per-block scale arithmetic of a warp-level mma.sync kernel scale with
                        SMs x clock, not with the tensor peak; its time adds to the tensor time
                        (sm_ghz). 0 / absent: no such term.
    "mmvq:bytes_per_sm_clk"  the weight GEMVs' (MMVQ, the f16 GEMV, mul_mat_id's GEMV) bytes per SM
                        and clock cycle: a GEMV keeps only as many loads in flight as its resident
                        warps issue, and by Little's law a stream of in-flight bytes / latency;
                        with one row per warp that is a count per SM, so a card with much
                        bandwidth per SM (HBM: A100, H100) streams a smaller share of it than a
                        GeForce card. Its time adds to the bandwidth time (sm_ghz). 0 / absent:
                        no such term.

Two rules apply to every runtime model (not to `typical` / `ideal`) by the card's architecture:
mma_peak_factor (ggml's own tensor-core kernels issue warp-level mma.sync, which on Hopper and
data-center Blackwell reaches only part of the datasheet peak, a wgmma / tcgen05 figure) and the
SM-clock term above (sm_ghz: SMs x clock from the datasheet fp32 rate and the FP32 lanes per SM).

This module imports nothing of the cost model: it works on plain values (formats, token counts,
the GPU's peaks) so that costmodel.py can call it per op.
"""
from __future__ import annotations

import functools

import math

from glmbench import vocab

# ---- weight-type families ----------------------------------------------------------------------
# A family groups the ggml / vLLM formats whose kernels share code and rate: llama.cpp's MMQ and
# MMVQ have one template per family of block layouts (legacy 32-weight blocks, K-quant 256-weight
# super-blocks, i-quants with lookup tables), and q8_0 / mxfp4 are their own.
_FAMILY_OF = {
    "f32": "f16", "f16": "f16", "bf16": "f16", "f64": "f16",
    "q8_0": "q8_0", "q8_1": "q8_0",
    "q4_0": "q4_0", "q4_1": "q4_0", "q5_0": "q4_0", "q5_1": "q4_0", "iq4_nl": "q4_0",
    "mxfp4": "mxfp4",
    "fp8": "fp8", "awq": "int4", "gptq": "int4",
}
FAMILIES = ("f16", "q8_0", "q4_0", "k", "iq", "mxfp4", "fp8", "int4", "other")


def family(fmt_name: str) -> str:
    """The weight-type family of a format name (vocab's canonical spelling)."""
    return _family(str(fmt_name))


@functools.lru_cache(maxsize=4096)
def _family(n: str) -> str:
    low = n.lower()
    if low in _FAMILY_OF:
        return _FAMILY_OF[low]
    if low.endswith("_k") or "_k_" in low or low.startswith(("q2_k", "q3_k", "q4_k", "q5_k", "q6_k")):
        return "k"
    if low.startswith("iq"):
        return "iq"
    if low.startswith(("fp8", "w8a8")):
        return "fp8"
    if low.startswith(("awq", "gptq", "int4", "w4a16")):
        return "int4"
    return "other"


# ---- kernel paths ------------------------------------------------------------------------------
# name: (op class, what it is). Sources per path: docs/COSTMODEL.md, "Kernel paths".
PATHS = {
    "mmvq": ("matmul", "quantized weights x a few tokens: dequantizing GEMV (ggml-cuda/mmvq.cu)"),
    "mmv": ("matmul", "f16/bf16/f32 weights x a few tokens: GEMV (ggml-cuda/mmv.cu)"),
    "mmq": ("matmul", "quantized weights x a batch: int8 tensor-core (dp4a before Turing) GEMM on "
                      "q8_1-quantized activations (ggml-cuda/mmq.cuh)"),
    "dequant_cublas": ("matmul", "quantized weights x a batch: weights dequantized to an f16 buffer, then "
                                 "cuBLAS f16 GEMM (ggml-cuda.cu ggml_cuda_op_mul_mat_cublas)"),
    "cublas": ("matmul", "f16/bf16 weights x a batch: cuBLAS GEMM"),
    "mmid_vec": ("matmul", "MoE experts x a few tokens: mul_mat_id through the GEMV kernels"),
    "mmid": ("matmul", "MoE experts x a ubatch: mul_mat_id, each expert's tokens gathered and multiplied"),
    "fused_moe": ("matmul", "vLLM's fused MoE (Triton) kernel over all experts at once"),
    "fa_vec": ("attention", "flash attention, few queries (decode): fattn-vec, split over the cache"),
    "fa_mma": ("attention", "flash attention, a ubatch of queries (prefill): fattn-mma tensor-core tiles"),
    "attn_mat": ("attention", "attention without flash attention (-fa 0): K.Q and P.V as cuBLAS/GEMV "
                              "products, f32 scores written, softmaxed and read back"),
    "paged_attn": ("attention", "vLLM's paged attention (FlashAttention / FlashInfer backends)"),
    "mla_flash": ("attention", "MLA over the latent cache, fused split-K kernel (FlashMLA form)"),
    "mla_absorbed": ("attention", "MLA over the latent cache, unfused K.Q / softmax / P.V kernels"),
    "mla_naive": ("attention", "MLA with the latents expanded to per-head K/V every step"),
    "mla_expand": ("attention", "MLA prefill: latents expanded once per ubatch, then fused MHA"),
    "router": ("matmul", "the MoE router (f32)"),
    "vector": ("vector", "element-wise work: norms, rope, cache writes, dequantization"),
}

MMV_MAX_BATCH = 8            # ggml-cuda: MMVQ_MAX_BATCH_SIZE / the f16 GEMV up to 8 columns
MMQ_DP4A_MAX_BATCH = 64      # ggml-cuda mmq.cu: without int8 tensor cores MMQ only below 64 columns
QUANTIZED_PREFILL = ("mmq", "dequant_cublas")
SM_FLOP = "mmq:flop_per_sm_clk"    # MMQ's rate limit per SM and clock cycle (FLOP), beside the tensor peak
SM_BYTES = "mmvq:bytes_per_sm_clk"  # the weight GEMVs' streaming limit per SM and clock cycle (bytes)
SM_PARAMS = (SM_FLOP, SM_BYTES)
EXPERT_US = "mmid:expert_us"   # a pass's fixed time per selected expert and MoE layer
KERNEL_PARAMS = ("mmid:half_tokens", "mmid:layer_us", EXPERT_US) + SM_PARAMS


def experts_touched(n_experts: int, k: int, n_tokens: float) -> float:
    """The routed experts a pass of n_tokens tokens selects, k of n_experts each, as expected under
    uniform routing: E (1 - (1 - k/E)^T); k for one token."""
    E, k = float(n_experts or 0), float(k or 0)
    if E <= 0 or k <= 0:
        return 0.0
    if n_tokens <= 1:
        return k
    return E * (1.0 - (1.0 - min(k, E) / E) ** float(n_tokens))


# ---- per-SM limits and the legacy tensor-core instruction ----------------------------------------
def fp32_lanes(cc: str) -> int:
    """FP32 results per clock per SM for a compute capability (CUDA C++ Programming Guide,
    "Arithmetic Instructions" throughput table): 64 on 6.0, 7.x and 8.0 (P100, Volta, Turing,
    A100), 192 on Kepler, 128 elsewhere (Maxwell, GP10x, GA10x, Ada, Hopper, Blackwell)."""
    cc = str(cc or "")
    if cc in ("6.0", "7.0", "7.2", "7.5", "8.0"):
        return 64
    if cc.startswith("3."):
        return 192
    return 128


# A fixed time per kernel (a runtime model's kernel_overhead_us, mmid:layer_us, mmid:expert_us) is latency: the
# ramp-up, tail and dependent steps of small kernels that do not fill the card, counted in clock
# cycles, so on another card it scales as 1 / its boost clock. Fitted values are microseconds at
# this reference clock. Public evidence: DeepSeek-V2-Lite decode on ik_llama.cpp runs at the same
# speed on an RTX 3090 Ti (1860 MHz, 1008 GB/s) as on an RTX 4080 (2505 MHz, 717 GB/s), which
# bandwidth alone cannot explain (bench/results/public_fit_*.md, leave-one-GPU-out).
REF_CLOCK_MHZ = 2000.0


def clock_scale(gpu) -> float:
    """Factor on a fixed per-kernel time on this card: REF_CLOCK_MHZ / its boost clock (1 for a
    profile that does not give `boost_mhz`)."""
    mhz = getattr(gpu, "boost_mhz", None)
    return REF_CLOCK_MHZ / mhz if mhz else 1.0


def sm_ghz(gpu) -> float:
    """SMs x boost clock in GHz (1e9 SM-cycles per second), from the datasheet fp32 rate:
    fp32 TFLOPS x 1000 / (2 x fp32_lanes). 0 when the card gives no fp32 rate."""
    f = (getattr(gpu, "tflops", None) or {}).get("fp32", 0.0)
    return f * 1e3 / (2 * fp32_lanes(getattr(gpu, "compute_capability", ""))) if f else 0.0


# The datasheet tensor peak of Hopper (sm_90) is a wgmma figure, that of data-center Blackwell
# (sm_100) a tcgen05 one. llama.cpp's and ik_llama.cpp's own tensor-core kernels (MMQ, the
# flash-attention mma kernels, mul_mat_id through MMQ; ggml-cuda/mma.cuh) issue the warp-level
# mma.sync of Ampere's PTX on every card from Turing on; on Hopper such kernels top out at about
# 63% of the peak (HazyResearch, "GPUs Go Brrr", ThunderKittens, 2024-05-12; docs/SOURCES.md,
# "Kernel-path rules of the runtime models"). sm_100 is taken to be the same (no
# measurement known: an assumption, docs/COSTMODEL.md). cuBLAS, vLLM's Triton / FlashAttention-3
# kernels use wgmma / tcgen05 and keep the full peak.
LEGACY_MMA_PEAK = {"9": 0.63, "10": 0.63}
MMA_SYNC_PATHS = ("mmq", "mmid", "fa_mma", "mla_flash", "mla_absorbed", "mla_expand")
SM_FLOP_PATHS = ("mmq", "mmid")
SM_BYTES_PATHS = ("mmvq", "mmv", "mmid_vec")


# ggml-cuda's flash-attention mma kernel (fattn-mma-f16.cuh, the tile types of each head size)
# accumulates K.Q in f32 (T_C_KQ: float) but V.P in f16 (T_C_VKQ: half2): on cards whose f16
# tensor rate with f16 accumulation is twice the f32-accumulate one (GeForce), the V.P half of the
# work runs at the faster rate. The MLA kernel (K 576 / V 512) is the same kernel.
FA_ACC16_PATHS = ("fa_mma", "mla_flash")


def fa_acc16_share(path: str | None, rt, dk: float, dv: float) -> float:
    """The share of a flash-attention op's tensor FLOPs that accumulate in f16: V.P's, dv / (dk + dv),
    for ggml-cuda's mma kernel under a profile with `cublas_acc16` (the ggml CUDA runtime models, and
    `ideal`, which prices f16 work at the f16-accumulate peak); else 0."""
    if path not in FA_ACC16_PATHS or not getattr(rt, "cublas_acc16", False) or dk + dv <= 0:
        return 0.0
    return dv / (dk + dv)


def tensor_peak(gpu, dtype: str, acc16: float = 0.0) -> float:
    """The datasheet tensor rate (TFLOPS) of an op's dtype; an fp16 op with a share `acc16` of its
    FLOPs accumulated in f16 runs that share at the card's fp16_acc16 rate (the harmonic mix)."""
    p = gpu.tflops[dtype]
    if acc16 > 0 and dtype == "fp16" and gpu.tflops.get("fp16_acc16", 0.0) > p:
        p = 1.0 / ((1.0 - acc16) / p + acc16 / gpu.tflops["fp16_acc16"])
    return p


def mma_peak_factor(gpu, path: str | None, rt=None, family: str | None = None) -> float:
    """The share of the datasheet tensor peak a ggml mma.sync kernel path can reach on this card:
    LEGACY_MMA_PEAK by compute-capability major for MMA_SYNC_PATHS, else 1. Given the runtime `rt`:
    only a llama.cpp-family one runs ggml's kernels (ggml_runtime); vLLM-class runtimes' GEMMs and
    attention (CUTLASS scaled_mm, Triton, FlashAttention-3, FlashMLA) issue wgmma on Hopper and keep the
    full peak, except their int4 weights (`family` "int4": AWQ / GPTQ through Marlin, whose tensor core
    instruction is mma.sync too; Machete's wgmma path for GPTQ on Hopper is not told apart)."""
    if path not in MMA_SYNC_PATHS:
        return 1.0
    if rt is not None and not ggml_runtime(rt) and family != "int4":
        return 1.0
    major = str(getattr(gpu, "compute_capability", "") or "").split(".")[0]
    return LEGACY_MMA_PEAK.get(major, 1.0)


def sm_flop(table: dict, path: str | None) -> float:
    """The FLOP per SM-cycle limit of a path under a kernel table (0: none)."""
    if not table or path not in SM_FLOP_PATHS:
        return 0.0
    return table.get(SM_FLOP, 0.0)


# MMVQ's weights per thread and pass of its K loop, by weight type (ggml-cuda/mmvq.cu
# mul_mat_vec_q: a thread reads `vdr` 32-bit words of a block's quants per pass, each word holding
# 4 x QR weights, QI = QK / (4 QR); VDR_<type>_Q8_1_MMVQ and QR<type> in ggml-cuda/vecdotq.cuh and
# ggml-common.h, unchanged for these types since 2024): {type: (vdr, QR)}. Bytes per pass =
# vdr x 4 x QR x bits per weight / 8: Q4_0 16 weights, 9 bytes; Q2_K 16 weights but 5.25 bytes;
# Q6_K 8 weights, 6.6 bytes; Q8_0 8 weights, 8.5 bytes.
MMVQ_PASS = {"q4_0": (2, 2), "q4_1": (2, 2), "q5_0": (2, 2), "q5_1": (2, 2), "q8_0": (2, 1), "mxfp4": (2, 2),
             "q2_K": (1, 4), "q3_K": (1, 4), "q4_K": (2, 2), "q5_K": (2, 2), "q6_K": (1, 2),
             "iq2_xxs": (2, 4), "iq2_xs": (2, 4), "iq2_s": (2, 4), "iq3_xxs": (2, 4), "iq3_s": (2, 4),
             "iq1_s": (1, 8), "iq1_m": (1, 8), "iq4_nl": (2, 2), "iq4_xs": (4, 2)}
MMVQ_PASS_REF = "q4_0"   # the type SM_BYTES is fitted on (the scoreboard's Llama-2-7B Q4_0)


def mmvq_pass_factor(type_name: str) -> float:
    """The share of SM_BYTES a weight GEMV of this weight type streams: its bytes per thread and
    pass of MMVQ's K loop over Q4_0's, at most 1. The per-SM cap is bytes in flight over latency
    (Little's law); what a thread has in flight is one pass's loads, so a type that packs fewer
    bytes into a pass (Q2_K 0.58, Q6_K 0.73, Q3_K 0.76, Q8_0 0.94) streams proportionally less per
    SM-cycle. A type with more bytes per pass than Q4_0 keeps Q4_0's cap (1.0): nothing in the
    public data measures whether its heavier dequantization then binds instead. Unquantized and
    unknown types (the f16 GEMV, ik_llama.cpp's own IQ*_K types): 1.0."""
    name = str(type_name)
    try:
        f = vocab.weight_format(name)
    except (KeyError, ValueError):
        return 1.0
    if isinstance(f, vocab.Mix) or not getattr(f, "dequant", False) or f.name not in MMVQ_PASS:
        return 1.0

    def pass_bytes(fmt) -> float:
        vdr, qr = MMVQ_PASS[fmt.name]
        return vdr * 4 * qr * fmt.bits_per_weight / 8.0

    return min(1.0, pass_bytes(f) / pass_bytes(vocab.weight_format(MMVQ_PASS_REF)))


def sm_bytes(table: dict, path: str | None) -> float:
    """The bytes per SM-cycle limit of a weight-GEMV path under a kernel table (0: none)."""
    if not table or path not in SM_BYTES_PATHS:
        return 0.0
    return table.get(SM_BYTES, 0.0)


def _key_ok(key: str) -> bool:
    if key in KERNEL_PARAMS:
        return True
    if key.startswith(("card.", "arch.")) and key.rpartition(":")[2] in ("compute", "memory"):
        return True
    head, sep, which = key.rpartition(":")
    if not sep or which not in ("compute", "memory"):
        return False
    path, _, fam = head.partition(".")
    return path in PATHS and (not fam or fam in FAMILIES)


def check_table(t, where: str) -> dict:
    """A runtime profile's `kernels` table, checked: keys '<path>[.<family>]:compute|memory' with
    values in (0, 1], or a kernel parameter (KERNEL_PARAMS, >= 0)."""
    if not isinstance(t, dict):
        raise ValueError(f"{where}: field `kernels` must be a table of '<path>[.<family>]:compute|memory' "
                         f"efficiencies, got {t!r}")
    out = {}
    for k, v in t.items():
        if not isinstance(k, str) or not _key_ok(k):
            raise ValueError(f"{where}: field `kernels.{k}` is not '<path>[.<family>]:compute|memory' "
                             f"(paths: {', '.join(PATHS)}; families: {', '.join(FAMILIES)}) nor one of "
                             f"{', '.join(KERNEL_PARAMS)}")
        if k in KERNEL_PARAMS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e6:
                raise ValueError(f"{where}: field `kernels.{k}` must be >= 0, got {v!r}")
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ValueError(f"{where}: field `kernels.{k}` must be in (0, 1], got {v!r}")
        out[k] = float(v)
    return out


# A path that runs another path's kernels falls back to that path's entries: mul_mat_id runs the
# MMQ / MMVQ kernels on each expert's rows (ggml-cuda.cu ggml_cuda_mul_mat_id), dequantize + cuBLAS
# is a cuBLAS GEMM after the conversion.
FALLBACK = {"mmid": "mmq", "mmid_vec": "mmvq", "dequant_cublas": "cublas"}
# The same, for one runtime's attention kernel (RuntimeProfile.attention_kernel): mainline ggml-cuda
# runs MLA's fused attention (K 576 / V 512 over the latent cache) through the flash-attention MMA
# kernel of dense prefill (fattn.cu: head size 576 goes to ggml_cuda_flash_attn_ext_mma_f16, the
# fattn-mma-f16.cuh template every dense head size of a prefill ubatch runs; no vec kernel is built
# for it), so a table without an mla_flash entry of its own takes fa_mma's: what dense flash-attention
# prefill identifies holds for MLA's. ik_llama.cpp's and Vulkan's MLA kernels are their own.
KERNEL_FALLBACK = {"ggml_cuda": {"mla_flash": "fa_mma"}}


# A batched path streams the same weights as its GEMV counterpart: with a few tokens per expert
# (batched decode above MMV_MAX_BATCH) MMQ reads each touched expert once and is memory-bound like
# MMVQ. Where the kernel table has no memory efficiency of the batched path itself (its fit points
# were compute-bound: prefill ubatches cannot identify a streaming rate), the GEMV's is used.
GEMV_OF = {"mmid": "mmid_vec", "mmq": "mmvq", "dequant_cublas": "mmvq", "cublas": "mmv"}


def lookup_keys(path: str, fam: str | None, which: str, attention_kernel: str | None = None) -> list:
    """The kernel-table keys that give a path's efficiency, most specific first: the path, the
    paths it falls back to (FALLBACK, and KERNEL_FALLBACK under the runtime's `attention_kernel`),
    and for a memory efficiency then its GEMV counterpart's (GEMV_OF)."""
    extra = KERNEL_FALLBACK.get(attention_kernel)
    fallback = {**FALLBACK, **extra} if extra else FALLBACK     # (no new dict per op for the other kernels)
    keys = []
    p = path
    while p:
        if fam:
            keys.append(f"{p}.{fam}:{which}")
        keys.append(f"{p}:{which}")
        p = fallback.get(p)
    if which == "memory" and path in GEMV_OF:
        keys += [k for k in lookup_keys(GEMV_OF[path], fam, which, attention_kernel) if k not in keys]
    return keys


def efficiency(table: dict, path: str | None, fam: str | None, which: str, default: float,
               attention_kernel: str | None = None) -> float:
    """The efficiency `which` ("compute" | "memory") of a path for a family: the most specific
    entry of the kernel table (lookup_keys: the path and family, the path, then the path it falls
    back to, under the runtime's `attention_kernel`), else `default` (the profile's per-class value)."""
    if not table or not path:
        return default
    for k in lookup_keys(path, fam, which, attention_kernel):
        v = table.get(k)
        if v is not None:
            return v
    return default


def has_int8_tensor(gpu) -> bool:
    """Whether the card has int8 tensor cores (Turing and later, not the GTX 16 series): tensor
    cores (an f16 tensor peak at least 3x the fp32 one) and an int8 peak well above the fp16 one. Without
    them (Volta, GTX 16xx; profiles that leave int8 at the fp16 default) MMQ runs on dp4a and
    llama.cpp leaves batches of 64 tokens and more to cuBLAS (ggml-cuda/mmq.cu ggml_cuda_should_use_mmq)."""
    t = gpu.tflops
    # tensor cores: the f16 tensor peak (with f16 accumulation where listed) at least 3x fp32, or an
    # int8 peak above dp4a's 4x fp32 (the RTX 5090 D, its tensor rate capped to 2.8x fp32);
    # GTX 16xx run f16 at only twice fp32 and int8 as dp4a (4x fp32)
    fp32 = t.get("fp32", 1.0)
    tensor = (max(t.get("fp16", 0.0), t.get("fp16_acc16", 0.0)) >= 3 * fp32
              or t.get("int8", 0.0) > 4.5 * fp32)
    return tensor and t.get("int8", 0.0) >= 1.5 * t.get("fp16", 0.0)


def ggml_runtime(rt) -> bool:
    """A llama.cpp-family runtime model (a kernel table, not vLLM-class paged attention): its quantized
    batches run ggml's MMQ, whose rules (ggml_cuda_should_use_mmq's cuBLAS switch without int8 tensor
    cores, mmq_weight_passes) apply. vLLM and SGLang run their own GEMMs; whether a fit gave one of
    them a kernel-table entry changes none of their kernel paths."""
    return bool(rt.kernels) and rt.attention_kernel != "paged_attn"


def matmul_path(quantized: bool, fam: str, n_tokens: float, rt, gpu) -> str:
    """The path a runtime takes for weights x n_tokens columns: GEMV for a few tokens, else the
    runtime's quantized-prefill path (MMQ or dequantize + cuBLAS, per family where the profile says
    so; on a llama.cpp-family runtime model without int8 tensor cores, cuBLAS above
    MMQ_DP4A_MAX_BATCH as llama.cpp does: ggml_runtime), cuBLAS for float weights."""
    if n_tokens <= MMV_MAX_BATCH:
        return "mmvq" if quantized else "mmv"
    if not quantized:
        return "cublas"
    p = rt.prefill_paths.get(fam, rt.quantized_prefill) if rt.prefill_paths else rt.quantized_prefill
    if p == "mmq" and ggml_runtime(rt) and n_tokens >= MMQ_DP4A_MAX_BATCH and not has_int8_tensor(gpu):
        return "dequant_cublas"
    return p


# ggml-cuda's int8 paths take float32 activations only: ggml-cuda.cu ggml_cuda_mul_mat sends any
# product with `src1->type != GGML_TYPE_F32` to ggml_cuda_mul_mat_cublas before MMVQ / MMQ (which
# quantize src1 to q8_1 from f32) are considered. A product whose other operand is the f16 (or
# quantized) KV cache itself (MLA's kv_b expanding the cached latents: ik_llama.cpp's -mla 2/3
# prompt path and the naive form) therefore dequantizes the weights to f16 and runs cuBLAS,
# whatever the runtime picks for activations. ggml-vulkan multiplies quantized weights by f16
# operands in its own shaders: not affected.
INT8_PATHS = ("mmq", "mmvq")


def cache_operand_path(path: str, kv_fmt: str, runtime_name: str = "") -> str:
    """The path of a quantized-weights product whose other operand is the KV cache in `kv_fmt` on
    a CUDA runtime: dequantize + cuBLAS in place of MMQ / MMVQ unless the cache is float32."""
    if "vulkan" in str(runtime_name).lower():
        return path
    if path in INT8_PATHS and str(kv_fmt).lower() != "f32":
        return "dequant_cublas"
    return path


def card_factor(table: dict, gpu_key: str, which: str) -> float:
    """A runtime model's factor on every efficiency of one card ("card.<key>:compute|memory"): what
    several sources on that card say it reaches below the card's datasheet, beyond the kernels'
    efficiency (clocks under a power limit, memory that streams below its rated bandwidth). 1 for a
    card the fit has not seen."""
    if not table or not gpu_key:
        return 1.0
    return table.get(f"card.{gpu_key}:{which}", 1.0)


def arch_key(gpu) -> str:
    """The architecture a card's kernel rates are shared with ("Ampere", "Ada-Lovelace", ...)."""
    a = (getattr(gpu, "arch", "") or "").split("(")[0].strip().replace(" ", "-")
    return a


def arch_factor(table: dict, gpu, which: str) -> float:
    """A runtime model's factor on every efficiency of the cards of one architecture
    ("arch.<arch>:compute|memory"): its kernels' rate per datasheet peak on that generation
    (tensor-core instruction mix, shared memory, clocks under load), fitted from the other cards of
    that architecture. 1 for an architecture the fit has not seen."""
    if not table:
        return 1.0
    k = arch_key(gpu)
    return table.get(f"arch.{k}:{which}", 1.0) if k else 1.0


def moe_path(n_tokens: float, rt) -> str:
    """mul_mat_id through the GEMV (up to MMV_MAX_BATCH tokens) or over the batch; vLLM's fused MoE. A
    weight type's own, lower GEMV limit on mainline ggml-cuda: mmvq_mmid_max_batch."""
    if rt.moe_kernel == "fused_moe":
        return "fused_moe"
    return "mmid_vec" if n_tokens <= MMV_MAX_BATCH else "mmid"


# ggml-cuda/mmvq.cu get_mmvq_mmid_max_batch(type, cc) (llama.cpp PR 20905, as vendored by llama-cpp-python
# 0.3.36): the most tokens mul_mat_id runs through MMVQ over the ids, per weight type, below
# MMVQ_MAX_BATCH_SIZE (8) for some types; from one token more ggml_cuda_mul_mat_id goes on to MMQ over
# all experts (ggml_cuda_should_use_mmq). NVIDIA: Volta (cc == 7.0 exactly) and Ada Lovelace on (cc >= 8.9:
# Ada, Hopper, Blackwell) 8 for every type; Turing, Ampere and Orin (7.5 <= cc < 8.9) the turing_plus table;
# anything else (Pascal, Xavier's 7.2) the pascal_older table. Types not listed: 8.
MMVQ_MMID_MAX_TURING_PLUS = {"iq2_s": 7, "iq3_s": 6, "iq3_xxs": 7, "mxfp4": 7, "nvfp4": 8, "q2_K": 7, "q3_K": 5}
MMVQ_MMID_MAX_PASCAL_OLDER = {"iq1_s": 6, "iq1_m": 6, "iq2_s": 4, "iq2_xs": 5, "iq2_xxs": 5, "iq3_s": 4, "iq3_xxs": 4,
                              "iq4_nl": 6, "iq4_xs": 5, "mxfp4": 4, "nvfp4": 4, "q2_K": 4, "q3_K": 4, "q4_0": 6,
                              "q4_1": 6, "q4_K": 5, "q5_0": 6, "q5_1": 6, "q5_K": 5, "q6_K": 4, "q8_0": 4}


def mmvq_mmid_max_batch(type_name: str, gpu) -> int:
    """get_mmvq_mmid_max_batch(type, cc) of ggml-cuda/mmvq.cu for a ggml weight type (vocab's spelling:
    "q3_K", "mxfp4", ...) on an NVIDIA card: the most tokens mainline's mul_mat_id runs through MMVQ.
    MMV_MAX_BATCH for a card without a compute capability and for types the tables do not list."""
    cc = _cc(gpu)
    if cc <= 0 or cc == _CC_VOLTA or cc >= _CC_ADA:
        return MMV_MAX_BATCH
    table = MMVQ_MMID_MAX_TURING_PLUS if cc >= _CC_TURING else MMVQ_MMID_MAX_PASCAL_OLDER
    return table.get(str(type_name), MMV_MAX_BATCH)


def mmid_type_limits(rt) -> bool:
    """Whether a runtime model's mul_mat_id follows mmvq_mmid_max_batch: mainline ggml-cuda (cuda_runtime with
    its attention_kernel "ggml_cuda") in its MMQ era (quantized_prefill "mmq": the limits came in 2026, the
    `era=2024-cublas` builds had none). ik_llama.cpp's mul_mat_id is its own (MMVQ up to 8 tokens kept), the
    Vulkan backend's one shader dispatch."""
    return cuda_runtime(rt) and getattr(rt, "attention_kernel", "") == "ggml_cuda" and rt.quantized_prefill == "mmq"


# ---- ggml-cuda's mul_mat_id: MMQ over all experts, or the per-expert fallback --------------------
# ggml-cuda.cu ggml_cuda_mul_mat_id (llama.cpp vendored by llama-cpp-python 0.3.36) decides for the whole
# batch, on its token count ne12, never on the tokens per expert:
#   1. ne2 <= MMVQ_MAX_BATCH_SIZE (8) and quantized weights, up to get_mmvq_mmid_max_batch(type, cc) (mmvq.cu:
#      8 on Volta, Ada and Blackwell, fewer for some types on Turing / Ampere / Pascal: mmvq_mmid_max_batch):
#      MMVQ with the ids read on the device (moe_path "mmid_vec"; above a type's limit, step 2);
#   2. ggml_cuda_should_use_mmq(type, cc, ne12, n_experts) (mmq.cu): MMQ over all experts in one launch
#      (moe_path "mmid"). For NVIDIA it is true from Turing on (turing_mma_available); on a card with f16
#      tensor cores but no int8 mma (Volta, cc 7.0) only while ne12 < MMQ_DP4A_MAX_BATCH_SIZE (64); the
#      n_experts argument changes the answer only below DP4A (Pascal) and on AMD;
#   3. else the fallback: the ids are copied to the host (two stream synchronizations), the tokens sorted
#      by expert, and a host loop runs ggml_cuda_mul_mat on each expert that has rows, with that expert's
#      token count as its batch: MMVQ for up to 8 tokens (ggml_cuda_should_use_mmvq), MMQ while
#      ggml_cuda_should_use_mmq(type, cc, tokens, 0) holds (on Volta below 64 tokens), dequantize + cuBLAS
#      above (ggml_cuda_mul_mat_cublas). mul_mat_id_fallback says when, fallback_bands what each expert runs.
# matmul_path gives the dense decision (step 2 is its MMQ_DP4A_MAX_BATCH rule at the batch's tokens; an
# era or family whose batches run dequantize + cuBLAS never takes MMQ). ik_llama.cpp's mul_mat_id loops
# over the experts on the host on every path (its mmid:expert_us prices that loop), but picks each
# expert's kernel the same way; Vulkan's mul_mat_id is one shader dispatch and keeps the per-op path.


def cuda_runtime(rt) -> bool:
    """A llama.cpp-family runtime model on ggml's CUDA backend (ggml_runtime, not the Vulkan one)."""
    return ggml_runtime(rt) and "vulkan" not in str(getattr(rt, "name", "")).lower()


def mul_mat_id_fallback(quantized: bool, fam: str, n_tokens: float, rt, gpu) -> bool:
    """Whether ggml-cuda's mul_mat_id takes its per-expert fallback for a batch of n_tokens tokens (step 3
    above): a CUDA ggml runtime model, quantized experts, more than MMV_MAX_BATCH tokens, and no MMQ for
    the batch's token count (matmul_path, i.e. ggml_cuda_should_use_mmq(type, cc, ne12, n_experts))."""
    return (bool(quantized) and cuda_runtime(rt) and n_tokens > MMV_MAX_BATCH
            and matmul_path(quantized, fam, n_tokens, rt, gpu) != "mmq")


# the fallback's per-expert token counts in three bands, the kernel of each being ggml_cuda_mul_mat's for
# a batch of that many tokens: 1..8 (MMVQ), 9..63, 64 and more (MMQ or dequantize + cuBLAS by the card,
# era and family: matmul_path at the band's first count)
FALLBACK_BANDS = ((1, MMV_MAX_BATCH), (MMV_MAX_BATCH + 1, MMQ_DP4A_MAX_BATCH - 1), (MMQ_DP4A_MAX_BATCH, None))


def _binomial_head(n: int, q: float, upto: int) -> list:
    """P(X = j) for j = 0..upto, X ~ Binomial(n, q) (log space: no underflow for large n)."""
    out = []
    if q <= 0.0:
        return [1.0] + [0.0] * upto
    if q >= 1.0:
        return [1.0 if j == n else 0.0 for j in range(upto + 1)]
    lq, lp, lg = math.log(q), math.log1p(-q), math.lgamma(n + 1)
    for j in range(upto + 1):
        out.append(0.0 if j > n else math.exp(lg - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lq + (n - j) * lp))
    return out


def fallback_bands(n_tokens: int, probs) -> list:
    """[(experts, tokens), ...] per FALLBACK_BANDS: the expected number of experts whose token count of a
    batch of n_tokens falls in the band, and the tokens they hold. `probs`: [(q, count), ...], `count`
    experts each chosen by a token with probability q (uniform routing: k / E for all E; each token
    picks its experts independently of the other tokens), so an expert's count is Binomial(n_tokens, q).
    The experts over all bands are the expected distinct experts, E (1 - (1 - q)^n) uniform; the tokens
    n_tokens x sum q."""
    n = max(int(round(n_tokens)), 0)
    hi = FALLBACK_BANDS[1][1]
    out = [[0.0, 0.0] for _ in FALLBACK_BANDS]
    for q, count in probs:
        pmf = _binomial_head(n, q, hi)
        head_e, head_t = 0.0, 0.0
        for b, (lo, up) in enumerate(FALLBACK_BANDS[:-1]):
            e = sum(pmf[lo:up + 1])
            t = sum(j * pmf[j] for j in range(lo, up + 1))
            out[b][0] += count * e
            out[b][1] += count * t
            head_e, head_t = head_e + e, head_t + t
        out[-1][0] += count * max(0.0, 1.0 - pmf[0] - head_e)
        out[-1][1] += count * max(0.0, n * q - head_t)
    return [tuple(b) for b in out]


def fallback_paths(quantized: bool, fam: str, rt, gpu) -> list:
    """The kernel path of each FALLBACK_BANDS band: ggml_cuda_mul_mat's for a batch of the band's first
    token count (matmul_path: "mmvq", then "mmq" or "dequant_cublas")."""
    return [matmul_path(quantized, fam, lo, rt, gpu) for lo, _ in FALLBACK_BANDS]


MMQ_X_MAX = 128             # ggml-cuda mmq.cuh: the widest MMQ column tile (J)


def mmq_tile(n_tokens: float) -> float:
    """The column tile MMQ runs a batch of n_tokens with on NVIDIA cards: the narrowest multiple
    of 8 that holds the batch, at most MMQ_X_MAX (mmq.cu: the tile is sized against ne12, the
    batch's tokens; mmq.cuh: the narrowest J with the fewest tiles)."""
    return float(min(MMQ_X_MAX, 8 * math.ceil(max(n_tokens, 1) / 8)))


def mmq_weight_passes(n_tokens: float) -> int:
    """How many times MMQ streams a matrix's weights for a batch of n_tokens: once per column tile
    (ceil(n / MMQ_X_MAX)). mmq.cuh walks its (row tile, column tile, k-block) work with the
    k-blocks innermost and the column tiles next (the stream-k index kbc; the plain grid runs the
    row tiles of one column tile side by side), so each row tile's weights are loaded again, over
    their whole K, for every column tile; the L2 keeps them between two only where every SM's row
    tile (128 rows x K) fits it at once, which the catalog cannot tell (no L2 sizes): taken as not
    (an upper bound of the traffic; it binds only where bandwidth is low against the int8 rate,
    e.g. GB10 at 2048-token ubatches)."""
    return max(1, math.ceil(max(n_tokens, 1) / MMQ_X_MAX))


def moe_occupancy(table: dict, tokens_per_expert: float, tile: float = 0.0) -> float:
    """The share of its efficiency MoE prefill keeps with this many tokens per expert and ubatch:
    t / (t + half_tokens x tile / MMQ_X_MAX), `tile` the column tile of the batch (mmq_tile; 0:
    the widest). half_tokens is the padding of an expert's tiles at the widest tile, which every
    prefill ubatch of 128 tokens or more gets; a smaller batch (batched decode above
    MMV_MAX_BATCH) runs narrower tiles, each expert's few tokens padded to that width, not to 128.
    1 without the parameter."""
    h = table.get("mmid:half_tokens", 0.0) if table else 0.0
    if h <= 0 or tokens_per_expert <= 0:
        return 1.0
    if tile > 0:
        h *= min(tile, MMQ_X_MAX) / MMQ_X_MAX
    return tokens_per_expert / (tokens_per_expert + h)


def mla_runs(strategy: str, rt) -> str:
    """The MLA strategy a runtime runs when asked for `strategy`: the "flash" strategy is a
    flash-attention kernel, so a ggml runtime model with flash attention off (llama-bench -fa 0)
    runs MLA unfused instead: K.Q, softmax and P.V as separate products over the latent cache
    ("absorbed"; llama.cpp's deepseek2 graph without flash attention, llm_graph_context::build_attn_mha)."""
    if (strategy == "flash" and getattr(rt, "kernels", None) and not getattr(rt, "flash_attn", True)
            and getattr(rt, "attention_kernel", "default") != "paged_attn"):
        return "absorbed"
    return strategy


# Mainline ggml-cuda's flash-attention dispatch for MLA (K 576 = latent 512 + rope 64 wide, V 512:
# DeepSeek-2/3, GLM-4.7-Flash; fattn.cu, ggml_cuda_flash_attn_ext_mma_f16 case 576 and
# ..._switch_ncols1, fattn-common.cuh launch_fattn: ntiles_z_gqa = ceil(gqa_ratio / ncols2)). The
# MMA kernel puts ncols2 query heads of one KV head and ncols1 query tokens in the columns of one
# tile; a head count that the tile's ncols2 does not divide, or fewer tokens than ncols1, leaves
# columns empty, and the tile computes them anyway. GLM-4.7-Flash's 20 heads decode in tiles of 16
# or 32 (32 columns: 1.6x the work); DeepSeek's 16 or 128 fill them. The tiles of a KV head read the
# same cache side by side (stream-k splits each over the cache), so the card's memory traffic stays
# one pass: only the tensor work is padded. Compute-capability thresholds as ggml's (common.cuh):
_CC_VOLTA = 700
_CC_TURING, _CC_ADA, _CC_BLACKWELL, _CC_DGX_SPARK = 750, 890, 1200, 1210
MLA_FA_HEAD_DIM = 576


def _cc(gpu) -> int:
    """ggml's integer compute capability (8.6 -> 860); 0 when the card gives none."""
    s = str(getattr(gpu, "compute_capability", "") or "")
    try:
        major, _, minor = s.partition(".")
        return 100 * int(major) + 10 * int(minor or 0)
    except ValueError:
        return 0


def mla_fa_tile(gpu, gqa: int, n_q: int, n_kv: int) -> tuple:
    """(ncols1, ncols2): the query tokens and heads per tile of ggml-cuda's MMA kernel for MLA
    (head size 576) on this card, for `gqa` query heads per KV head, `n_q` query tokens per sequence
    and `n_kv` cached tokens (fattn.cu, as vendored by llama-cpp-python 0.3.36); None before Turing
    (no MMA kernel there)."""
    cc = _cc(gpu)
    if cc < _CC_TURING:
        return None
    if gqa == 20:               # GLM-4.7-Flash: fattn.cu's own branch per architecture
        if cc >= _CC_DGX_SPARK:
            ncols2 = 16 if n_q <= 8 else 4
        elif cc >= _CC_BLACKWELL:
            ncols2 = 16 if (n_q <= 4 and n_kv >= 65536) else 4
        elif cc >= _CC_ADA:
            ncols2 = 16 if n_q <= 4 else 4
        else:
            ncols2 = (16 if n_kv <= 16384 else 32) if n_q <= 4 else 4
    else:
        ncols2 = 16 if gqa % 16 == 0 else 4
    if ncols2 <= 8 and n_q <= 8 // ncols2:
        ncols1 = 8 // ncols2
    elif ncols2 <= 16 and n_q <= 16 // ncols2:
        ncols1 = 16 // ncols2
    elif n_q <= max(32 // ncols2, 1):
        ncols1 = max(32 // ncols2, 1)
    else:
        ncols1 = max(64 // ncols2, 1)
    return ncols1, ncols2


def mla_fa_padding(rt, gpu, head_dim: int, gqa: int, n_q: int, n_kv: int) -> float:
    """The columns ggml-cuda's MLA flash-attention tiles compute per real (head, query) column,
    >= 1 (mla_fa_tile): for a runtime model whose attention kernel is mainline ggml-cuda's
    (attention_kernel "ggml_cuda") and an MLA head of 576; else 1."""
    if getattr(rt, "attention_kernel", "default") != "ggml_cuda" or head_dim != MLA_FA_HEAD_DIM:
        return 1.0
    n_q, gqa = max(int(n_q), 1), max(int(gqa), 1)
    t = mla_fa_tile(gpu, gqa, n_q, int(n_kv))
    if t is None:
        return 1.0
    c1, c2 = t
    return (math.ceil(n_q / c1) * c1 * math.ceil(gqa / c2) * c2) / (n_q * gqa)


def attention_path(cfg_attention: str, strategy: str, prefill: bool, flash_attn: bool, rt) -> str:
    """The attention path: flash attention (vec for decode, mma for prefill) or materialized
    products without it (-fa 0); vLLM's paged attention; for MLA the strategy's kernel."""
    if cfg_attention == "mla":
        return {"naive": "mla_naive", "absorbed": "mla_absorbed", "flash": "mla_flash"}[strategy]
    if rt.attention_kernel == "paged_attn":
        return "paged_attn"
    if not flash_attn:
        return "attn_mat"
    return "fa_mma" if prefill else "fa_vec"
