"""Real weights from model files: an HF safetensors folder or a GGUF file -> (ModelConfig, state
dict of HF-named arrays) -> glmbench.Model.

    m = load_model("path/to/hf-folder" | "model.gguf", kv="f16", max_context=4096)
    cfg, sd = state_dict("model.gguf")        # HF names; experts stacked [E, F, D]

Formats used as stored (Model(weights="stored")): f32, f16, bf16 (uint16 bits) and ggml q8_0 /
q4_0 blocks (a GGUF's bytes wrapped as core.quant.QTensor, memory-mapped, the same block layout:
f16 scale then 32 int8, or f16 scale then 16 bytes of nibbles, low nibbles the first 16 weights),
the K-quants q2_K / q3_K / q4_K / q5_K / q6_K (the Q*_K_S/M/L mixes' types) and iq4_xs
(csrc/quant_k.h), iq4_nl and mxfp4 (gpt-oss's experts; csrc/quant_iq.h). Every other GGUF type (the
other IQ types, q4_1, q5_0, q5_1, TQ, NVFP4...) is dequantized to f32 with
gguf.quants.dequantize, and a warning names the types and tensors. `weights=` a format converts
every matrix to it instead.

GGUF layout undone here (see models/gguf_file.py): the llama architecture's permuted q/k rows (and granite's,
granitemoe's: conversion/granite.py on LlamaModel; smollm3's and arcee's: conversion/llama.py SmolLM3Model,
ArceeModel);
phi3's fused attn_qkv and ffn_up split into q/k/v and gate/up rows (gguf_file.RowSlice); the first
Mixtral files' per-expert ffn_gate.E / ffn_up.E / ffn_down.E stacked (gguf_file.PerExpert);
apertus's xIELU parameters, metadata arrays (xielu.alpha_p / alpha_n / beta / eps), as HF's mlp.act_fn tensors;
deepseek2's split attn_k_b / attn_v_b: kept split as stored (core.attention.KVBSplit) when either is
quantized in an executable block format (q5_0 as its exact q8_0 twin), else joined back into kv_b_proj
(bf16/f16 when both are stored so, else f32: q4_1/q5_1 and the other types dequantized); gemma/gemma2/gemma3 norm
weights stored as 1 + w (nemotron's LayerNorm1P weights too); chatglm's fused attn_qkv (and its bias) and ffn_up split as phi3's;
the Mamba-2 hybrids' (nemotron_h, nemotron_h_moe, granitehybrid) ssm_a = -exp(A_log), A / D as [H, 1], the
gated norm as [groups, d_inner / groups], conv1d squeezed (_linear_tensor), and their q / k rows permuted as
llama's; the Gated DeltaNet hybrids' (qwen3next, qwen35, qwen35moe) A = -exp(A_log), 1 + w norms and squeezed
conv1d undone, Qwen3-Next's in_proj_qkvz rows gathered back into HF's per-key-head order (_qkvz_rows), Qwen3.5's
value heads left in the converter's tiled order (ModelConfig.linear_v_tiled: the forward pass maps them). A split GGUF is given by its first
part (gguf_file.read loads every part); llama3 rope scaling stored as rope_freqs.weight is read
into the config by gguf_file.hf_config (rope_type "freq_factors").

Errors (ValueError naming the file and the tensor): a missing tensor, a shape that disagrees with
the config, an unknown type, a safetensors header whose offsets disagree with its dtypes and
shapes or run past the end of the file, a weight that is not finite (NaN / inf: a float value, with
its flat index; a block's f16 scale d / dmin, or an mxfp4 block whose values overflow float32, with the
block's index in the file's tensor; a type dequantized on load, by its dequantized values). Each tensor the
model takes is checked once here, at load (vectorised, core.quant.nonfinite: ~10-20 GB/s over float
tensors, the scale fields only of block ones); the state dict says which arrays it checked
(`finite_checked`), so Model does not check them again.
"""
from __future__ import annotations

import glob
import json
import os
import struct
import warnings

import numpy as np

from glmbench.core.attention import KVBSplit
from glmbench.core.quant import QTensor, f16_scales_nonfinite, gguf_format, nonfinite
from glmbench.models import configs, gguf_file
from glmbench.models.model import STORED, Model

