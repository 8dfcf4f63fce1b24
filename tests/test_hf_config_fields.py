"""Optional config.json fields of real checkpoints, against HF transformers: a tiny random model built by transformers,
written by save_pretrained (the names and config.json a real folder holds), loaded the way `glmbench measure <folder>`
loads it (checkpoint.load_model), its logits compared with HF's; or, where glmbench does not run what HF runs, one
ValueError naming the field. Each case here was a silent mismatch or a refused real checkpoint before its fix."""
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="HF oracle tests need torch (pip install torch==2.13.0, CPU build)")
transformers = pytest.importorskip("transformers", reason="HF oracle tests need transformers")

from hf_oracle import assert_close_by_step, hf_logits, glm_logits, random_model  # noqa: E402
from test_model_hf import TINY  # noqa: E402

from glmbench.models import checkpoint, configs, gguf_file  # noqa: E402

pytestmark = pytest.mark.slow
RTOL = 1e-4


def _saved(tmp_path, model_type, seed=0, edit=None, **over):
    """(HF's model, the folder it was saved to): TINY[model_type] with `over`, written by save_pretrained; `edit`
    rewrites the folder's config.json (a dict -> dict) and HF's model is then the one it loads from the folder."""
    hc = transformers.AutoConfig.for_model(model_type, **{**TINY[model_type], **over})
    hf = random_model(hc, seed)
    hf.save_pretrained(str(tmp_path))
    if edit is not None:
        p = tmp_path / "config.json"
        p.write_text(json.dumps(edit(json.loads(p.read_text()))))
        hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), attn_implementation="eager",
                                                               dtype=torch.float32).eval()
    return hf, tmp_path


def _check(hf, folder, label, prompt_len=14, steps=4):
    m = checkpoint.load_model(str(folder), kv="f32", max_context=64)
    rng = np.random.default_rng(7)
    prompt = rng.integers(0, m.config.vocab_size, prompt_len).tolist()
    st = rng.integers(0, m.config.vocab_size, steps).tolist()
    assert_close_by_step(glm_logits(m, prompt, st), hf_logits(hf, prompt, st), RTOL, label)
    return m


# ---- Mixtral / Phi-3.5-MoE: the released files' block_sparse_moe names ---------------------------------------------
@pytest.mark.parametrize("model_type", ["mixtral", "phimoe"])
def test_block_sparse_moe_folders_load_and_match_hf(tmp_path, model_type):
    """transformers 5 writes Mixtral's and Phi-3.5-MoE's experts back under the released checkpoints' names
    (block_sparse_moe.gate, block_sparse_moe.experts.E.w1 / w2 / w3: conversion_mapping); such a folder was refused
    ("`state_dict` has no experts for layer 0"), so no real Mixtral-8x7B / Phi-3.5-MoE folder could be measured."""
    hf, folder = _saved(tmp_path, model_type)
    names = checkpoint.read_safetensors(str(folder / "model.safetensors"))
    assert "model.layers.0.block_sparse_moe.experts.0.w1.weight" in names   # (the released names, as stored)
    _check(hf, folder, model_type)
    # the folder's bytes are priced under the config's tensors they make, not at a guessed dtype
    cfg = configs.load(str(folder))
    shapes = cfg.tensor_shapes()
    assert gguf_file._stored_owner("model.layers.1.block_sparse_moe.experts.3.w1.weight", shapes) == \
        ["model.layers.1.mlp.experts.gate_proj"]
    assert gguf_file._stored_owner("model.layers.1.block_sparse_moe.experts.3.w3.weight", shapes) == \
        ["model.layers.1.mlp.experts.up_proj"]
    assert gguf_file._stored_owner("model.layers.1.block_sparse_moe.experts.3.w2.weight", shapes) == \
        ["model.layers.1.mlp.experts.down_proj"]
    assert gguf_file._stored_owner("model.layers.1.block_sparse_moe.gate.weight", shapes) == \
        ["model.layers.1.mlp.gate.weight"]
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"


