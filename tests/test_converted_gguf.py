"""GGUF files made by llama.cpp's own converter (convert_hf_to_gguf.py from llama-cpp-python's
source package, tests/llama_cpp_convert.py) from tiny random HF models of every family glmbench
lists: f16, q8_0 and split (--split-max-tensors) files read into the HF config and run in
glmbench.Model / `glmbench measure`, logits matched against HF transformers holding the file's own
(rounded) weights. Skipped, with the reason, where the converter's source is not found
(GLMBENCH_LLAMA_CPP_SRC or ~/.cache/glmbench; .ci/run fetches it)."""
import dataclasses
import functools
import json
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="HF oracle tests need torch")
pytest.importorskip("transformers", reason="HF oracle tests need transformers")
gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import llama_cpp_convert as lc  # noqa: E402
from test_model_hf import TINY, hf_logits, rel_err, tiny_hf_model  # noqa: E402

from glmbench.models import checkpoint, configs, gguf_file  # noqa: E402
from glmbench.models.model import _AFMOE  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(lc.source() is None, reason=lc.skip_reason())]

RTOL = 1e-4
_DENSE = dict(vocab_size=160, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-5)
_HYBRID = dict(vocab_size=160, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, rms_norm_eps=1e-6, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
               linear_value_head_dim=16, linear_conv_kernel_dim=4, pad_token_id=0, bos_token_id=1, eos_token_id=2)
_COHERE = dict({k: v for k, v in _DENSE.items() if k != "rms_norm_eps"}, layer_norm_eps=1e-5, pad_token_id=0,
               bos_token_id=1, eos_token_id=2)