__all__ = ["state_dict", "load_model", "is_checkpoint", "read_safetensors", "CheckpointError"]

EXACT_GGUF = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"}  # run as stored


class CheckpointError(ValueError):
    """A model file whose weights cannot be loaded; the message names the file and the tensor."""


def is_checkpoint(src) -> bool:
    """True for a GGUF file or a folder holding *.safetensors (real weights to load)."""
    if not isinstance(src, (str, os.PathLike)):
        return False
    p = os.fspath(src)
    return (os.path.isfile(p) and gguf_file.is_gguf(p)) or (os.path.isdir(p) and bool(glob.glob(os.path.join(p, "*.safetensors"))))


def load_model(path, *, weights: str = STORED, **kw) -> Model:
    """glmbench.Model with the real weights of `path` (a GGUF file, or an HF folder with config.json
    and *.safetensors). `kw` goes to Model (kv, max_context, mla_strategy...)."""
    cfg, sd = state_dict(path)
    return Model(cfg, sd, weights=weights, **kw)


class Weights(dict):
    """A checkpoint's state dict: {HF name: array or QTensor}, and `finite_checked` {id: array} of the arrays
    the loader found finite (Model checks the others: the ones a caller put in or a transform made)."""
    finite_checked: dict = {}


def _checked(sd: dict) -> Weights:
    out = Weights(sd)
    out.finite_checked = {id(v): v for v in sd.values()}
    return out


def state_dict(path):
    """(ModelConfig, {HF name: array or QTensor}) of a GGUF file or an HF safetensors folder; every
    weight checked finite (else a CheckpointError naming the file, the tensor and where in it)."""
    p = os.fspath(path)
    if os.path.isfile(p) and gguf_file.is_gguf(p):
        return _gguf_state_dict(p)
    if os.path.isdir(p):
        cfg = configs.load(p)
        origin: dict = {}   # id(array) -> (its file, its name there)
        sd = _safetensors_folder(p, origin)
        if cfg.wrapper:     # a multimodal checkpoint: its text model's tensors by their text names, not its towers
            names = {k: gguf_file.text_model_name(k) for k in sd}
            # (its text model under a prefix of its own: only those and lm_head; else, Qwen2-VL's first files with
            # the text model's own names beside `visual`, all but the towers)
            wrapped = any(t != k and t is not None for k, t in names.items())
            sd = {t: sd[k] for k, t in names.items()
                  if t is not None and (not wrapped or t != k or k.startswith("lm_head."))}
        if cfg.model_type == "exaone":   # (the released checkpoint's own names, as transformers renames them)
            sd = {gguf_file.exaone_name(k): v for k, v in sd.items()}
        for v in sd.values():   # the tensors the model takes (not a multimodal checkpoint's towers)
            bad = nonfinite(v)
            if bad:
                f, k = origin[id(v)]
                raise CheckpointError(f"{f}: tensor {k!r} holds {bad}; a weight must be finite")
        return cfg, _checked(sd)
    if os.path.isfile(p) and p.endswith(".safetensors"):
        raise CheckpointError(f"{p}: give the folder holding config.json and the .safetensors files, not one file")
    raise CheckpointError(f"{p}: neither a GGUF file nor a folder with config.json and *.safetensors")


# ---- safetensors ----------------------------------------------------------------------------------
_ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64}
_ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
             "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}