# ---- partial_rotary_factor -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_type", ["qwen3", "qwen2", "mistral", "olmo2", "hunyuan_v1_dense"])
def test_partial_rotary_factor_of_a_whole_head_family_is_refused(tmp_path, model_type):
    """These families' HF rotary embedding turns the whole head whatever partial_rotary_factor says (HF runs the
    folder below rotating all 16 dims); glmbench rotated half of each head: logits 50-150% off, silently. Now one
    ValueError naming the field."""
    rp = {**TINY[model_type]["rope_parameters"], "partial_rotary_factor": 0.5}
    hf, folder = _saved(tmp_path, model_type, rope_parameters=rp)
    assert hf.model.rotary_emb.inv_freq.numel() == 8      # HF: 16 rotated dims (head_dim 16), not 8
    with pytest.raises(ValueError, match=rf"`partial_rotary_factor` = 0\.5: HF's {model_type} rotates the whole head"):
        checkpoint.load_model(str(folder), kv="f32", max_context=64)
    # (the top-level v4 field alike)
    with pytest.raises(ValueError, match=r"`partial_rotary_factor` = 0\.5"):
        configs.load({**TINY[model_type], "model_type": model_type, "partial_rotary_factor": 0.5})


def test_partial_rotary_factor_where_hf_applies_it_still_runs():
    for mt in ("phi3", "glm", "nemotron", "glm4_moe"):
        cfg = configs.load({**TINY[mt], "model_type": mt})
        assert cfg.rope_dim < cfg.head_dim


def test_partial_rotary_factor_in_rope_parameters_wins_over_the_top_level_one(tmp_path):
    """HF (convert_rope_params_to_dict) takes rope_parameters' own partial_rotary_factor before a top-level one;
    glmbench took the top-level one (Phi-4-mini-like 0.75 in rope_parameters, a stray 0.5 at the top: 12 dims rotated
    by HF, 8 by glmbench)."""
    hf, folder = _saved(tmp_path, "phi3", edit=lambda cj: {**cj, "partial_rotary_factor": 0.5})
    assert hf.config.rope_parameters["partial_rotary_factor"] == 0.75
    m = _check(hf, folder, "phi3 with both factors")
    assert m.config.rope_dim == 12


def test_a_gguf_reading_keeps_its_rotated_dims():
    """A GGUF's rope.dimension_count is llama.cpp's rotated dims in any architecture (gguf_file.hf_config writes it
    as partial_rotary_factor): read as it, not refused."""
    d = {**TINY["llama"], "model_type": "llama", "partial_rotary_factor": 0.5,
         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}
    assert configs.from_hf(d, "x", gguf=True).rope_dim == 8
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        configs.from_hf(d, "x")


# ---- rope_theta: rope_parameters' own first ---------------------------------------------------------------------------
def test_rope_parameters_theta_wins_over_a_top_level_rope_theta(tmp_path):
    """A config.json with both rope_parameters.rope_theta and a (stale) top-level rope_theta: HF turns by the former
    (convert_rope_params_to_dict: setdefault); glmbench turned by the latter."""
    hf, folder = _saved(tmp_path, "qwen3", edit=lambda cj: {**cj, "rope_theta": 7.0})
    assert hf.config.rope_parameters["rope_theta"] == 1e6
    m = _check(hf, folder, "qwen3 with two thetas")
    assert m.config.rope_theta == 1e6


# ---- Qwen sliding windows -------------------------------------------------------------------------------------------
def test_qwen3_moe_window_is_on_every_layer(tmp_path):
    """HF's Qwen3-MoE (transformers 5.25) windows every layer where use_sliding_window (Qwen3MoeConfig has no
    max_window_layers); glmbench windowed only the layers from max_window_layers on, as Qwen2 / Qwen3: prefill
    logits ~100% off past the window."""
    hf, folder = _saved(tmp_path, "qwen3_moe", use_sliding_window=True, sliding_window=4, max_window_layers=1)
    m = _check(hf, folder, "qwen3_moe windowed")
    assert m.config.windowed_layers == (0, 1) and m.config.sliding_window == 4


