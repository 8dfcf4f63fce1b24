"""Write a tiny HF model as a GGUF file the way llama.cpp's convert_hf_to_gguf.py does (test helper).

The metadata keys, tensor names and layout follow the converter (llama.cpp, late 2025):
  * TextModel.set_gguf_parameters: block_count, context_length, embedding_length,
    feed_forward_length, head_count(_kv), rope.freq_base, layer_norm_rms_epsilon, key/value_length
    (when head_dim is given), expert_count / expert_used_count, vocab_size;
  * LlamaModel.modify_tensors permutes q_proj/k_proj rows (LlamaModel.permute);
  * DeepseekV2Model: num_key_value_heads written as 1 (MLA as MQA), key_length = kv_lora_rank +
    rope dims, value_length = kv_lora_rank, key_length_mla / value_length_mla = the heads' dims,
    kv_b_proj split into attn_k_b [H, R, Dn] (transposed) and attn_v_b [H, Dv, R] (split_kv_b=False:
    a file from before MLA, kv_b_proj joined as attn_kv_b, head_count_kv = heads, key_length /
    value_length the heads' dims and no *_mla keys, the form llama.cpp's deepseek2 loader takes joined),
    e_score_correction_bias -> exp_probs_b.bias, expert_gating_func 2 (sigmoid) / 1 (softmax);
  * routed experts stacked [E, F, D] as ffn_{gate,up,down}_exps;
  * every tensor's ggml dims are the reversed NumPy shape (GGUFWriter does this).
Tensor names come from gguf's TensorNameMap (the converter's map_tensor_name).
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

import gguf

T = gguf.GGMLQuantizationType


def _np(t):
    return t.detach().cpu().float().numpy() if hasattr(t, "detach") else np.asarray(t, dtype=np.float32)


def permute(w, n_head, n_head_kv=None):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute, on NumPy."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3_moe": "qwen3moe",
        "deepseek_v2": "deepseek2", "glm4_moe_lite": "deepseek2", "glm4_moe": "glm4moe"}


def hf_tensors(cfg, state_dict) -> dict:
    """HF state_dict (transformers 5.x names) -> {hf name: float32 array}, experts stacked per layer
    as `mlp.experts.{gate,up,down}_proj` [E, F, D] (what the converter writes)."""
    out = {}
    for k, v in state_dict.items():
        a = _np(v)
        if k.endswith("mlp.experts.gate_up_proj"):
            F = a.shape[1] // 2
            p = k[: -len("gate_up_proj")]
            out[p + "gate_proj"], out[p + "up_proj"] = a[:, :F], a[:, F:]
        else:
            out[k] = a
    return out


def write(path, cfg, state_dict, *, types=None, split_kv_b=True, name="tiny", extra_tensors=(), meta=None,
          split_max_tensors=0):
    """Write HF model (`cfg` a transformers config, `state_dict` its tensors) to GGUF at `path`.
    `types`: function (gguf name, shape) -> GGMLQuantizationType (default F32; 1-D tensors and the
    router always F32 as llama.cpp's quantizer keeps them). `meta`: {key: (value, GGUFValueType)}
    replacing (value None: removing) metadata keys, for files with bad or missing fields.
    `split_max_tensors`: write parts PATH-0000N-of-0000M.gguf as gguf-split does."""
    mt = cfg.model_type
    arch = ARCH[mt]
    hp = cfg.to_dict()
    w = gguf.GGUFWriter(str(path), arch, split_max_tensors=split_max_tensors)
    L, D, H = hp["num_hidden_layers"], hp["hidden_size"], hp["num_attention_heads"]
    w.add_name(name)
    w.add_block_count(L)
    w.add_context_length(hp.get("max_position_embeddings", 4096))
    w.add_embedding_length(D)
    if hp.get("intermediate_size"):
        w.add_feed_forward_length(hp["intermediate_size"])
    w.add_head_count(H)
    rp = hp.get("rope_parameters") or {}
    w.add_rope_freq_base(float(hp.get("rope_theta", rp.get("rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(float(hp["rms_norm_eps"]))
    w.add_vocab_size(hp["vocab_size"])
    w.add_file_type(0)
    sd = hf_tensors(cfg, state_dict)
    if arch == "deepseek2":
        R, Dr, Dn, Dv = hp["kv_lora_rank"], hp["qk_rope_head_dim"], hp["qk_nope_head_dim"], hp["v_head_dim"]
        if hp.get("q_lora_rank"):
            w.add_q_lora_rank(hp["q_lora_rank"])
        w.add_kv_lora_rank(R)
        if split_kv_b:   # MLA as the converter writes it now (DeepseekV2Model.set_gguf_parameters)
            w.add_head_count_kv(1)
            w.add_key_length(R + Dr)
            w.add_value_length(R)
            w.add_key_length_mla(Dn + Dr)
            w.add_value_length_mla(Dv)
        else:   # a joined attn_kv_b: the file before MLA (no *_mla keys; llama.cpp's loader then creates attn_kv_b)
            w.add_head_count_kv(H)
            w.add_key_length(Dn + Dr)
            w.add_value_length(Dv)
        w.add_rope_dimension_count(Dr)
        w.add_leading_dense_block_count(hp["first_k_dense_replace"])
        w.add_expert_count(hp["n_routed_experts"])
        w.add_expert_used_count(hp["num_experts_per_tok"])
        w.add_expert_feed_forward_length(hp["moe_intermediate_size"])
        w.add_expert_shared_count(hp["n_shared_experts"])
        w.add_expert_weights_scale(float(hp["routed_scaling_factor"]))
        w.add_expert_weights_norm(bool(hp["norm_topk_prob"]))
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if mt == "glm4_moe_lite"
                                 else gguf.ExpertGatingFuncType.SOFTMAX)
        if hp.get("n_group"):
            w.add_expert_group_count(hp["n_group"])
            w.add_expert_group_used_count(hp["topk_group"])
    else:
        w.add_head_count_kv(hp["num_key_value_heads"])
        if hp.get("head_dim"):
            w.add_key_length(hp["head_dim"])
            w.add_value_length(hp["head_dim"])
        if mt == "qwen3_moe":
            w.add_expert_count(hp.get("num_experts") or hp["num_local_experts"])
            w.add_expert_used_count(hp["num_experts_per_tok"])
            w.add_expert_feed_forward_length(hp["moe_intermediate_size"])
    # a small tokenizer, as the converter writes one (its arrays are what makes headers slow)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(hp["vocab_size"])])
    w.add_token_types([1] * hp["vocab_size"])

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[{v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch].name],
                                     L)
    for k, a in sd.items():
        if k.endswith("rotary_emb.inv_freq"):
            continue
        if k.endswith("e_score_correction_bias"):
            gname = k.split(".mlp.")[0].replace("model.layers.", "blk.") + ".exp_probs_b.bias"
        else:
            base, suf = (k[:-7], ".weight") if k.endswith(".weight") else (k[:-5], ".bias") if k.endswith(".bias") else (k, ".weight")
            g = names.get_name(base)
            assert g is not None, k
            gname = g + suf
        if arch == "llama" and k.endswith(("q_proj.weight", "k_proj.weight")):
            a = permute(a, H, H if k.endswith("q_proj.weight") else hp["num_key_value_heads"])
        if arch == "deepseek2" and k.endswith("kv_b_proj.weight") and split_kv_b:
            kv_b = a.reshape(H, Dn + Dv, a.shape[-1])
            k_b, v_b = kv_b[:, :Dn], kv_b[:, Dn:]
            _add(w, gname.replace("attn_kv_b", "attn_k_b"), np.ascontiguousarray(k_b.transpose(0, 2, 1)), types)
            _add(w, gname.replace("attn_kv_b", "attn_v_b"), np.ascontiguousarray(v_b), types)
            continue
        _add(w, gname, a, types)
    rp = hp.get("rope_parameters") or hp.get("rope_scaling") or {}
    if arch == "llama" and rp.get("rope_type") == "llama3":   # LlamaModel.generate_extra_tensors
        _add(w, "rope_freqs.weight", llama3_rope_factors(rp, hp.get("head_dim") or D // H), None)
    for gname, a in extra_tensors:
        _add(w, gname, a, types)
    for k, (v, vt) in (meta or {}).items():
        if v is None:
            w.kv_data[0].pop(k, None)
        else:
            w.kv_data[0][k] = gguf.GGUFValue(v, vt)
    finish(w)
    return path


def finish(w) -> None:
    """Write GGUFWriter `w`'s header, metadata and tensors to its file and close it."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_metadata(w, arch: str, meta: dict, drop=()) -> None:
    """Each `meta` key (without the architecture prefix; those in `drop` left out) written under `arch.` by
    GGUFWriter `w` as its kind: a list as an array, a bool, a float as float32, anything else as uint32."""
    for k, v in meta.items():
        if k in drop:
            continue
        k = f"{arch}.{k}"
        if isinstance(v, list):
            w.add_array(k, v)
        elif isinstance(v, bool):
            w.add_bool(k, v)
        elif isinstance(v, float):
            w.add_float32(k, v)
        else:
            w.add_uint32(k, int(v))


def gqa_meta(cfg) -> dict:
    """The keys llama.cpp's converter writes for a plain GQA decoder of ModelConfig `cfg` (no architecture
    prefix; add_metadata adds it): sizes, heads, norm epsilon, rope base, vocabulary."""
    return {"block_count": cfg.n_layers, "context_length": cfg.max_position_embeddings,
            "embedding_length": cfg.hidden_size, "feed_forward_length": cfg.moe_intermediate_size or cfg.intermediate_size,
            "attention.head_count": cfg.n_heads, "attention.head_count_kv": cfg.n_kv_heads,
            "attention.layer_norm_rms_epsilon": cfg.rms_norm_eps, "rope.freq_base": cfg.rope_theta,
            "vocab_size": cfg.vocab_size}


def add_zero_tensors(w, cfg, arch: str) -> None:
    """Every tensor of ModelConfig `cfg` under its GGUF name for `arch`, zeros: matrices F16, the router and 1-D
    tensors F32 (as the converter keeps them)."""
    from glmbench.models import gguf_file
    for hf, shape in cfg.tensor_shapes().items():
        name = gguf_file.gguf_name(hf, arch, cfg.n_layers)
        assert name is not None, hf
        f16 = len(shape) >= 2 and not hf.endswith("mlp.gate.weight")
        w.add_tensor(name, np.zeros(shape, np.float16 if f16 else np.float32))


def write_zero_file(path, cfg, arch: str, meta: dict, drop=(), extra=None) -> None:
    """A GGUF of ModelConfig `cfg` as llama.cpp's converter lays out `arch`: the metadata `meta` less the keys in
    `drop`, plus `extra`, and every tensor zero (add_zero_tensors)."""
    w = gguf.GGUFWriter(path, arch)
    add_metadata(w, arch, {**meta, **(extra or {})}, drop)
    add_zero_tensors(w, cfg, arch)
    finish(w)


def write_synth(path, hf: dict, arch: str, meta=None, drop=(), extra=None):
    """write_zero_file of the ModelConfig of HF config dict `hf` (configs.from_hf, named "synth"): gqa_meta's keys
    with `meta`'s over them, less `drop`, plus `extra`. Returns that config (what the file must read back as)."""
    from glmbench.models import configs
    cfg = configs.from_hf(hf, "synth")
    write_zero_file(path, cfg, arch, {**gqa_meta(cfg), **(meta or {})}, drop, extra)
    return cfg


def llama3_rope_factors(rp, dim):
    """The converter's rope_freqs tensor (conversion/llama.py, generate_extra_tensors): per pair,
    1 (short wavelengths), factor (long), or the smooth blend's divisor between."""
    import math
    base = rp.get("rope_theta", 10000.0)
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor, low, high = rp.get("factor", 8.0), rp.get("low_freq_factor", 1.0), rp.get("high_freq_factor", 4.0)
    old = rp.get("original_max_position_embeddings", 8192)
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < old / high:
            out.append(1)
        elif wl > old / low:
            out.append(factor)
        else:
            smooth = (old / wl - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, np.float32)


def _add(w, gname, a, types):
    a = np.ascontiguousarray(a, dtype=np.float32)
    t = T.F32
    if types is not None and a.ndim >= 2 and "ffn_gate_inp" not in gname:
        t = types(gname, a.shape)
        if a.shape[-1] % gguf.GGML_QUANT_SIZES[t][0]:
            t = T.F16  # rows that are not whole blocks (llama.cpp falls back too)
    if t == T.F32:
        w.add_tensor(gname, a)
    elif t == T.F16:
        w.add_tensor(gname, a.astype(np.float16))
    else:
        q = gguf.quants.quantize(a, t)
        w.add_tensor(gname, q, raw_shape=q.shape, raw_dtype=t)


def load_stated(path):
    """configs.load of a GGUF that must state everything: a GGUFNotice (a value assumed) is an error."""
    from glmbench.models import configs, gguf_file
    with warnings.catch_warnings():
        warnings.simplefilter("error", gguf_file.GGUFNotice)   # nothing assumed: the file states it all
        return configs.load(path)


def config_diff(a, b) -> dict:
    """The compared ModelConfig fields where a and b differ (name and file_weights aside): {field: (a's, b's)}."""
    return {f.name: (getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
            if f.compare and f.name not in ("name", "file_weights") and getattr(a, f.name) != getattr(b, f.name)}


def check_reads_as(path, want):
    """The GGUF at `path`, written from ModelConfig `want` with F16 matrices (add_zero_tensors), read back: the
    same family, cost shape, parameters and KV bytes, every byte a tensor of the config's. Returns its config."""
    cfg = load_stated(path)
    assert cfg.model_type == want.model_type
    assert cfg.cost_shape() == want.cost_shape(), config_diff(cfg, want)
    assert cfg.total_params() == want.total_params() and cfg.kv_bytes_per_token() == want.kv_bytes_per_token()
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F16"
    return cfg


def read_back(path, want):
    """check_reads_as(path, want), and the config read back equal to `want` in every compared field (config_diff):
    (that config, the set of the file's GGUF tensor names)."""
    from glmbench.models import gguf_file
    cfg = check_reads_as(path, want)
    assert config_diff(cfg, want) == {}
    return cfg, set(gguf_file.read(path).tensors)


def check_required_keys(tmp, write, arch: str, keys) -> None:
    """For each metadata key in `keys`, a file that `write(path, drop=(key,))` writes without it (in folder `tmp`):
    configs.load refuses it, naming the key "ARCH.KEY" missing."""
    import pytest
    from glmbench.models import configs, gguf_file
    for key in keys:
        p = str(tmp / f"no-{key}.gguf")
        write(p, drop=(key,))
        with pytest.raises(gguf_file.GGUFError, match=f"metadata '{arch}.{key}' is missing"):
            configs.load(p)


def sweep_file(path, tmp, model: str) -> list:
    """`glmbench sweep --model FILE --cards 1 --tests tg,pp,mem` run as a user runs it (a subprocess, the
    checkout on PYTHONPATH): its records, after asserting that it exited 0 and that every record is of the
    file's model `model` in its q8_0 weights, the three tests there, each fitting the card."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(tmp, "sweep.json")
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--model", path, "-q", "--cards", "1",
                        "--tests", "tg,pp,mem", "--out", out], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        recs = json.load(f)
    recs = recs if isinstance(recs, list) else recs["records"]
    assert {x["model"] for x in recs} == {model} and {x["weights"] for x in recs} == {"q8_0"}
    assert {x["test"] for x in recs} == {"tg", "pp", "mem"} and all(x["fits"] for x in recs)
    return recs