def read_safetensors(path) -> dict:
    """{name: memory-mapped array} of one .safetensors file (BF16 as uint16 bits). The header is
    first checked by the safetensors package (safe_open), then every entry's dtype, shape and
    offsets against each other and the file's size."""
    p = os.fspath(path)
    try:
        from safetensors import safe_open
        with safe_open(p, framework="numpy") as f:
            names = list(f.keys())
    except Exception as e:  # safetensors raises SafetensorError / OSError with its own message
        raise CheckpointError(f"{p}: not a readable safetensors file: {e}") from None
    size = os.path.getsize(p)
    with open(p, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
    base, out = 8 + n, {}
    for name in names:
        e = header[name]
        dt, shape, (a, b) = e.get("dtype"), tuple(e.get("shape", ())), e.get("data_offsets", (0, 0))
        if dt not in _ST_DTYPES:
            raise CheckpointError(f"{p}: tensor {name!r} has dtype {dt!r}; supported: {', '.join(_ST_DTYPES)}")
        want = int(np.prod(shape, dtype=np.int64)) * _ST_SIZES[dt]
        if b - a != want:
            raise CheckpointError(f"{p}: tensor {name!r} header field 'data_offsets' = [{a}, {b}] spans {b - a} "
                                  f"bytes but dtype {dt} x shape {list(shape)} needs {want}")
        if base + b > size:
            raise CheckpointError(f"{p}: tensor {name!r} header field 'data_offsets' ends at byte {base + b}, past "
                                  f"the end of the file ({size} bytes)")
        if want == 0:
            out[name] = np.zeros(shape, _ST_DTYPES[dt])
            continue
        out[name] = np.memmap(p, dtype=_ST_DTYPES[dt], mode="r", offset=base + a, shape=shape)
    return out


def _safetensors_folder(folder: str, origin: dict | None = None) -> dict:
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if not files:
        raise CheckpointError(f"{folder}: no *.safetensors files")
    files = gguf_file.safetensors_files(folder)     # (the index's files; not Mistral's consolidated copy)
    sd: dict = {}
    origin = {} if origin is None else origin   # id(array) -> (its file, its name there)
    for f in files:
        for k, v in read_safetensors(f).items():
            if k in sd:
                raise CheckpointError(f"{f}: tensor {k!r} also appears in another file of {folder}")
            sd[k] = v
            origin[id(v)] = (f, k)
    return sd


# ---- GGUF ------------------------------------------------------------------------------------------
def _gguf_state_dict(path: str):
    cfg = configs.load_gguf(path)
    g = gguf_file.read(path)
    shapes = cfg.tensor_shapes()
    where = gguf_file.expected_gguf_tensors(g, shapes, cfg.n_layers, expert_rows=True)
    for names in where.values():   # every file tensor the model takes, checked finite once, as stored
        for n in names:
            for part in getattr(n, "names", (n,)):
                _check_stored(g, g.tensors[part])
    converted: dict = {}
    sd = {}
    arch = g.architecture
    for hf, names in where.items():
        if isinstance(names, gguf_file.PerExpert):   # old Mixtral files: one tensor per expert, stacked here
            parts = [_tensor(g, g.tensors[n], converted) for n in names]
            fmts = {p.fmt if isinstance(p, QTensor) else None for p in parts}
            if len(fmts) == 1 and None not in fmts:
                sd[hf] = QTensor(np.stack([np.asarray(p.data) for p in parts]), fmts.pop(), (len(parts),) + tuple(parts[0].shape))
            elif fmts == {None} and len({np.asarray(p).dtype for p in parts}) == 1:
                sd[hf] = np.stack([np.asarray(p) for p in parts])
            else:   # experts stored in different types: one float32 stack
                sd[hf] = np.stack([_dequant(g, n, converted) for n in names])
            continue
        if len(names) == 2:  # deepseek2: kv_b_proj stored as attn_k_b [H, R, Dn] + attn_v_b [H, Dv, R]
            types = {g.tensors[n].type_name for n in names}
            if types & _QUANT_KVB and types <= _QUANT_KVB | {"F32", "F16", "BF16"}:
                # quantized: kept split, as stored (the decode products read them so: KVBSplit)
                sd[hf] = KVBSplit(*(_kvb_part(g, g.tensors[n]) for n in names))
                continue
            if len(types) == 1 and types <= {"BF16", "F16"}:   # 16-bit: joined as stored (exact, half f32's bytes)
                kb, vb = (np.asarray(g.tensor_data(n)) for n in names)
            else:
                kb, vb = (_dequant(g, n, converted) for n in names)
            kb = kb.transpose(0, 2, 1)
            H = kb.shape[0]
            sd[hf] = np.ascontiguousarray(np.concatenate([kb, vb], axis=1).reshape(H * (kb.shape[1] + vb.shape[1]), -1))
            continue
        if hf.endswith(".linear_attn.in_proj_qkvz.weight"):   # Qwen3-Next: HF's per-key-head row order back
            sd[hf] = _qkvz_rows(g, cfg, names[0], converted)
            continue
        t = g.tensors[names[0]]
        a = _tensor(g, t, converted)
        if isinstance(names[0], gguf_file.RowSlice):   # phi3's fused attn_qkv / ffn_up: this tensor's rows
            a = a[names[0].start:names[0].stop]
        elif isinstance(names[0], gguf_file.ExpertRows):   # Gemma 4's ffn_gate_up_exps [E, 2F, D]: every expert's rows
            a = _expert_rows(a, names[0].start, names[0].stop)
        if hf.split(".", 3)[-1].startswith("linear_attn."):   # a linear layer's tensors in the converter's form
            a = _linear_tensor(g, hf, names[0], a, shapes[hf], converted)
        elif arch in _GDN_RUN and hf.endswith("norm.weight"):
            a = _dequant(g, names[0], converted) - np.float32(1)   # the converter stored Qwen3_5RMSNorm's 1 + w
        if arch in _PERMUTED and hf.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")):
            n_head = cfg.n_heads if hf.endswith("q_proj.weight") else cfg.n_kv_heads
            a = _unpermute(a, n_head)
        if arch in ("gemma", "gemma2", "gemma3", "nemotron") and hf.endswith("norm.weight"):
            # the converter stored GemmaRMSNorm's / Gemma3RMSNorm's 1 + w (conversion/gemma.py GemmaModel, Gemma2Model;
            # Nemotron's LayerNorm1P weight + 1: conversion/nemotron.py)
            a = _dequant(g, names[0], converted) - np.float32(1)
        sd[hf] = a
    if arch == "apertus":   # the xIELU parameters, metadata in the file, as HF's tensors (1-element; 0-d buffers)
        for name, values in gguf_file.xielu_params(g, cfg.n_layers).items():
            for i, v in enumerate(values):
                hf = f"model.layers.{i}.mlp.act_fn.{name}"
                sd[hf] = np.full(shapes[hf], v, np.float32)
    if converted:
        lst = "; ".join(f"{k}: {len(v)} tensor(s), e.g. {v[0]!r}" for k, v in sorted(converted.items()))
        warnings.warn(f"{path}: ggml types run dequantized to f32 (not executed as stored): {lst}", stacklevel=3)
    return cfg, _checked(sd)


def _nonfinite_error(g, t, bad: str) -> CheckpointError:
    return CheckpointError(f"{t.file or g.path}: tensor {t.name!r} ({t.type_name}) holds {bad}; a weight must be "
                           f"finite")


def _check_stored(g, t) -> None:
    """A file tensor's values as stored: a float tensor's every value, a block format's scale fields (the
    formats glmbench runs as stored, and q5_0 / q4_1 / q5_1, whose f16 d (and m) lead each block). Another
    type is checked by its dequantized values (_dequant)."""
    data = g.tensor_data(t.name)
    if t.type_name in ("F32", "F16", "BF16"):
        bad = nonfinite(data)
    elif gguf_format(t.type_name):
        bad = nonfinite(QTensor(data, gguf_format(t.type_name), t.shape))
    elif t.type_name in _LEADING_SCALES:
        bb, fields = _LEADING_SCALES[t.type_name]
        bad = f16_scales_nonfinite(np.asarray(data).reshape(-1, bb), fields, t.shape[-1] // 32)
    else:
        return
    if bad:
        raise _nonfinite_error(g, t, bad)


# 32-value block types dequantized on load whose f16 scale fields lead the block: (block bytes, (name, byte offset)
# of each f16 field, as quant.SCALE_FIELDS)
_LEADING_SCALES = {"Q5_0": (22, (("d", 0),)), "Q4_1": (20, (("d", 0), ("m", 2))), "Q5_1": (24, (("d", 0), ("m", 2)))}


def _expert_rows(a, start: int, stop: int):
    """Rows [start, stop) of every expert of a stacked [E, rows, D] tensor (gguf_file.ExpertRows), as stored:
    a block-format tensor's block rows (whole rows: exact), a float one's values."""
    if isinstance(a, QTensor):
        return QTensor(np.ascontiguousarray(a.data[:, start:stop]), a.fmt, (a.shape[0], stop - start) + a.shape[2:])
    return np.ascontiguousarray(np.asarray(a)[:, start:stop])


# architectures whose q / k rows the converter permuted (LlamaModel.permute; conversion/granite.py's
# GraniteHybridModel and NemotronHModel keep undo_permute = True, though they apply no rope)
_PERMUTED = ("llama", "granitehybrid", "nemotron_h", "nemotron_h_moe", "mistral3", "granite", "granitemoe", "smollm3",
             "deci", "arcee")


# the Gated DeltaNet hybrids' GGUFs, whose norms the converter stores as 1 + w (conversion/qwen.py Qwen3NextModel);
# Qwen3.5's linear layers' value heads in the converter's tiled order (_LinearAttentionVReorderBase), which
# ModelConfig.linear_v_tiled tells the forward pass
_GDN_RUN = ("qwen3next", "qwen35", "qwen35moe")


def _qkvz_rows(g, cfg, name, converted):
    """Qwen3-Next's in_proj_qkvz [2 Hk dk + 2 Hv dv, D] in HF's order (per key head: its q, k, then the
    v and z rows of its Hv / Hk value heads) from the converter's regrouped rows [all q | all k | all v |
    all z] (attn_qkv + attn_gate, or the first files' fused ssm_in: gguf_file.Joined / _qkvz_split): a
    row gather. Both parts in one type run as stored (their block rows gathered); parts of different
    types are dequantized to f32 first."""
    Hk, Hv, dk, dv = cfg.linear_k_heads, cfg.linear_v_heads, cfg.linear_k_dim, cfg.linear_v_dim
    r = Hv // Hk
    names = list(getattr(name, "names", (name,)))
    parts = [g.tensors[n] for n in names]
    types = {t.type_name for t in parts}
    if len(types) == 1 and (types <= {"F32", "F16", "BF16"} or gguf_format(parts[0].type_name)):
        rows = np.concatenate([np.asarray(g.tensor_data(n)) for n in names])
        fmt = gguf_format(parts[0].type_name) if types - {"F32", "F16", "BF16"} else None
    else:
        rows, fmt = np.concatenate([_dequant(g, n, converted) for n in names]), None
        converted.setdefault("+".join(sorted(types)) + " (in_proj_qkvz's parts in different types)", []).append(names[0])
    q0, k0, v0 = 0, Hk * dk, 2 * Hk * dk
    z0 = v0 + Hv * dv
    idx = np.concatenate([np.concatenate([np.arange(q0 + h * dk, q0 + (h + 1) * dk),
                                          np.arange(k0 + h * dk, k0 + (h + 1) * dk),
                                          np.arange(v0 + h * r * dv, v0 + (h + 1) * r * dv),
                                          np.arange(z0 + h * r * dv, z0 + (h + 1) * r * dv)]) for h in range(Hk)])
    if rows.shape[0] != idx.size:
        raise CheckpointError(f"{g.path}: tensor(s) {names} hold {rows.shape[0]} rows; Qwen3-Next's in_proj_qkvz "
                              f"needs {idx.size} (2 x {Hk} x {dk} + 2 x {Hv} x {dv})")
    out = np.ascontiguousarray(rows[idx])
    return QTensor(out, fmt, (idx.size, cfg.hidden_size)) if fmt else out


def _linear_tensor(g, hf: str, name: str, a, shape: tuple, converted):
    """A linear layer's tensor back in HF's form (conversion/mamba.py Mamba2Model.modify_tensors and
    conversion/qwen.py Qwen3NextModel's undone): ssm_a holds A = -exp(A_log) (A_log = log(-A)); Mamba-2's
    A and D stored [H, 1] and its gated norm [groups, d_inner / groups], conv1d squeezed to [C, K]:
    reshaped to the config's shapes. Matrices pass as stored (a Qwen3.5 file's value heads stay in its
    tiled order)."""
    if hf.endswith(".linear_attn.A_log"):
        A = _dequant(g, name, converted).reshape(shape).astype(np.float64)
        if not (A < 0).all():
            raise CheckpointError(f"{g.path}: tensor {name!r} (A = -exp(A_log)) holds a value >= 0; "
                                  f"A_log cannot be recovered")
        return np.log(-A).astype(np.float32)
    if hf.endswith((".linear_attn.D", ".linear_attn.dt_bias", ".linear_attn.norm.weight", ".linear_attn.conv1d.weight",
                    ".linear_attn.conv1d.bias")):
        return np.ascontiguousarray(_dequant(g, name, converted).reshape(shape))
    return a


# attn_k_b / attn_v_b types kept split and read as stored (q5_0 as its exact q8_0 twin, _q5_0_as_q8_0)
_QUANT_KVB = {"Q8_0", "Q4_0", "Q5_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "IQ4_NL", "MXFP4"}


def _kvb_part(g, t):
    """attn_k_b or attn_v_b as held in a KVBSplit: float arrays and the executable block formats as
    stored; q5_0 converted to q8_0 exactly (the same f16 scale per 32 values, q - 16 in [-16, 15] as int8)."""
    if t.type_name == "Q5_0":
        return QTensor(_q5_0_as_q8_0(np.asarray(g.tensor_data(t.name))), "q8_0", t.shape)
    a = g.tensor_data(t.name)
    return QTensor(a, gguf_format(t.type_name), t.shape) if gguf_format(t.type_name) else np.asarray(a)


def _q5_0_as_q8_0(data: np.ndarray) -> np.ndarray:
    """ggml q5_0 blocks (f16 d, 32 high bits qh, 16 bytes of nibbles; value j = d * (q_j - 16), the low
    nibbles the first 16 values) -> q8_0 blocks (f16 d, 32 int8) holding the same values exactly."""
    shape = data.shape
    b = np.ascontiguousarray(data).reshape(-1, 22)
    qh = b[:, 2:6].copy().view("<u4")                                   # [n, 1]
    hi = ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)  # fifth bit of value j
    qs = b[:, 6:22]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1) | (hi << 4)
    out = np.concatenate([b[:, 0:2], (q.astype(np.int16) - 16).astype(np.int8).view(np.uint8)], axis=1)
    return out.reshape(shape[:-1] + (shape[-1] // 22 * 34,))


def _tensor(g, t, converted):
    data = g.tensor_data(t.name)
    if t.type_name in ("F32", "F16", "BF16"):
        return data
    if gguf_format(t.type_name):  # q8_0/q4_0, q2_K..q6_K, iq4_xs, iq4_nl, mxfp4: as stored
        return QTensor(data, gguf_format(t.type_name), t.shape)
    return _dequant(g, t.name, converted)


def _dequant(g, name, converted) -> np.ndarray:
    t = g.tensors[name]
    data = g.tensor_data(name)
    if t.type_name == "F32":
        return np.asarray(data)
    if t.type_name == "F16":
        return data.astype(np.float32)
    if t.type_name == "BF16":
        return (data.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if not gguf_format(t.type_name):
        converted.setdefault(t.type_name, []).append(name)
    import gguf
    try:
        out = gguf.quants.dequantize(np.asarray(data), gguf.GGMLQuantizationType(t.ggml_type))
    except NotImplementedError:
        raise CheckpointError(f"{g.path}: tensor {name!r} has ggml type {t.type_name}, which the gguf package "
                              f"cannot dequantize") from None
    out = np.ascontiguousarray(out.reshape(t.shape), dtype=np.float32)
    if t.type_name not in ("F32", "F16", "BF16") and not gguf_format(t.type_name) and \
            t.type_name not in _LEADING_SCALES:
        bad = nonfinite(out)   # (a type whose scales _check_stored does not read: its values)
        if bad:
            raise _nonfinite_error(g, t, f"{bad} once dequantized")
    return out


def _unpermute(a, n_head):
    if isinstance(a, QTensor):
        return QTensor(np.ascontiguousarray(gguf_file.un_permute(a.data, n_head)), a.fmt, a.shape)
    return np.ascontiguousarray(gguf_file.un_permute(np.asarray(a), n_head))