@pytest.mark.parametrize("model_type", ["qwen3", "qwen2_moe"])
@pytest.mark.parametrize("layers", [4, 30])
def test_qwen_windowed_layers_are_hfs(model_type, layers):
    """use_sliding_window without max_window_layers or layer_types: the layers HF's config windows (its layer_types;
    the default max_window_layers 28). Qwen3: those from 28 on, where glmbench windowed none (no default); Qwen2-MoE
    (priced): its own rule, the even layers below max_window_layers, where glmbench windowed none / those from
    max_window_layers on, pricing the KV cache of the wrong layers."""
    base = {**TINY["qwen3_moe" if model_type == "qwen2_moe" else model_type], "num_hidden_layers": layers,
            "use_sliding_window": True, "sliding_window": 4}
    if model_type == "qwen2_moe":
        base.update(shared_expert_intermediate_size=32)
    hc = transformers.AutoConfig.for_model(model_type, **base)
    want = tuple(i for i, t in enumerate(hc.layer_types) if t == "sliding_attention")
    assert want or (model_type == "qwen3" and layers < 28)   # (30 Qwen3 layers: 28, 29; Qwen2-MoE: the even ones)
    cfg = configs.load({**base, "model_type": model_type})
    assert cfg.windowed_layers == want and cfg.sliding_window == 4


# ---- Gemma 3's sliding layers' rope ------------------------------------------------------------------------------------
def _gemma3(**over):
    import test_model_hf as T
    return {**T.GEMMA3, **over}