# families beyond test_model_hf's TINY, and variants: tied embeddings (Qwen2.5-0.5B, Llama-3.2-1B class)
# with llama3 rope scaling (the converter's rope_freqs tensor)
EXTRA = {
    "llama_tied": ("llama", dict(TINY["llama"], tie_word_embeddings=True)),
    "qwen2_tied": ("qwen2", dict(TINY["qwen2"], tie_word_embeddings=True)),
    "mistral": ("mistral", dict(_DENSE, sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    "seed_oss": ("seed_oss", dict(_DENSE, attention_bias=True, attention_out_bias=False,
                                  rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # Gemma 3: the converter writes no sliding_window_pattern and llama.cpp assumes 6, so 6 layers; a
    # window of 4 tokens, shorter than the prompt
    "gemma3_text": ("gemma3_text", dict(_DENSE, num_hidden_layers=6, sliding_window=4, query_pre_attn_scalar=16,
                                        rms_norm_eps=1e-6)),
    # Gemma 2: windows on even layers, both softcaps small enough to act on these logits
    "gemma2": ("gemma2", dict(_DENSE, num_hidden_layers=4, sliding_window=4, query_pre_attn_scalar=16, rms_norm_eps=1e-6,
                              attn_logit_softcapping=5.0, final_logit_softcapping=3.0)),
    "gpt_oss": ("gpt_oss", dict(_DENSE, intermediate_size=32, num_local_experts=8, num_experts_per_tok=2,
                                sliding_window=8)),
    # families priced, not run (configs.PRICED_ONLY): their files' configs only. Llama 4's chunk is
    # llama.cpp's constant 8192 (the file does not store it); MiniMax-M2's converter reads rotary_dim;
    # llama.cpp's qwen2moe has experts on every layer
    "glm4": ("glm4", dict(_DENSE, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "llama4_text": ("llama4_text", dict(_DENSE, num_hidden_layers=4, intermediate_size=32, intermediate_size_mlp=96,
                                        num_local_experts=4, interleave_moe_layer_step=2, attention_chunk_size=8192,
                                        pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "minimax_m2": ("minimax_m2", dict(_DENSE, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                                      rotary_dim=8, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # (ERNIE 4.5 MoE: the converter writes the shared MLP's width as intermediate_size // num_key_value_heads, which
    # llama.cpp sizes it by: 128 // 2 = 2 x 32, as the released 12288 // 4 = 2 x 1536)
    "ernie4_5_moe": ("ernie4_5_moe", dict({k: v for k, v in _DENSE.items() if k != "head_dim"}, num_hidden_layers=3,
                                          intermediate_size=128, moe_intermediate_size=32, moe_num_experts=4, moe_k=2,
                                          moe_num_shared_experts=2, moe_layer_start_index=1,
                                          pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # Ministral 3 (llama.cpp's mistral3 architecture): Mistral's layers, YaRN with the attention temperature
    # (Ministral3Config's default rope_parameters)
    "ministral3": ("ministral3", dict(_DENSE, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "qwen2_moe": ("qwen2_moe", dict({k: v for k, v in _DENSE.items() if k != "head_dim"}, moe_intermediate_size=32,
                                    num_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=48,
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    # the hybrids (Gated DeltaNet linear attention + gated GQA; the converter's qwen3next / qwen35 / qwen35moe):
    # Qwen3-Next with a non-default partial rope; Qwen3.5 with layer_types that full_attention_interval
    # cannot state (the file's recurrent-layer flags must be read); Qwen3.5-MoE with value heads narrower
    # than key heads (ssm.inner_size / time_step_rank, not state_size, gives their width; llama.cpp's
    # loader assumes them equal, as in every released model). Each folder also gets an MTP block
    # (_with_mtp_block)
    "qwen3_next": ("qwen3_next", dict(_HYBRID, intermediate_size=96, moe_intermediate_size=32, num_experts=4,
                                      num_experts_per_tok=2, shared_expert_intermediate_size=48,
                                      partial_rotary_factor=0.5)),
    "qwen3_5_text": ("qwen3_5_text", dict(_HYBRID, intermediate_size=96,
                                          layer_types=["linear_attention", "full_attention"] * 2)),
    "qwen3_5_moe_text": ("qwen3_5_moe_text", dict(_HYBRID, linear_value_head_dim=8, moe_intermediate_size=32,
                                                  num_experts=4, num_experts_per_tok=2,
                                                  shared_expert_intermediate_size=48)),
    # the Cohere families (llama.cpp's command-r / cohere2): Command-R+'s per-head q/k LayerNorms (use_qk_norm),
    # a logit scale; Cohere2 with a window of 8 tokens on three of every four layers (the converter writes no
    # pattern: llama.cpp's 4, HF's default). Cohere2's converter reads `rotary_pct` (conversion/command_r.py:
    # rope.dimension_count = rotary_pct x head_dim), a field transformers' Cohere2Config does not define, so
    # the tiny config carries it (1.0: the whole head rotated, as HF's Cohere2 does)
    "cohere": ("cohere", dict(_COHERE, use_qk_norm=True, logit_scale=0.5)),
    "cohere2": ("cohere2", dict(_COHERE, num_hidden_layers=4, sliding_window=8, logit_scale=0.25, rotary_pct=1.0)),
    # OLMoE without clip_qkv: conversion/olmo.py writes no key for it and llama.cpp's olmoe graph clamps nothing
    "olmoe": ("olmoe", dict(TINY["olmoe"], clip_qkv=None)),
    # OLMo 3 as llama.cpp's olmo2 with a window: the converter writes one rope base (full_attention's; llama.cpp's
    # sliding layers turn by it, unscaled), so both layer types share it here, as in the released model
    # Phi-4-mini's shape with its longrope (the converter's rope_factors_long / _short tensors, attn_factor): an
    # original context of 8 tokens, so the 7-token prompt runs on the short factors and the decode steps cross it
    "phi3_longrope": ("phi3", dict(TINY["phi3"], max_position_embeddings=64, original_max_position_embeddings=8,
                                   rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                    "partial_rotary_factor": 0.75,
                                                    "short_factor": [1.0, 1.25, 1.5, 1.125, 1.75, 1.0625],
                                                    "long_factor": [2.0, 3.5, 5.25, 6.0, 7.5, 4.75]})),
    "olmo3": ("olmo3", dict(TINY["olmo3"], rope_parameters={
        "full_attention": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 16},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})),
    # dots.llm1 stating scoring_func "sigmoid", which conversion/base.py writes as expert_gating_func 2 (llama.cpp's
    # dots1 graph needs it; the released config's "noaux_tc" the vendored converter refuses: tests/test_dots1.py)
    "dots1": ("dots1", dict(TINY["dots1"], scoring_func="sigmoid")),
    # GLM-4-9B-Chat (transformers' glm) as llama.cpp's chatglm: the converter writes no key_length (the head is
    # hidden / heads: llama.cpp's o_proj is n_embd x n_embd), context_length = hidden_size (GlmConfig has no
    # seq_length) and rms eps 1e-5 (no layernorm_epsilon), so the tiny config states those as the file will
    "glm": ("glm", dict(TINY["glm"], head_dim=16, max_position_embeddings=64, rms_norm_eps=1e-5)),
    # AFMoE as llama.cpp's afmoe runs it: every 4th layer global and NoPE (its fixed step; the converter writes no
    # pattern), the embeddings scaled (mup_enabled), route_norm stated (the converter's expert_weights_norm)
    "afmoe": ("afmoe", dict(TINY["afmoe"], global_attn_every_n_layers=4, route_norm=True)),
}
HYBRID = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")      # configs.LINEAR_FAMILIES
COHERE = ("cohere", "cohere2")
RUN = ["llama", "llama_tied", "mistral", "qwen2", "qwen2_tied", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
       "glm4_moe_lite", "glm4_moe", "seed_oss", "gemma2", "gemma3_text", "gpt_oss", "mixtral", "phi3",
       # llama.cpp's olmoe (q / k norms over all heads; without clip_qkv, which the converter does not write),
       # granite and granitemoe (the multipliers as *_scale keys, q / k rows permuted as llama's)
       "olmoe", "granite", "granitemoe",
       # llama.cpp's olmo2 (OLMo 2; OLMo 3 with its window and the flags of its sliding layers), smollm3 (q / k
       # permuted as llama's, every 4th layer NoPE), exaone4 (post-norms, windowed layers rotating, global ones not)
       "olmo2", "olmo3", "smollm3", "exaone4",
       # llama.cpp's dots1 (q / k norms per head before rope, grouped sigmoid MoE after leading dense layers, shared
       # experts)
       "dots1",
       # llama.cpp's arcee (Llama's layers, q / k permuted, the ungated relu2 MLP, YaRN from the rope.scaling keys)
       "arcee",
       # llama.cpp's apertus (q / k not permuted, per-head q / k norms, llama3 rope as rope_freqs, the xIELU's
       # per-layer parameters as the xielu.* metadata arrays)
       "apertus", "phi3_longrope",
       # llama.cpp's gemma (Gemma 1: norms stored as 1 + w, lm_head dropped, GeGLU, MQA with head_dim 32 beside 16)
       "gemma",
       # llama.cpp's chatglm (GLM-4-9B-Chat: q/k/v biases, half of each head rotated in NORM pairs, fused ffn_up)
       "glm",
       # InternLM3 (conversion/internlm.py InternLM3Model: llama.cpp's llama, q / k rows permuted)
       "internlm3",
       # llama.cpp's afmoe (q / k not permuted, per-head q / k norms, the attn_gate, a window on the sliding layers
       # and rope there only, four norms, a dense layer then sigmoid MoE with exp_probs_b beside shared experts)
       "afmoe",
       # llama.cpp's nemotron (LayerNorm1P's weights stored + 1 with their biases, partial rotary as
       # rope.dimension_count, q / k not permuted, the relu2 MLP and every projection biased)
       "nemotron"]
PREDICT_ONLY = ["glm4", "llama4_text", "minimax_m2", "ernie4_5_moe", "qwen2_moe", "ministral3"]   # configs.PRICED_ONLY
# the hybrids run in glmbench.Model from HF checkpoints and from their GGUF files (test_hybrid_files_run_as_stored)
PREDICT_ONLY += [f for f in HYBRID if f in configs.PRICED_ONLY]
# the Cohere families: priced only, or run by glmbench.Model (logits matched) once configs.PRICED_ONLY drops them
RUN += [f for f in COHERE if f not in configs.PRICED_ONLY]
PREDICT_ONLY += [f for f in COHERE if f in configs.PRICED_ONLY]
PROMPT, STEPS = [3, 17, 42, 5, 99, 1, 7], [7, 11, 13, 2]


def _hf(family):
    if family in EXTRA:
        mt, kw = EXTRA[family]
        saved = TINY.get(mt)
        TINY[mt] = kw
        try:
            return tiny_hf_model(mt)
        finally:
            if saved is None:
                TINY.pop(mt)
            else:
                TINY[mt] = saved
    return tiny_hf_model(family)


def _with_mtp_block(folder):
    """Add a multi-token-prediction block to a saved hybrid (Qwen3-Next / Qwen3.5) folder, as the released
    checkpoints hold one (mtp.fc, mtp.pre_fc_norm_embedding / _hidden, mtp.norm and mtp.layers.0: a
    full-attention decoder layer, here a copy of the first one). llama.cpp's converter (conversion/qwen.py
    _QwenMtpMixin) asserts on a folder without it unless run with --no-mtp, which llama_cpp_convert.convert
    does not pass; with it the file has block_count = layers + 1 and nextn_predict_layers = 1, whose block
    glmbench leaves out of the config (skipped bytes). Qwen3.5's config states the block
    (mtp_num_hidden_layers); Qwen3-Next's does not (the converter counts the mtp.layers tensors)."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(folder, "model.safetensors")
    sd = load_file(path)
    with open(os.path.join(folder, "config.json")) as f:
        hc = json.load(f)
    tc = hc.get("text_config", hc)
    full = f"model.layers.{tc['layer_types'].index('full_attention')}."
    D = tc["hidden_size"]
    g = torch.Generator().manual_seed(1)
    for k, v in list(sd.items()):
        if k.startswith(full):
            sd["mtp.layers.0." + k[len(full):]] = v.clone()
    sd["mtp.fc.weight"] = torch.randn(D, 2 * D, generator=g) / (2 * D) ** 0.5
    for n in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
        sd[f"mtp.{n}.weight"] = torch.ones(D)
    save_file(sd, path, metadata={"format": "pt"})
    if hc["model_type"] != "qwen3_next":
        tc["mtp_num_hidden_layers"] = 1
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(hc, f)


_MODELS: dict = {}         # (family, tmp) -> (HF config, HF model)


def _build(family, tmp):
    cfg, model = _MODELS[(family, tmp)] = _hf(family)
    folder = lc.save_hf(model, cfg, os.path.join(tmp, family))
    if family in HYBRID:
        _with_mtp_block(folder)
    return folder


# the run's families in one converter process
_CONVERSIONS = lc.Conversions(_build, RUN + PREDICT_ONLY, param="family",
                              kinds={"f16": ("f16", None), "q8_0": ("q8_0", None), "split": ("q8_0", 7)})


def _converted(family, tmp):
    """(HF config, HF model, {"f16": path, "q8_0": path, "split": first part}) for `family`."""
    files = _CONVERSIONS(family, tmp)[1]
    return (*_MODELS[(family, tmp)], files)


tmp = _CONVERSIONS.fixture("converted")


def _state_dict(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gguf_file.GGUFNotice)
        return checkpoint.state_dict(path)


def _hf_with_file_weights(family, sd):
    """A fresh HF model of `family` holding the file's weights as glmbench reads them (dequantized):
    the same rounded values the GGUF stores, in float32."""
    cfg, model = _hf(family)
    own = model.state_dict()
    f32 = {k: (v.dequantize() if hasattr(v, "dequantize") else
               (np.asarray(v).astype(np.uint32) << 16).view(np.float32) if np.asarray(v).dtype == np.uint16 else
               np.asarray(v, np.float32)) for k, v in sd.items()}
    done = set()
    gpt_oss = cfg.model_type == "gpt_oss"
    with torch.no_grad():
        for k, t in own.items():
            if gpt_oss and k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj_bias")):
                # HF GPT-OSS: gate and up interleaved on the last axis, gate_up_proj [E, D, 2F]
                p, sfx = k.split("gate_up_proj")
                g, u = f32[p + "gate_proj" + sfx], f32[p + "up_proj" + sfx]       # [E, F, D] / [E, F]
                a = np.stack([g, u], axis=2).reshape(g.shape[0], 2 * g.shape[1], *g.shape[2:])
                a = a.transpose(0, 2, 1) if not sfx else a
                done |= {p + "gate_proj" + sfx, p + "up_proj" + sfx}
            elif gpt_oss and k.endswith("mlp.experts.down_proj"):   # HF [E, F, D]; glmbench [E, D, F]
                a = f32[k].transpose(0, 2, 1)
                done.add(k)
            elif gpt_oss and ".mlp.router." in k:   # glmbench names the router mlp.gate
                a = f32[k.replace(".mlp.router.", ".mlp.gate.")]
                done.add(k.replace(".mlp.router.", ".mlp.gate."))
            elif cfg.model_type == "afmoe" and k.split(".", 3)[-1] in _AFMOE:   # (AFMoE: HF's names of ours)
                n = k.rsplit(".", len(k.split(".", 3)[-1].split(".")))[0] + "." + _AFMOE[k.split(".", 3)[-1]]
                a = f32[n]
                done.add(n)
            elif ".block_sparse_moe.router." in k:   # Granite MoE's router: glmbench's mlp.gate
                a = f32[k.replace(".block_sparse_moe.router.", ".mlp.gate.")]
                done.add(k.replace(".block_sparse_moe.router.", ".mlp.gate."))
            elif k.endswith("block_sparse_moe.experts.gate_up_proj"):
                p = k[: -len("block_sparse_moe.experts.gate_up_proj")] + "mlp.experts."
                a = np.concatenate([f32[p + "gate_proj"], f32[p + "up_proj"]], axis=1)
                done |= {p + "gate_proj", p + "up_proj"}
            elif k.endswith("block_sparse_moe.experts.down_proj"):
                a = f32[k.replace(".block_sparse_moe.", ".mlp.")]
                done.add(k.replace(".block_sparse_moe.", ".mlp."))
            elif k.endswith("mlp.experts.gate_up_proj"):
                p = k[: -len("gate_up_proj")]
                a = np.concatenate([f32[p + "gate_proj"], f32[p + "up_proj"]], axis=1)
                done |= {p + "gate_proj", p + "up_proj"}
            elif k.endswith(("self_attn.qkv_proj.weight", "mlp.gate_up_proj.weight")):   # Phi-3: fused in HF
                p = k[: -len("qkv_proj.weight")] if "qkv" in k else k[: -len("gate_up_proj.weight")]
                parts = [p + f"{x}_proj.weight" for x in (("q", "k", "v") if "qkv" in k else ("gate", "up"))]
                a = np.concatenate([f32[n] for n in parts], axis=0)
                done |= set(parts)
            elif k in f32:
                a = f32[k]
                done.add(k)
            elif k == "lm_head.weight" and cfg.tie_word_embeddings:
                continue
            else:
                raise AssertionError(f"the file gave no tensor for HF {k!r}")
            assert tuple(a.shape) == tuple(t.shape), k
            t.copy_(torch.from_numpy(np.array(a, np.float32)))
    assert done == set(f32), set(f32) - done
    return model


def _glm_logits(m):
    return [m.prefill(np.array(PROMPT))] + [m.decode(t) for t in STEPS]


def _f32_compute(monkeypatch):
    """The quantized kernels on float32 activations (default: activations quantized to q8_0 as
    ggml does), so a quantized file's logits differ from HF's only by summation order."""
    from glmbench.core import quant
    monkeypatch.setattr(quant, "linear", functools.partial(quant.linear, compute="f32"))
    monkeypatch.setattr(quant, "moe_experts", functools.partial(quant.moe_experts, compute="f32"))
    # and MLA's k_b / v_b, kept split as stored (core.attention.KVBSplit)
    from glmbench.core import attention
    monkeypatch.setattr(attention, "mla_attention", functools.partial(attention.mla_attention, compute="f32"))


@pytest.mark.parametrize("kind", ["f16", "q8_0", "split"])
@pytest.mark.parametrize("family", RUN)
def test_converted_file_matches_hf(tmp, family, kind, monkeypatch, python_quant_layers):
    hf_cfg, _, files = _converted(family, tmp)
    p = files[kind]
    if kind == "split":
        assert len(gguf_file.read(p).parts) > 1
    cfg, sd = _state_dict(p)
    types = {t.type_name for t in gguf_file.read(p).tensors.values()}
    assert ("Q8_0" if kind != "f16" else "F16") in types
    ref = hf_logits(_hf_with_file_weights(family, sd), PROMPT, STEPS)
    if kind != "f16":
        _f32_compute(monkeypatch)   # (python_quant_layers: decode op by op, so the patches run)
    m = checkpoint.load_model(p, kv="f32", max_context=32)
    errs = [rel_err(a, b) for a, b in zip(_glm_logits(m), ref)]
    assert max(errs) < RTOL, errs
    if kind != "f16":   # as measure runs it: q8_0 activations on the quantized matrices
        monkeypatch.undo()
        m = checkpoint.load_model(p, kv="f32", max_context=32)
        got = _glm_logits(m)
        # runs, every call after the first too; how close q8_0 activations stay is tests/test_quant.py's
        # (in a random tiny MoE their rounding flips near-tied router choices: no bound holds here)
        assert all(np.isfinite(a).all() and a.shape == b.shape for a, b in zip(got, ref))


@pytest.mark.parametrize("family", RUN + PREDICT_ONLY)
def test_converted_file_config_is_the_hf_config(tmp, family):
    hf_cfg, _, files = _converted(family, tmp)
    want = configs.from_hf(hf_cfg.to_dict(), "hf")
    for kind in ("f16", "split"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gguf_file.GGUFNotice)
            cfg = configs.load(files[kind])
        diff = {f.name: (getattr(cfg, f.name), getattr(want, f.name)) for f in dataclasses.fields(cfg)
                if f.compare and f.name not in ("name", "file_weights") and getattr(cfg, f.name) != getattr(want, f.name)}
        if family == "mistral":   # the converter writes Mistral as the llama architecture
            assert diff.pop("model_type") == ("llama", "mistral")
        if family == "internlm3":   # ... and InternLM3 (InternLM3Model's model_arch is LLAMA)
            assert diff.pop("model_type") == ("llama", "internlm3")
        if family == "deepseek_v3":   # deepseek2 with a sigmoid router: the same config as GLM-4.7-Flash's family
            assert diff.pop("model_type") == ("glm4_moe_lite", "deepseek_v3")
        if family == "phi3_longrope":   # the file's factors (float32 tensors) and attn_factor, in its own dict's keys
            diff.pop("rope_scaling", None)
            assert cfg.rope_type == want.rope_type == "longrope"
            a, b = cfg.longrope, want.longrope
            assert a.original == b.original == 8
            for f in ("short_inv_freq", "long_inv_freq"):
                np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-7)
            assert a.short_attention_factor == pytest.approx(b.short_attention_factor, rel=1e-7)
            assert cfg.file_weights.extra_bytes == 2 * 6 * 4     # the two factor tensors: not weights
        assert diff == {}
        assert cfg.total_params() == want.total_params()
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
        assert cfg.file_weights.total_bytes == sum(t.n_bytes for t in gguf_file.read(files[kind]).tensors.values())


def test_priced_family_files_predict_and_are_refused_by_the_forward_pass(tmp):
    """The families configs.PRICED_ONLY lists, as converted files: the file's own bytes priced (the q8_0
    file's matrices), the forward pass refused with what it lacks. (The hybrids' files run:
    test_hybrid_files_run_as_stored.)"""
    from glmbench.models.model import Model
    from glmbench.predict import costmodel as cm
    # (Kimi-Linear: priced from config.json and the built-in; its GGUF, llama.cpp's kimi-linear, is not read;
    # Falcon-H1's converted files: tests/test_falcon_h1.py)
    # (the DSA families' GGUF round trip: tests/test_gguf_dsa.py, written by the gguf package; LFM2's converted
    # files: tests/test_gguf_lfm2.py; Gemma 3n's, whose per-layer table the converter pads, and Hunyuan's and
    # Phi-3.5-MoE's GGUFs, written by the gguf package: tests/test_gemma3n_hunyuan_phimoe.py; DeciLM's, written and
    # converted: tests/test_deci_exaone_ernie.py)
    assert set(PREDICT_ONLY) == set(configs.PRICED_ONLY) - {"kimi_linear", "falcon_h1", "glm_moe_dsa", "deepseek_v32",
                                                            "lfm2", "lfm2_moe", "gemma3n_text", "nemotron-nas"}
    for family in PREDICT_ONLY:
        _, _, files = _converted(family, tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gguf_file.GGUFNotice)
            cfg = configs.load(files["q8_0"])
        assert cfg.file_weights.main_type == "Q8_0" and cfg.file_weights.extra_bytes == 0
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
        if family == "llama4_text":   # llama.cpp's 8192-token chunks on three of every four layers
            assert cfg.window_chunked and cfg.sliding_window == 8192 and cfg.windowed_layers == (0, 1, 2)
            # (llama4.cpp reads interleave_moe_layer_step with get_key: a file without it does not load)
            g = gguf_file.read(files["q8_0"])
            with pytest.raises(gguf_file.GGUFError, match=r"'llama4\.interleave_moe_layer_step' is missing"):
                lc.hf_config_with(g, dict(g.metadata), interleave_moe_layer_step=None)
        with pytest.raises(ValueError, match="priced, not run"):
            checkpoint.load_model(files["f16"])


@pytest.mark.parametrize("family", HYBRID)
def test_hybrid_files_run_as_stored(tmp, family):
    """A Gated DeltaNet hybrid's GGUF runs in glmbench.Model as the converter stored it: A_log from A =
    -exp(A_log), the norms' 1 + w taken back, conv1d reshaped; Qwen3-Next's in_proj_qkvz rows gathered
    back from attn_qkv + attn_gate into HF's per-key-head order; Qwen3.5's linear layers' value heads left
    in the file's tiled order (value head j reads key head j mod Hk: ModelConfig.linear_v_tiled; these
    tiny models have 4 value heads over 2 key heads, so the order matters). The F16 file's logits over a prompt and decode
    steps equal the HF folder's run with its matrices in f16 (within 1e-3: the converter keeps the MoE's
    1 x hidden shared-expert gate, ffn_gate_inp_shexp, in f32 where the folder's f16 rounds it; 1e-4 for
    the dense model; Qwen3-Next's likewise); the Q8_0 file runs
    its matrices as q8_0 blocks, as close to the folder's f32 logits as the folder quantized to q8_0 by
    glmbench (not equal to it: the converter permuted out_proj's columns by value heads of 16 / 8 before
    quantizing, so its 32-wide blocks hold other columns; a real model's 128-wide heads keep whole blocks)."""
    from glmbench.core.quant import QTensor
    _, _, files = _converted(family, tmp)
    folder = os.path.join(tmp, family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gguf_file.GGUFNotice)
        f16 = checkpoint.load_model(files["f16"], kv="f32", max_context=64)
        q8 = checkpoint.load_model(files["q8_0"], kv="f32", max_context=64)
    assert f16.config.linear_v_tiled == (family != "qwen3_next") and not configs.load(folder).linear_v_tiled
    ref = checkpoint.load_model(folder, weights="f16", kv="f32", max_context=64)
    tol = 1e-4 if family == "qwen3_5_text" else 1e-3
    want, got = ref.prefill(PROMPT), f16.prefill(PROMPT)
    assert np.abs(got - want).max() <= tol * np.abs(want).max()
    for t in STEPS:
        a, b = f16.decode(t), ref.decode(t)
        assert np.abs(a - b).max() <= tol * np.abs(b).max()
    lin = q8.layers[q8.config.linear_layers[0]].w
    assert all(isinstance(v, QTensor) and v.fmt == "q8_0" for k, v in lin.items() if k.endswith(("proj_qkv.weight",
                                                                                                 "proj_qkvz.weight")))
    f32 = checkpoint.load_model(folder, weights="f32", kv="f32", max_context=64).prefill(PROMPT)
    own = checkpoint.load_model(folder, weights="q8_0", kv="f32", max_context=64).prefill(PROMPT)
    assert np.abs(q8.prefill(PROMPT) - f32).max() <= 1.2 * np.abs(own - f32).max()


def test_qwen2moe_file_without_its_width_keys(tmp):
    """A qwen2moe file converted before the converter wrote the experts' widths: they come from the
    tensors' rows (ffn_up_exps [E, F, D], ffn_up_shexp [Fs, D]), the same config."""
    hf_cfg, _, files = _converted("qwen2_moe", tmp)
    g = gguf_file.read(files["f16"])
    want = gguf_file.hf_config(g)
    for k in ("qwen2moe.expert_feed_forward_length", "qwen2moe.expert_shared_feed_forward_length"):
        assert k in g.metadata
        del g.metadata[k]
    got = gguf_file.hf_config(g)
    assert (got["moe_intermediate_size"], got["shared_expert_intermediate_size"]) == \
        (want["moe_intermediate_size"], want["shared_expert_intermediate_size"]) == (32, 48)
    del g.tensors["blk.0.ffn_up_exps.weight"]
    with pytest.raises(gguf_file.GGUFError, match="expert_feed_forward_length"):
        gguf_file.hf_config(g)


# each HF-named tensor of a Gated DeltaNet layer -> the GGUF tensors holding it, as llama.cpp's converter
# writes them (conversion/qwen.py; src/llama-arch.cpp's names): Qwen3-Next's in_proj_qkvz split in its q/k/v
# rows and its z rows, A_log stored as ssm_a (no suffix), dt_bias as ssm_dt.bias
_LINEAR_NAMES = {"conv1d.weight": ["ssm_conv1d.weight"], "dt_bias": ["ssm_dt.bias"], "A_log": ["ssm_a"],
                 "norm.weight": ["ssm_norm.weight"], "out_proj.weight": ["ssm_out.weight"]}
_LINEAR_NAMES_OF = {
    "qwen3_next": {"in_proj_qkvz.weight": ["attn_qkv.weight", "attn_gate.weight"], "in_proj_ba.weight": ["ssm_ba.weight"]},
    "qwen3_5_text": {"in_proj_qkv.weight": ["attn_qkv.weight"], "in_proj_z.weight": ["attn_gate.weight"],
                     "in_proj_b.weight": ["ssm_beta.weight"], "in_proj_a.weight": ["ssm_alpha.weight"]}}
_LINEAR_NAMES_OF["qwen3_5_moe_text"] = _LINEAR_NAMES_OF["qwen3_5_text"]
_MOE_NAMES = {"gate.weight": "ffn_gate_inp", "experts.gate_proj": "ffn_gate_exps", "experts.up_proj": "ffn_up_exps",
              "experts.down_proj": "ffn_down_exps", "shared_experts.gate_proj.weight": "ffn_gate_shexp",
              "shared_experts.up_proj.weight": "ffn_up_shexp", "shared_experts.down_proj.weight": "ffn_down_shexp",
              "shared_expert_gate.weight": "ffn_gate_inp_shexp"}


@pytest.mark.parametrize("family", HYBRID)
def test_hybrid_file_config_and_bytes(tmp, family):
    """Qwen3-Next, Qwen3.5 and Qwen3.5-MoE files (llama.cpp's qwen3next / qwen35 / qwen35moe): the linear
    layers and their sizes, the gated attention, the experts and the shared expert as HF's config has them;
    every stored byte on the HF name configs.tensor_shapes() gives it, the MTP block's apart."""
    hf_cfg, _, files = _converted(family, tmp)
    want = configs.from_hf(hf_cfg.to_dict(), "hf")
    assert want.linear_layers and want.attn_output_gate
    for kind in ("f16", "q8_0", "split"):
        g = gguf_file.read(files[kind])
        arch = g.architecture
        assert arch == {"qwen3_next": "qwen3next", "qwen3_5_text": "qwen35", "qwen3_5_moe_text": "qwen35moe"}[family]
        with warnings.catch_warnings():
            warnings.simplefilter("error", gguf_file.GGUFNotice)   # nothing assumed: the file states it all
            cfg = configs.load(files[kind])
        assert g.get(f"{arch}.nextn_predict_layers") == 1 and g.get(f"{arch}.block_count") == cfg.n_layers + 1
        for f in ("model_type", "n_layers", "linear_layers", "linear_k_heads", "linear_v_heads", "linear_k_dim",
                  "linear_v_dim", "linear_conv", "attn_output_gate", "qk_norm", "n_heads", "n_kv_heads", "head_dim",
                  "rope_dim", "moe_layers", "n_routed_experts", "n_experts_per_tok", "moe_intermediate_size",
                  "shared_expert_intermediate_size", "shared_expert_gate", "norm_topk_prob", "intermediate_size"):
            assert getattr(cfg, f) == getattr(want, f), (kind, f)
        assert cfg.recurrent_state_bytes() == want.recurrent_state_bytes() > 0
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
        fw, shapes, ts, L = cfg.file_weights, cfg.tensor_shapes(), g.tensors, cfg.n_layers
        assert [n for n, _, _ in fw.tensors] == list(shapes)
        # every stored byte once: the HF-named tensors and the MTP block (skipped), nothing else
        mtp = sum(t.n_bytes for n, t in ts.items() if n.startswith(f"blk.{L}."))
        assert mtp > 0 and fw.skipped_bytes == mtp and fw.extra_bytes == 0
        assert sum(b for _, _, b in fw.tensors) + fw.skipped_bytes == fw.total_bytes == g.tensor_bytes
        by = fw.bytes_of()
        for i in cfg.linear_layers:
            for hf, names in {**_LINEAR_NAMES, **_LINEAR_NAMES_OF[family]}.items():
                assert by[f"model.layers.{i}.linear_attn.{hf}"] == sum(ts[f"blk.{i}.{n}"].n_bytes for n in names), hf
        for i in cfg.attention_layers:   # q_proj: each head's query and its output gate
            q = f"model.layers.{i}.self_attn.q_proj.weight"
            assert shapes[q] == (2 * cfg.n_heads * cfg.head_dim, cfg.hidden_size)
            assert by[q] == ts[f"blk.{i}.attn_q.weight"].n_bytes
        for i in cfg.moe_layers:
            for hf, n in _MOE_NAMES.items():
                assert by[f"model.layers.{i}.mlp.{hf}"] == ts[f"blk.{i}.{n}.weight"].n_bytes, hf
        if kind == "q8_0":
            assert fw.main_type == "Q8_0" and "Q8_0" in {t for _, t, _ in fw.tensors}


def test_hybrid_file_layer_flags_and_missing_keys(tmp):
    """Which layers are linear: the file's attention.recurrent_layers (one flag per block, the MTP block's
    false), else every layer but each full_attention_interval-th (llama.cpp's default 4); a missing SSM
    key, or flags that are not one per block, is a GGUFError naming it."""
    _, _, files = _converted("qwen3_5_text", tmp)
    g = gguf_file.read(files["f16"])
    base = dict(g.metadata)

    def hf_with(**meta):
        return lc.hf_config_with(g, base, **meta)

    rec = "attention.recurrent_layers"
    assert base["qwen35." + rec].tolist() == [True, False, True, False, False]
    assert base["qwen35.full_attention_interval"] == 4     # the converter writes it whatever the layers
    assert hf_with()["layer_types"] == ["linear_attention", "full_attention"] * 2
    assert hf_with(**{rec: None})["layer_types"] == ["linear_attention"] * 3 + ["full_attention"]
    assert hf_with(**{rec: None, "full_attention_interval": 2})["layer_types"] == \
        ["linear_attention", "full_attention"] * 2
    assert hf_with(**{rec: None, "full_attention_interval": None})["layer_types"] == \
        ["linear_attention"] * 3 + ["full_attention"]
    with pytest.raises(gguf_file.GGUFError, match="one per block"):
        hf_with(**{rec: np.array([True, False, True, False])})
    with pytest.raises(gguf_file.GGUFError, match="at least one full-attention layer"):
        hf_with(**{rec: np.array([True] * 4 + [False])})
    # (rope.dimension_sections: qwen35.cpp's get_key_or_arr, required)
    for k in ("ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size",
              "rope.dimension_sections"):
        with pytest.raises(gguf_file.GGUFError, match=f"'qwen35.{k}' is missing"):
            hf_with(**{k: None})
    with pytest.raises(gguf_file.GGUFError, match="ssm.inner_size' = 62 is not a multiple"):
        hf_with(**{"ssm.inner_size": 62})
    hf = hf_with()
    assert (hf["linear_num_key_heads"], hf["linear_num_value_heads"], hf["linear_key_head_dim"],
            hf["linear_value_head_dim"], hf["linear_conv_kernel_dim"]) == (2, 4, 16, 16, 4)
    # Qwen3.5-MoE: the value heads' width from inner_size / time_step_rank (8), not state_size (16)
    _, _, files = _converted("qwen3_5_moe_text", tmp)
    g = gguf_file.read(files["f16"])
    assert (g.get("qwen35moe.ssm.state_size"), g.get("qwen35moe.ssm.inner_size")) == (16, 32)
    assert gguf_file.hf_config(g)["linear_value_head_dim"] == 8


@pytest.mark.parametrize("family", COHERE)
def test_cohere_file_config_and_bytes(tmp, family):
    """Command-R (llama.cpp's command-r) and Cohere2 (cohere2) files: one LayerNorm per layer (its eps from
    attention.layer_norm_epsilon), the head tied to token_embd, Command-R+'s per-head q/k norms stored
    [heads, head_dim], Cohere2's windowed layers; every stored byte on the HF name configs.tensor_shapes()
    gives it, and the cost model's weights the file's bytes."""
    from glmbench.predict import costmodel as cm
    hf_cfg, _, files = _converted(family, tmp)
    want = configs.from_hf(hf_cfg.to_dict(), "hf")
    for kind in ("f16", "q8_0", "split"):
        g = gguf_file.read(files[kind])
        arch = g.architecture
        assert arch == {"cohere": "command-r", "cohere2": "cohere2"}[family]
        with warnings.catch_warnings():
            warnings.simplefilter("error", gguf_file.GGUFNotice)   # nothing assumed
            cfg = configs.load(files[kind])
        assert cfg.model_type == family and cfg.n_layer_norms == want.n_layer_norms == 1
        assert cfg.tie_word_embeddings and "output.weight" not in g.tensors
        assert cfg.rms_norm_eps == want.rms_norm_eps == 1e-5 and f"{arch}.attention.layer_norm_rms_epsilon" not in g.metadata
        assert cfg.hf["logit_scale"] == hf_cfg.logit_scale
        assert cfg.rope_layout == want.rope_layout == "interleaved" and cfg.rope_dim == want.rope_dim == 16
        assert (cfg.qk_norm, cfg.qk_norm_all_heads) == (want.qk_norm, want.qk_norm_all_heads)
        if family == "cohere":
            assert cfg.qk_norm and cfg.qk_norm_all_heads
            assert cfg.windowed_layers == want.windowed_layers == () and cfg.sliding_window is None
        else:
            assert not cfg.qk_norm and f"{arch}.attention.sliding_window_pattern" not in g.metadata
            assert cfg.windowed_layers == want.windowed_layers == (0, 1, 2) and cfg.sliding_window == 8
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
        fw, shapes, ts, L = cfg.file_weights, cfg.tensor_shapes(), g.tensors, cfg.n_layers
        assert [n for n, _, _ in fw.tensors] == list(shapes)
        assert "lm_head.weight" not in shapes and not any("post_attention_layernorm" in n for n in shapes)
        # every stored byte once, each on its HF name
        assert fw.extra_bytes == fw.skipped_bytes == 0
        assert sum(b for _, _, b in fw.tensors) == fw.total_bytes == g.tensor_bytes
        by = fw.bytes_of()
        assert by["model.embed_tokens.weight"] == ts["token_embd.weight"].n_bytes
        assert by["model.norm.weight"] == ts["output_norm.weight"].n_bytes
        names = {"input_layernorm.weight": "attn_norm", "self_attn.q_proj.weight": "attn_q",
                 "self_attn.k_proj.weight": "attn_k", "self_attn.v_proj.weight": "attn_v",
                 "self_attn.o_proj.weight": "attn_output", "mlp.gate_proj.weight": "ffn_gate",
                 "mlp.up_proj.weight": "ffn_up", "mlp.down_proj.weight": "ffn_down"}
        for i in range(L):
            p = f"model.layers.{i}."
            for hf, n in names.items():
                assert by[p + hf] == ts[f"blk.{i}.{n}.weight"].n_bytes, (kind, hf)
            for x, heads in (("q", cfg.n_heads), ("k", cfg.n_kv_heads)):
                t = ts.get(f"blk.{i}.attn_{x}_norm.weight")
                if not cfg.qk_norm:
                    assert t is None and p + f"self_attn.{x}_norm.weight" not in shapes
                    continue
                # HF's CohereLayerNorm((heads, head_dim)) as stored; the config names it flat
                assert t.shape == (heads, cfg.head_dim) and shapes[p + f"self_attn.{x}_norm.weight"] == (heads * cfg.head_dim,)
                assert by[p + f"self_attn.{x}_norm.weight"] == t.n_bytes
        assert len(by) == len(ts)
        # priced as stored: one card's weights are the file's bytes
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        assert cm.memory(s, 1024).cards[0].weights == g.tensor_bytes
        if kind == "q8_0":
            assert fw.main_type == "Q8_0" and fw.weight_format == "q8_0"


def test_cohere_file_window_pattern_and_missing_keys(tmp):
    """Cohere2's windowed layers: the file's attention.sliding_window_pattern (one flag per layer, or every
    n-th layer global, 0: none) else llama.cpp's 4; a missing required key (layer_norm_epsilon, and
    cohere2's sliding_window and logit_scale, as llama.cpp's loader requires them) is a GGUFError naming it;
    command-r's logit_scale is optional (llama.cpp then scales no logits)."""
    _, _, files = _converted("cohere2", tmp)
    g = gguf_file.read(files["f16"])
    base = dict(g.metadata)

    hf_with = lc.hf_config_with

    def windowed(hf):
        return configs.from_hf(hf, "gguf").windowed_layers

    pat = "attention.sliding_window_pattern"
    hf = hf_with(g, base)
    assert hf["layer_types"] == ["sliding_attention"] * 3 + ["full_attention"] and windowed(hf) == (0, 1, 2)
    assert (hf["sliding_window"], hf["logit_scale"], hf["layer_norm_eps"]) == (8, 0.25, 1e-5)
    assert windowed(hf_with(g, base, **{pat: 2})) == (0, 2)
    assert windowed(hf_with(g, base, **{pat: 1})) == ()
    assert windowed(hf_with(g, base, **{pat: 0})) == (0, 1, 2, 3)
    assert windowed(hf_with(g, base, **{pat: np.array([True, False, True, True])})) == (0, 2, 3)
    with pytest.raises(gguf_file.GGUFError, match="one per layer"):
        hf_with(g, base, **{pat: np.array([True, False, True])})
    with pytest.raises(gguf_file.GGUFError, match="array of bools"):
        hf_with(g, base, **{pat: np.array([0.5, 1.0, 1.0, 1.0], np.float32)})
    for k in ("attention.layer_norm_epsilon", "attention.sliding_window", "logit_scale"):
        with pytest.raises(gguf_file.GGUFError, match=f"'cohere2.{k}' is missing"):
            hf_with(g, base, **{k: None})
    # command-r: the q/k norms come together; logit_scale optional, layer_norm_epsilon not
    _, _, files = _converted("cohere", tmp)
    g = gguf_file.read(files["f16"])
    base = dict(g.metadata)
    assert hf_with(g, base)["use_qk_norm"] is True
    assert hf_with(g, base, logit_scale=None)["logit_scale"] == 1.0
    with pytest.raises(gguf_file.GGUFError, match="'command-r.attention.layer_norm_epsilon' is missing"):
        hf_with(g, base, **{"attention.layer_norm_epsilon": None})
    del g.tensors["blk.0.attn_k_norm.weight"]
    with pytest.raises(gguf_file.GGUFError, match="'blk.0.attn_k_norm.weight' is missing"):
        hf_with(g, base)


def _copy_arch_metadata(g, w, prefix: str) -> None:
    """The keys of read file `g` under `prefix` (its architecture's) written by GGUFWriter `w`, each as
    its kind: arrays, bools, integers (uint32), floats (float32), strings."""
    for k, v in g.metadata.items():
        if not k.startswith(prefix):
            continue
        if isinstance(v, np.ndarray):
            w.add_array(k, v.tolist())
        elif isinstance(v, bool):
            w.add_bool(k, v)
        elif isinstance(v, int):
            w.add_uint32(k, v)
        elif isinstance(v, float):
            w.add_float32(k, v)
        else:
            w.add_string(k, str(v))


def test_qwen3next_file_with_in_proj_qkvz_whole(tmp):
    """llama.cpp's first qwen3next files keep in_proj_qkvz whole as ssm_in (its loader still takes them:
    src/models/qwen3next.cpp, "ssm_in is used by legacy GGUF"): the converter's file rewritten so reads as
    the same config with the same bytes, in_proj_qkvz's on ssm_in."""
    _, _, files = _converted("qwen3_next", tmp)
    g = gguf_file.read(files["f16"])
    path = os.path.join(tmp, "qwen3next-ssm_in-f16.gguf")
    w = gguf.GGUFWriter(path, "qwen3next")
    _copy_arch_metadata(g, w, "qwen3next.")
    n_fused = 0
    for name, t in g.tensors.items():
        typ = gguf.GGMLQuantizationType[t.type_name]
        if name.endswith(".attn_gate.weight"):
            continue
        if name.endswith(".attn_qkv.weight"):   # the linear layers' q/k/v rows, then their z rows
            z = name.replace("attn_qkv", "attn_gate")
            data = np.concatenate([np.asarray(g.tensor_data(name)), np.asarray(g.tensor_data(z))])
            w.add_tensor(name.replace("attn_qkv", "ssm_in"), data, raw_dtype=typ)
            n_fused += 1
        else:
            w.add_tensor(name, np.asarray(g.tensor_data(name)), raw_dtype=typ)
    gguf_writer.finish(w)
    c1, c2 = configs.load(files["f16"]), configs.load(path)
    assert n_fused == len(c1.linear_layers) == 3 and "blk.0.ssm_in.weight" in gguf_file.read(path).tensors
    assert dataclasses.replace(c2, name=c1.name, file_weights=c1.file_weights) == c1
    assert c2.file_weights.bytes_of() == c1.file_weights.bytes_of()
    assert (c2.file_weights.total_bytes, c2.file_weights.skipped_bytes, c2.file_weights.extra_bytes) == \
        (c1.file_weights.total_bytes, c1.file_weights.skipped_bytes, 0)
    # and runs: the fused rows gathered back as the split file's are, the same logits bit for bit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gguf_file.GGUFNotice)
        a = checkpoint.load_model(files["f16"], kv="f32", max_context=32).prefill(PROMPT)
        b = checkpoint.load_model(path, kv="f32", max_context=32).prefill(PROMPT)
    np.testing.assert_array_equal(a, b)
    # neither form: the error names both
    g2 = gguf_file.read(path)
    del g2.tensors["blk.1.ssm_in.weight"]
    with pytest.raises(gguf_file.GGUFError, match="'blk.1.ssm_in.weight' \\(or the split 'blk.1.attn_qkv.weight'"):
        gguf_file.file_weights(g2, c1.tensor_shapes(), c1.n_layers)


def test_gemma3_file_predicts_and_reads_back_hf_weights(tmp):
    """Gemma 3: the windowed layers from llama.cpp's pattern, the cost model, and the state dict
    with the converter's 1 + w norms undone."""
    from glmbench.predict import costmodel
    hf_cfg, hf, files = _converted("gemma3_text", tmp)
    p = files["f16"]
    cfg = configs.load(p)
    assert cfg.model_type == "gemma3_text" and cfg.windowed_layers == (0, 1, 2, 3, 4)
    assert cfg.sliding_window == 4
    s = costmodel.Setup(p, "rtx-3090")
    assert costmodel.memory(s, 1024).cards[0].kv > 0
    _, sd = _state_dict(p)
    own = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    for k in ("model.layers.0.input_layernorm.weight", "model.layers.1.self_attn.q_norm.weight", "model.norm.weight"):
        np.testing.assert_allclose(np.asarray(sd[k], np.float32), own[k], rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(sd["model.layers.0.mlp.gate_proj.weight"], np.float32),
                               own["model.layers.0.mlp.gate_proj.weight"], rtol=1e-3, atol=1e-3)


def test_split_parts_missing_or_not_first(tmp):
    _, _, files = _converted("qwen3", tmp)
    first = files["split"]
    g = gguf_file.read(first)
    assert g.get("split.count") == len(g.parts) > 1
    second = g.parts[1]
    with pytest.raises(gguf_file.GGUFError, match="give the first part") as e:
        gguf_file.read(second)
    assert second in str(e.value) and first in str(e.value)
    # a copy of the set without its last part: one error naming that part
    import shutil
    d = os.path.join(tmp, "partial")
    os.makedirs(d, exist_ok=True)
    for q in g.parts[:-1]:
        shutil.copy(q, d)
    missing = os.path.join(d, os.path.basename(g.parts[-1]))
    with pytest.raises(gguf_file.GGUFError, match="is missing") as e:
        configs.load(os.path.join(d, os.path.basename(first)))
    assert missing in str(e.value)


def test_glm_flash_router_is_assumed_with_a_notice(tmp):
    """The converter writes no expert_gating_func for GLM-4.7-Flash (its HF config has no
    scoring_func): the file is read with a sigmoid router and a notice saying so."""
    _, _, files = _converted("glm4_moe_lite", tmp)
    g = gguf_file.read(files["f16"])
    assert "deepseek2.expert_gating_func" not in g.metadata
    with pytest.warns(gguf_file.GGUFNotice, match="assumed sigmoid"):
        cfg = configs.load(files["f16"])
    assert cfg.router_scoring == "sigmoid" and cfg.topk_method == "noaux_tc"
    assert any("sigmoid" in n for n in cfg.hf["gguf_assumed"])
    _, _, files = _converted("deepseek_v2", tmp)
    with pytest.warns(gguf_file.GGUFNotice, match="assumed softmax"):
        cfg = configs.load(files["f16"])
    assert cfg.router_scoring == "softmax"


def test_phi3_file_fused_rows_and_window_as_llama_cpp_runs_it(tmp):
    """llama.cpp's converter fuses Phi-3's q/k/v (attn_qkv) and gate/up (ffn_up, 2F rows) and writes
    the config's window, which llama.cpp's phi3 model does not apply: the file is read with full
    attention (a notice says so), each HF tensor a row range of the fused one, its bytes that share."""
    cfg, model = _hf("phi3")
    cfg.sliding_window = 5
    folder = lc.save_hf(model, cfg, os.path.join(tmp, "phi3-window"))
    path = lc.convert(folder, os.path.join(tmp, "phi3-window-q8_0.gguf"), "q8_0")
    g = gguf_file.read(path)
    assert g.metadata["phi3.attention.sliding_window"] == 5 and "blk.0.attn_q.weight" not in g.tensors
    with pytest.warns(gguf_file.GGUFNotice, match="sliding_window"):
        c = configs.load(path)
    assert c.model_type == "phi3" and c.sliding_window is None and c.rope_dim == 12
    fw = c.file_weights.bytes_of()
    qkv, up = g.tensors["blk.0.attn_qkv.weight"], g.tensors["blk.0.ffn_up.weight"]
    p = "model.layers.0."
    assert sum(fw[p + f"self_attn.{x}_proj.weight"] for x in "qkv") == qkv.n_bytes
    assert fw[p + "mlp.gate_proj.weight"] == fw[p + "mlp.up_proj.weight"] == up.n_bytes // 2
    w = c.file_weights      # every stored byte counted once (the fused tensors' rows not thrice)
    assert sum(b for _, _, b in w.tensors) + w.extra_bytes + w.skipped_bytes == w.total_bytes == g.tensor_bytes
    _, sd = checkpoint.state_dict(path)
    q = sd[p + "self_attn.q_proj.weight"]
    assert q.fmt == "q8_0" and q.shape == (64, 64) and sd[p + "self_attn.v_proj.weight"].shape == (32, 64)
    np.testing.assert_array_equal(np.asarray(sd[p + "mlp.up_proj.weight"].data),
                                  np.asarray(g.tensor_data("blk.0.ffn_up.weight"))[96:])


def test_mixtral_file_with_one_tensor_per_expert(tmp):
    """The first Mixtral GGUFs (late 2023) stored each expert as its own tensor (blk.N.ffn_gate.E.weight;
    llama.cpp still loads them): the same file rewritten so reads as the converter's stacked one, the
    same weights as stored (q8_0 blocks), the same bytes."""
    _, _, files = _converted("mixtral", tmp)
    g = gguf_file.read(files["q8_0"])
    path = os.path.join(tmp, "mixtral-per-expert-q8_0.gguf")
    w = gguf.GGUFWriter(path, "llama")
    _copy_arch_metadata(g, w, "llama.")
    n_split = 0
    for name, t in g.tensors.items():
        data, typ = np.asarray(g.tensor_data(name)), gguf.GGMLQuantizationType[t.type_name]
        if "_exps." in name:
            for e in range(data.shape[0]):
                w.add_tensor(name.replace("_exps.weight", f".{e}.weight"), np.ascontiguousarray(data[e]), raw_dtype=typ)
            n_split += 1
        else:
            w.add_tensor(name, data, raw_dtype=typ)
    gguf_writer.finish(w)
    assert n_split == 3 * 2 and "blk.0.ffn_gate.7.weight" in gguf_file.read(path).tensors
    c1, sd1 = checkpoint.state_dict(files["q8_0"])
    c2, sd2 = checkpoint.state_dict(path)
    assert c2.model_type == c1.model_type == "mixtral" and c2.n_routed_experts == 8
    assert set(sd1) == set(sd2)
    for k in sd1:
        a, b = sd1[k], sd2[k]
        if hasattr(a, "fmt"):
            assert b.fmt == a.fmt and b.shape == a.shape, k
            np.testing.assert_array_equal(np.asarray(b.data), np.asarray(a.data))
        else:
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    assert c2.file_weights.bytes_of() == c1.file_weights.bytes_of()
    m1, m2 = (checkpoint.load_model(p, kv="f32", max_context=32) for p in (files["q8_0"], path))
    np.testing.assert_array_equal(m2.prefill(np.array(PROMPT)), m1.prefill(np.array(PROMPT)))


def _measure(capsys, path, out, *args):
    """`glmbench measure path -q *args --out out`: it exits 0; the records it wrote."""
    from glmbench.cli import main
    rc = main(["measure", path, "-q", *args, "--out", out])
    assert rc == 0, capsys.readouterr().err
    with open(out) as f:
        recs = json.load(f)
    return recs["records"] if isinstance(recs, dict) else recs


def test_measure_runs_a_converted_tied_q8_0_split_file(tmp, capsys):
    """`glmbench measure` on a split q8_0 file with tied embeddings (the head shares the embedding's
    QTensor): prefill and decode points, every call after the first included."""
    _, _, files = _converted("qwen2_tied", tmp)
    out = os.path.join(tmp, "measured.json")
    recs = _measure(capsys, files["split"], out, "--depths", "16", "--n-prompt", "8", "--n-gen", "3", "--repeats", "2")
    assert {r["test"] for r in recs} >= {"pp", "tg"}
    assert all(r["weights"] == "q8_0" and r["avg_ts"] > 0 for r in recs if r["test"] in ("pp", "tg"))
    assert not any("model_assumed" in r for r in recs)
    # a GLM-4.7-Flash file without expert_gating_func: the record says which router was assumed
    _, _, files = _converted("glm4_moe_lite", tmp)
    out = os.path.join(tmp, "measured-glm.json")
    with pytest.warns(gguf_file.GGUFNotice):
        recs = _measure(capsys, files["q8_0"], out, "--depths", "8", "--n-gen", "2", "--repeats", "1")
    assert recs and all("assumed sigmoid routing" in r["model_assumed"] for r in recs)


def test_gpt_oss_file_predicts_and_measures(tmp, capsys):
    from glmbench.predict import costmodel
    _, _, files = _converted("gpt_oss", tmp)
    for kind in ("f16", "q8_0"):
        cfg = configs.load(files[kind])
        assert cfg.model_type == "gpt_oss" and cfg.windowed_layers == (0,) and cfg.attention_sinks
        assert cfg.forward_unsupported() == []   # Model runs it (test_converted_file_matches_hf)
        s = costmodel.Setup(files[kind], "rtx-3090")
        assert costmodel.memory(s, 1024).cards[0].weights > 0
    # the HF folder the files came from runs as stored too (gate_up_proj [E, D, 2F] interleaved, router)
    _, hf, _ = _converted("gpt_oss", tmp)
    m = checkpoint.load_model(os.path.join(tmp, "gpt_oss"), kv="f32", max_context=32)
    errs = [rel_err(a, b) for a, b in zip(_glm_logits(m), hf_logits(hf, PROMPT, STEPS))]
    assert max(errs) < RTOL, errs
    # `glmbench measure` runs it (depth 16: past the window of 8)
    out = os.path.join(tmp, "measured-gpt-oss.json")
    recs = _measure(capsys, files["q8_0"], out, "--depths", "16", "--n-prompt", "8", "--n-gen", "3", "--repeats", "1")
    assert {r["test"] for r in recs} >= {"pp", "tg"}
    assert all(r["weights"] == "q8_0" and r["avg_ts"] > 0 for r in recs if r["test"] in ("pp", "tg"))


def test_qwen3_vl_moe_files_run_and_a_transposed_conversion_is_named(tmp_path):
    """Qwen3-VL-MoE (llama.cpp's qwen3vlmoe: the text model's tensors). conversion/qwen3vl.py takes the experts as
    the released checkpoints hold them (gate_up_proj [E, D, 2F], down_proj [E, F, D]) and transposes them; a folder
    saved by transformers 5.25 holds its model's [E, 2F, D] / [E, D, F], so the converter writes ffn_down_exps
    transposed (gate / up split on the wrong axis): a file llama.cpp's loader refuses (wrong shape), and glmbench
    said only "expert shape mismatch". It now says why. The released layout's file loads and matches HF's
    logits; so does the released-layout folder itself (glmbench refused it: transformers transposes the experts
    on loading, conversion_mapping's Transpose(1, 2, check_dims=True), as glmbench now does); and either folder ran
    with Qwen3-MoE's default norm_topk_prob False where HF's Qwen3VLMoeTextTopKRouter always renormalizes (logits
    6% off)."""
    import torch
    import transformers
    from safetensors.torch import load_file, save_file
    from test_vl_wrappers import WRAPPERS
    kw = json.loads(json.dumps(WRAPPERS["qwen3_vl_moe"][0]))
    kw["text_config"]["moe_intermediate_size"] = 24          # 2F = 48, not D = 32: every layout is told apart
    cfg = transformers.AutoConfig.for_model("qwen3_vl_moe", **kw)
    cfg._attn_implementation = cfg.text_config._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.Qwen3VLMoeForConditionalGeneration(cfg).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0, 0.3)
    saved = lc.save_hf(hf, cfg, tmp_path / "saved")               # transformers 5.25's own layout
    released = lc.save_hf(hf, cfg, tmp_path / "released")
    sd = load_file(os.path.join(released, "model.safetensors"))
    for k in sd:
        if k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            sd[k] = sd[k].transpose(1, 2).contiguous()
    save_file(sd, os.path.join(released, "model.safetensors"), metadata={"format": "pt"})
    f_saved, f_released = lc.convert_folders([(saved, tmp_path / "saved.gguf", "f16", None),
                                              (released, tmp_path / "released.gguf", "f16", None)])
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(f_saved)
    msg = str(e.value)
    assert "_exps.weight" in msg and "experts are transposed" in msg and "transformers 5.x" in msg
    assert "llama.cpp's qwen3vlmoe loader refuses the file too" in msg
    prompt = [3, 17, 42, 5, 9, 1, 7]                            # (the vocabulary is 96 tokens)
    _run = lambda m: [m.prefill(np.array(prompt))] + [m.decode(t) for t in STEPS]
    want = hf_logits(hf, prompt, STEPS)
    for folder in (saved, released):      # both layouts of the folder run
        m = checkpoint.load_model(folder, kv="f32", max_context=32)
        errs = [rel_err(a, b) for a, b in zip(_run(m), want)]
        assert max(errs) < RTOL, (folder, errs)
    c = configs.load(f_released)
    assert c.model_type == "qwen3_moe" and c.n_routed_experts == 4 and c.moe_intermediate_size == 24
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gguf_file.GGUFNotice)
        m = checkpoint.load_model(f_released, kv="f32", max_context=32)
    with torch.no_grad():                 # HF with the file's f16 matrices (the router stays f32 in the file)
        for n, p in hf.named_parameters():
            if p.ndim >= 2 and not n.endswith("mlp.gate.weight"):
                p.copy_(p.half().float())
    errs = [rel_err(a, b) for a, b in zip(_run(m), hf_logits(hf, prompt, STEPS))]
    assert max(errs) < RTOL, errs


def test_deepseek_v32_file_without_expert_gating_func_is_refused_as_llama_cpp_does(tmp_path):
    """DeepSeek-V3.2 (llama.cpp's deepseek32). The converter writes expert_gating_func only from config.json's
    scoring_func, which transformers' DeepseekV32Config does not save; llama.cpp's deepseek32 loader reads the key
    with get_key and no default (required: "key not found in model"), so such a file loads in neither. glmbench said
    only "deepseek32 needs it"; it now says llama.cpp refuses the file too and what to add. The folder with the released
    config's scoring_func "sigmoid" converts to a file priced as the folder is."""
    import shutil
    import torch
    import transformers
    from test_gguf_dsa import TINY as DSA
    from glmbench.predict import costmodel as cm
    cfg = transformers.DeepseekV32Config(**DSA)
    torch.manual_seed(0)
    saved = lc.save_hf(transformers.DeepseekV32ForCausalLM(cfg).eval(), cfg, tmp_path / "saved")
    released = str(tmp_path / "released")
    shutil.copytree(saved, released)
    with open(os.path.join(released, "config.json")) as f:
        d = json.load(f)
    assert "scoring_func" not in d
    with open(os.path.join(released, "config.json"), "w") as f:
        json.dump(dict(d, scoring_func="sigmoid"), f)
    f_saved, f_released = lc.convert_folders([(saved, tmp_path / "saved.gguf", "f16", None),
                                              (released, tmp_path / "released.gguf", "f16", None)])
    assert "deepseek32.expert_gating_func" not in gguf_file.read(f_saved).metadata
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(f_saved)
    msg = str(e.value)
    assert "'deepseek32.expert_gating_func' is missing" in msg and "refuses the file too" in msg
    assert "scoring_func" in msg and "sigmoid" in msg
    assert gguf_file.read(f_released).metadata["deepseek32.expert_gating_func"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gguf_file.GGUFNotice)
        c = configs.load(f_released)
    want = configs.load(released)
    assert c.model_type == want.model_type == "deepseek_v32"
    assert c.total_params() == want.total_params()
    assert c.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
    assert cm.decode(cm.Setup(c, "rtx-3090", runtime="llama.cpp"), 1024).seconds > 0