def test_gemma3_sliding_rope_scaling_is_refused():
    """HF's Gemma 3 turns its sliding layers by rope_parameters.sliding_attention, a scaling there too; glmbench's
    local layers turn by plain rope by its base: a linear-scaled local rope ran unscaled (logits ~100% off). Now
    one ValueError naming the field."""
    rp = {"full_attention": {"rope_type": "default", "rope_theta": 1e4},
          "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e3}}
    with pytest.raises(ValueError, match=r"`rope_parameters.sliding_attention.rope_type` = 'linear'"):
        configs.load({**_gemma3(rope_parameters=rp), "model_type": "gemma3_text"})


def test_gemma3_sliding_theta_wins_over_rope_local_base_freq(tmp_path):
    """Gemma3TextConfig sets rope_parameters.sliding_attention.rope_theta only where it has none
    (setdefault(rope_local_base_freq)): a config.json with both turns the sliding layers by the former."""
    import test_model_hf as T
    TINY["gemma3_text"] = T.GEMMA3
    try:
        hf, folder = _saved(tmp_path, "gemma3_text", seed=3, edit=lambda cj: {**cj, "rope_local_base_freq": 50.0})
    finally:
        TINY.pop("gemma3_text")
    assert hf.config.rope_parameters["sliding_attention"]["rope_theta"] == 1e4
    m = _check(hf, folder, "gemma3 with two local bases")
    assert m.config.rope_local_theta == 1e4


# ---- DeepSeek-V2 / V3 / GLM-4.5's MoE layers: first_k_dense_replace only, as HF ------------------------------------------
def _meta_params(hc):
    from hf_meta import meta_model
    m, n = meta_model(hc)
    return n + sum(b.numel() for k, b in m.named_buffers() if "e_score" in k)


@pytest.mark.parametrize("model_type", ["deepseek_v2", "deepseek_v3"])
def test_moe_layer_freq_other_than_one_is_refused(model_type):
    """transformers 5.25's DeepSeek-V2 / V3 put the MoE on every layer from first_k_dense_replace on whatever
    moe_layer_freq says; glmbench followed the remote code's every freq-th layer: with 2 it priced a third fewer
    parameters than the checkpoint holds, and its folder was refused for a dense MLP it lacks ('`state_dict` lacks
    ...mlp.gate_proj.weight'). Now one ValueError naming the field; 1 (the released value) as before."""
    d = {**TINY[model_type], "model_type": model_type}
    with pytest.raises(ValueError, match=r"`moe_layer_freq` = 2: HF's"):
        configs.load({**d, "moe_layer_freq": 2})
    cfg = configs.load({**d, "moe_layer_freq": 1})
    hc = transformers.AutoConfig.for_model(model_type, **{**TINY[model_type], "moe_layer_freq": 2})
    assert cfg.total_params() == _meta_params(hc)     # (HF's model of freq 2 is freq 1's)


@pytest.mark.parametrize("model_type", ["deepseek_v3", "glm4_moe"])
def test_mlp_layer_types_where_hf_reads_none(model_type):
    """DeepSeek-V3 / GLM-4.5 (HF: no mlp_layer_types field; MoE from first_k_dense_replace on): glmbench followed a
    config's mlp_layer_types (dense, sparse, dense: layer 2 priced and run dense where HF's model has experts). Now
    one that disagrees is refused naming it; one that agrees is read as first_k_dense_replace."""
    d = {**TINY[model_type], "model_type": model_type}
    with pytest.raises(ValueError, match=rf"`mlp_layer_types` = \['dense', 'sparse', 'dense'\]: HF's {model_type}"):
        configs.load({**d, "mlp_layer_types": ["dense", "sparse", "dense"]})
    cfg = configs.load({**d, "mlp_layer_types": ["dense", "sparse", "sparse"]})
    assert cfg.moe_layers == (1, 2)
    hc = transformers.AutoConfig.for_model(model_type, **TINY[model_type])
    assert cfg.total_params() == _meta_params(hc)
    # (GLM-4.7-Flash's glm4_moe_lite reads it: HF's Glm4MoeLiteDecoderLayer)
    lite = configs.load({**TINY["glm4_moe_lite"], "model_type": "glm4_moe_lite",
                         "mlp_layer_types": ["dense", "sparse", "dense"]})
    assert lite.moe_layers == (1,)


# ---- Gemma 4: per_layer_config as HF writes it -----------------------------------------------------------------------------
def test_gemma4_per_layer_config_without_head_dim_is_the_layer_wide_one():
    """HF's saved Gemma 4 config.json holds per_layer_config (the global layers' overrides) with only the fields that
    differ from the layer-wide ones: global layers whose head dim equals head_dim have no head_dim there. glmbench read
    that as Gemma4TextConfig's default global_head_dim 512: 2.9x HF's parameters in this tiny model."""
    from test_configs import _hf_tiny
    d, _ = _hf_tiny("gemma4_text")
    base = {k: v for k, v in d.items() if k not in ("model_type", "transformers_version", "architectures")}
    saved = transformers.AutoConfig.for_model("gemma4_text", **{**base, "head_dim": 16}).to_dict()
    assert "global_head_dim" not in saved and all("head_dim" not in v for v in saved["per_layer_config"].values())
    hc = transformers.AutoConfig.for_model("gemma4_text", **{k: v for k, v in saved.items() if k != "model_type"})
    from hf_meta import meta_model
    m, n = meta_model(hc)
    n += sum(b.numel() for k, b in m.named_buffers() if k.endswith("layer_scalar"))
    cfg = configs.load(saved)
    assert cfg.layer_head_dim(cfg.n_layers - 1) == 16
    assert sum(configs._numel(s) for s in cfg.tensor_shapes().values()) == n


# ---- tie_word_embeddings where HF never ties ------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["kimi_linear", "nemotron_h"])
def test_tie_word_embeddings_where_hf_never_ties(family):
    """KimiLinearForCausalLM and NemotronHForCausalLM tie nothing (_tied_weights_keys = {}): a config stating
    tie_word_embeddings true still builds (and saves) its own lm_head; glmbench priced none."""
    if family == "kimi_linear":
        from test_configs import _hf_tiny
        d, _ = _hf_tiny("kimi_linear")
        d = {k: v for k, v in d.items() if k not in ("model_type", "transformers_version", "architectures")}
    else:
        from test_mamba_hybrid import NEM
        d = dict(NEM, hybrid_override_pattern="M*M-")
    hc = transformers.AutoConfig.for_model(family, **{**d, "tie_word_embeddings": True})
    from hf_meta import meta_model
    m, n = meta_model(hc)
    n += sum(b.numel() for k, b in m.named_buffers() if k.endswith("e_score_correction_bias"))
    cfg = configs.load(hc.to_dict())
    assert not cfg.tie_word_embeddings and cfg.total_params() == n
