"""AFMoE (afmoe: Arcee's Trinity, transformers 5.25's modeling_afmoe): per-head q / k RMSNorm, a sigmoid output gate
from the attention's own gate_proj, windows on the sliding layers of layer_types with rope there only (the full
layers NoPE), Gemma's four norms per layer (plain weights), dense first layers then a sigmoid MoE (expert_bias
choosing, renormalised, times route_scale) beside shared experts, mup_enabled's scaled embeddings. Parameter counts
against HF's meta-device models, HF's config-class defaults, the fields refused, GGUF files laid out as llama.cpp's
converter writes them (conversion/afmoe.py; written here with the gguf package), HF folders as transformers saves
them, the built-in trinity-mini, llama-bench's rows for it and CudaModel's refusal. (Logits against HF's tiny model:
tests/test_model_hf.py; the files llama.cpp's converter makes: tests/test_converted_gguf.py.)

Nemotron (nemotron: NVIDIA Nemotron-4 / Minitron / Nemotron-Mini, transformers 5.25's modeling_nemotron): Llama's
attention with partial rotary, LayerNorm1P (weight + 1, with a bias) and the ungated relu2 MLP; the same checks, and
the built-ins nemotron-mini-4b and llama-3.1-minitron-4b (a Llama)."""
import os

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_meta  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402

# eight layers: every 4th full attention (NoPE), the others windowed by 8 tokens; a dense layer, then seven MoE
# (8 experts, top-2, x 2.5) beside one shared expert's width
_A = dict(model_type="afmoe", vocab_size=128, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
          num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
          num_experts_per_tok=2, num_shared_experts=1, num_dense_layers=1, route_scale=2.5, sliding_window=8,
          global_attn_every_n_layers=4, rms_norm_eps=1e-5, max_position_embeddings=4096, mup_enabled=True)


def _hc(**kw):
    transformers = pytest.importorskip("transformers")
    d = {k: v for k, v in {**_A, **kw}.items() if k != "model_type"}
    return transformers.AutoConfig.for_model("afmoe", **d)


# ---- configs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(num_dense_layers=0, num_shared_experts=2), dict(num_dense_layers=8),
                                dict(num_key_value_heads=None, head_dim=32), dict(sliding_window=None),
                                dict(tie_word_embeddings=True)])
def test_parameters_equal_the_hf_model(kw):
    hc = _hc(**kw)
    m, n = hf_meta.meta_model(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == "afmoe" and cfg.total_params() == n
    assert sum(configs._numel(s) for s in cfg.tensor_shapes().values()) == n
    assert cfg.forward_unsupported() == []
    nd = kw.get("num_dense_layers", 1)
    assert cfg.moe_layers == tuple(range(nd, 8))
    # the gate: its own matrix as wide as q_proj, priced as Qwen3-Next's output gate
    shapes = cfg.tensor_shapes()
    H, Dh = cfg.n_heads, cfg.head_dim
    assert cfg.attn_output_gate and shapes["model.layers.0.self_attn.gate_proj.weight"] == (H * Dh, 64)
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (H * Dh, 64)
    assert cfg.n_layer_norms == 4 and "model.layers.0.post_feedforward_layernorm.weight" in shapes
    # rope on the sliding layers only; the window where sliding_window is set
    assert cfg.nope_layers == (3, 7)
    assert cfg.windowed_layers == ((0, 1, 2, 4, 5, 6) if kw.get("sliding_window", 8) else ())
    assert not any(cfg.layer_rotates(i) for i in (3, 7)) and all(cfg.layer_rotates(i) for i in (0, 1, 2, 4))


def test_hf_config_class_defaults():
    transformers = pytest.importorskip("transformers")
    c = configs.load(transformers.AfmoeConfig().to_dict())
    # AfmoeConfig(): 32 layers of 2048, 16 heads (KV heads default to them) of 128, 64 experts top-6 of 1408 beside
    # 2 shared, one dense layer of 6144, every 4th layer global, windows of 1024, untied
    assert (c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab_size) == (32, 2048, 16, 16, 128, 200192)
    assert (c.n_routed_experts, c.n_experts_per_tok, c.moe_intermediate_size, c.shared_expert_intermediate_size) == \
        (64, 6, 1408, 2 * 1408)
    assert c.moe_layers == tuple(range(1, 32)) and c.intermediate_size == 6144 and not c.tie_word_embeddings
    assert c.sliding_window == 1024 and c.nope_layers == tuple(range(3, 32, 4))
    assert (c.router_scoring, c.router_bias, c.norm_topk_prob, c.routed_scaling_factor, c.n_group) == \
        ("sigmoid", True, True, 1.0, 1)
    assert c.embedding_multiplier is None      # mup_enabled false
    m, n = hf_meta.meta_model(transformers.AfmoeConfig())
    assert c.total_params() == n
    # a config's own layer_types win over global_attn_every_n_layers
    lt = ["sliding_attention", "full_attention"] * 4
    c2 = configs.load(_hc(layer_types=lt).to_dict())
    assert c2.nope_layers == (1, 3, 5, 7) and c2.windowed_layers == (0, 2, 4, 6)
    assert configs.load(_hc().to_dict()).embedding_multiplier == pytest.approx(8.0)   # sqrt(64)


@pytest.mark.parametrize("change,match", [
    (dict(route_norm=False), r"`route_norm` = False: HF's AFMoE always renormalises"),
    (dict(score_func="softmax"), r"`score_func` = 'softmax': HF's AFMoE routes with sigmoid"),
    (dict(partial_rotary_factor=0.5), r"`partial_rotary_factor` = 0.5: HF's AFMoE rotates the whole head"),
    (dict(num_dense_layers=None), r"`num_dense_layers` must be an integer"),
    (dict(num_experts_per_tok=9), r"`num_experts_per_tok`=9 is larger than the 8 routed experts"),
    (dict(layer_types=["sliding_attention"] * 3), r"`layer_types` must list"),
    (dict(global_attn_every_n_layers=0), r"`global_attn_every_n_layers` must be >= 1"),
    (dict(route_scale=float("nan")), r"`route_scale` must be a finite number"),
])
def test_bad_fields_are_named(change, match):
    d = {k: v for k, v in _A.items()}
    d.update(change)
    with pytest.raises(ValueError, match=match):
        configs.from_hf(d)


def test_priced_windows_gate_and_nope():
    c = configs.from_hf(_A, "afmoe-tiny")
    s = cm.Setup(c, "rtx-3090", weights="f16")
    assert cm.decode(s, 100).tok_s > 0 and cm.prefill(s, 64, 10).tok_s > 0 and cm.memory(s, 100).fits
    # the windowed layers hold fewer cells than the full ones at a long context
    full = configs.from_hf({**_A, "sliding_window": None}, "afmoe-full")
    assert cm.memory(s, 4000).kv < cm.memory(cm.Setup(full, "rtx-3090", weights="f16"), 4000).kv
    # the gate priced as Qwen3-Next's: its matrix read with q / k / v (8 layers x 64 x 64 f16) and its output written,
    # the sigmoid times the attention's output
    import dataclasses
    ops = lambda cfg: cm.decode(cm.Setup(cfg, "rtx-3090", weights="f16"), 100).ops
    ungated = dataclasses.replace(c, attn_output_gate=False)
    assert "self_attn.gate_proj.weight" not in str(ungated.tensor_shapes())
    qkv = lambda o: sum(x.bytes for x in o if x.name == "attn.qkv")
    assert qkv(ops(c)) - qkv(ops(ungated)) == 8 * (64 * 64 * 2 + 64 * cm.ACT_BYTES)   # the matrix, its output row
    assert any(x.name == "attn.gate" for x in ops(c)) and not any(x.name == "attn.gate" for x in ops(ungated))
    assert c.cost_shape() != configs.from_hf({**_A, "model_type": "afmoe", "num_shared_experts": 0}).cost_shape()


# ---- GGUF --------------------------------------------------------------------------------------------------------
# conversion/afmoe.py AfmoeModel (LlamaModel's keys plus its own): the dense MLP's width as feed_forward_length, the
# experts' as expert_feed_forward_length, route_norm / route_scale as expert_weights_norm / _scale, sliding_window
_MOE_KEYS = {"feed_forward_length": 96, "expert_count": 8, "expert_used_count": 2, "expert_feed_forward_length": 32,
             "expert_shared_count": 1, "leading_dense_block_count": 1, "expert_weights_scale": 2.5,
             "expert_weights_norm": True, "attention.sliding_window": 8, "attention.key_length": 16,
             "attention.value_length": 16}


def _write(path, drop=(), hc=None, **extra):
    return gguf_writer.write_synth(path, hc or _A, "afmoe", _MOE_KEYS, drop, extra)


def test_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "afmoe.gguf")
    want = _write(p)
    cfg, names = gguf_writer.read_back(p, want)
    assert cfg.embedding_multiplier == pytest.approx(8.0)   # llama.cpp's afmoe always scales the embeddings
    assert {"blk.0.attn_gate.weight", "blk.0.post_attention_norm.weight", "blk.0.ffn_norm.weight",
            "blk.0.post_ffw_norm.weight", "blk.1.exp_probs_b.bias", "blk.1.ffn_gate_shexp.weight"} <= names
    # no window: every layer full length, still NoPE every 4th (llama.cpp's fixed step)
    p2 = str(tmp_path / "nowindow.gguf")
    _write(p2, hc={**_A, "sliding_window": None}, drop=("attention.sliding_window",))
    c2 = gguf_writer.load_stated(p2)
    assert c2.windowed_layers == () and c2.nope_layers == (3, 7)


def test_file_gating_norm_pattern_and_missing_keys(tmp_path):
    p = str(tmp_path / "softmax.gguf")
    _write(p, **{"expert_gating_func": 1})
    with pytest.raises(gguf_file.GGUFError, match=r"'afmoe.expert_gating_func' = 1 is not 2 \(sigmoid\)"):
        configs.load(p)
    # no expert_weights_norm (config.json without route_norm): llama.cpp does not renormalise, HF does: a notice
    p = str(tmp_path / "nonorm.gguf")
    want = _write(p, drop=("expert_weights_norm",))
    with pytest.warns(gguf_file.GGUFNotice, match=r"'afmoe.expert_weights_norm' is absent or false"):
        c = configs.load(p)
    assert gguf_writer.config_diff(c, want) == {} and c.norm_topk_prob
    # windows llama.cpp puts elsewhere than its NoPE step: HF's AFMoE cannot run that
    p = str(tmp_path / "pattern.gguf")
    _write(p, **{"attention.sliding_window_pattern": 2})
    with pytest.raises(gguf_file.GGUFError, match=r"are not the layers llama.cpp's afmoe rotates"):
        configs.load(p)
    p = str(tmp_path / "swa-base.gguf")
    _write(p, **{"rope.freq_base_swa": 5000.0})
    with pytest.raises(gguf_file.GGUFError, match=r"'afmoe.rope.freq_base_swa' = 5000.0 differs"):
        configs.load(p)
    gguf_writer.check_required_keys(tmp_path, _write, "afmoe", ("expert_shared_count", "expert_count",
                                                              "expert_used_count", "expert_feed_forward_length"))


# ---- HF folders as transformers saves them -----------------------------------------------------------------------
@pytest.mark.slow
def test_hf_folder_as_saved_runs_with_hf_logits(tmp_path):
    """transformers 5.25 saves AFMoE's experts (gate_up_proj / down_proj stacked, or one by one), its router as
    mlp.router.gate, expert_bias and the pre_ / post_mlp_layernorm: glmbench.Model runs the folder
    (checkpoint.load_model) with HF's logits, a prefill past the window and decode steps."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from glmbench.models import checkpoint
    hc = _hc(num_hidden_layers=4)
    m = hf_oracle.random_model(hc)
    d = str(tmp_path / "hf")
    m.save_pretrained(d)
    names = set(checkpoint.read_safetensors(os.path.join(d, "model.safetensors")))
    assert {"model.layers.1.mlp.expert_bias", "model.layers.1.mlp.router.gate.weight",
            "model.layers.0.pre_mlp_layernorm.weight", "model.layers.0.self_attn.gate_proj.weight"} <= names
    cfg = configs.load(d)
    fw = cfg.file_weights
    assert fw.main_type == "F32" and fw.total_bytes == 4 * cfg.total_params()
    gm = checkpoint.load_model(d, kv="f32", max_context=32)
    prompt, steps = [3, 17, 5, 99, 42, 7, 1, 2, 60, 8, 12], [11, 64, 2]
    errs = hf_oracle.logit_errors(m, gm, prompt, steps)
    assert max(errs) < 1e-4, errs


# ---- the built-in ------------------------------------------------------------------------------------------------
def test_trinity_mini_builtin():
    c = configs.load("trinity-mini")
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim) == ("afmoe", 32, 2048, 32, 4, 128)
    # the card's 26B total / 3B active: 26.12 B, and 3.47 B active with the embeddings, 2.65 B without
    assert round(c.total_params() / 1e9, 2) == 26.12
    assert 2.5e9 < c.active_params(embeddings=False) < 3e9 < c.active_params() < 3.5e9
    assert (c.n_routed_experts, c.n_experts_per_tok, c.moe_intermediate_size, c.shared_expert_intermediate_size) == \
        (128, 8, 1024, 1024)
    assert c.moe_layers == tuple(range(2, 32)) and c.routed_scaling_factor == pytest.approx(2.826)
    assert c.nope_layers == tuple(range(3, 32, 4)) and c.sliding_window == 2048
    assert c.forward_unsupported() == []
    s = cm.Setup(c, "h100-sxm", weights="Q4_K_M")
    assert cm.decode(s, 4096).tok_s > 0 and cm.max_context(s) > 0
    # HF's meta-device model of the built-in's fields
    import json
    transformers = pytest.importorskip("transformers")
    raw = json.load(open(configs.builtin_path("trinity-mini")))
    assert "written from memory" in raw["_source"]
    m, n = hf_meta.meta_model(transformers.AfmoeConfig(**{k: v for k, v in raw.items() if not k.startswith("_")}))
    assert n == c.total_params()


def test_afmoe_llama_bench_rows_name_the_builtin(tmp_path):
    rows = {"afmoe 26B Q4_K - Medium        |  14.73 GiB |    26.12 B": ("trinity-mini", "Q4_K_M"),
            "afmoe 26B Q8_0                 |  25.87 GiB |    26.12 B": ("trinity-mini", "q8_0")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |       90.10 ± 0.50")


# ---- CudaModel -----------------------------------------------------------------------------------------------------
def test_cuda_model_refuses_afmoe_before_touching_a_gpu():
    from glmbench import cuda
    for d in (_A, {**_A, "sliding_window": None, "layer_types": ["sliding_attention"] * 8}):
        with pytest.raises(ValueError, match=r"CudaModel: .*afmoe.* which the CUDA path does not implement"):
            cuda.CudaModel(configs.from_hf(d))


# ==== Nemotron ======================================================================================================
_N = dict(model_type="nemotron", vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
          num_attention_heads=4, num_key_value_heads=2, head_dim=16, norm_eps=1e-5, max_position_embeddings=4096,
          rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})


def _nhc(**kw):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoConfig.for_model("nemotron", **{k: v for k, v in {**_N, **kw}.items() if k != "model_type"})


@pytest.mark.parametrize("kw", [{}, dict(attention_bias=True), dict(mlp_bias=True), dict(head_dim=32),
                                dict(tie_word_embeddings=True), dict(num_key_value_heads=4)])
def test_nemotron_parameters_equal_the_hf_model(kw):
    hc = _nhc(**kw)
    m, n = hf_meta.meta_model(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == "nemotron" and cfg.total_params() == n
    assert {k: tuple(p.shape) for k, p in m.named_parameters()} == cfg.tensor_shapes() or kw.get("tie_word_embeddings")
    assert cfg.norm_bias and not cfg.mlp_gated and cfg.hidden_act == "relu2" and not cfg.qk_norm
    assert cfg.rope_dim == cfg.head_dim // 2 and cfg.forward_unsupported() == []
    assert cfg.mlp_bias == bool(kw.get("mlp_bias")) and cfg.attention_out_bias == bool(kw.get("attention_bias"))


def test_nemotron_hf_config_class_defaults():
    transformers = pytest.importorskip("transformers")
    # NemotronConfig(): Nemotron-4 15B's sizes, partial_rotary_factor 0.5, relu2; its KV heads None, which HF's own
    # model does not build: refused by name; stated, the count is HF's
    with pytest.raises(ValueError, match=r"`num_key_value_heads` is null"):
        configs.load(transformers.NemotronConfig().to_dict())
    hc = transformers.NemotronConfig(num_key_value_heads=8)
    c = configs.load(hc.to_dict())
    assert (c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.rope_dim, c.vocab_size) == \
        (32, 6144, 48, 8, 128, 64, 256000)
    assert c.intermediate_size == 24576 and c.rms_norm_eps == 1e-5 and not c.tie_word_embeddings
    assert c.total_params() == hf_meta.meta_model(hc)[1]
    # a config without the factor anywhere takes HF's default 0.5
    d = {k: v for k, v in hc.to_dict().items() if k not in ("rope_parameters", "partial_rotary_factor")}
    assert configs.load(d).rope_dim == 64


@pytest.mark.parametrize("change,match", [
    (dict(rope_parameters={"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 1.5}),
     r"`partial_rotary_factor` must be in \(0, 1\]"),
    (dict(norm_eps="x"), r"`norm_eps` must be a finite number"),
    (dict(num_attention_heads=3), r"not a multiple of"),
    (dict(mlp_bias="yes"), r"`mlp_bias` must be true or false"),
])
def test_nemotron_bad_fields_are_named(change, match):
    with pytest.raises(ValueError, match=match):
        configs.from_hf({**_N, **change})


def test_nemotron_hidden_act_other_than_relu2_is_priced_not_run():
    c = configs.from_hf({**_N, "hidden_act": "silu"})
    assert any("ungated MLP" in x for x in c.forward_unsupported())
    import glmbench
    with pytest.raises(ValueError, match=r"glmbench.Model cannot run"):
        glmbench.Model(c, weights="f32")
    assert cm.decode(cm.Setup(c, "rtx-3090"), 10).tok_s > 0


def test_nemotron_priced_norm_biases_and_partial_rope():
    c = configs.from_hf({**_N, "mlp_bias": True, "attention_bias": True}, "nemotron-tiny")
    s = cm.Setup(c, "rtx-3090", weights="f16")
    assert cm.decode(s, 100).tok_s > 0 and cm.prefill(s, 64, 10).tok_s > 0
    # the projections' biases (q 64, k 32, v 32, o 64, up 96, down 64) on 2 layers
    assert c.total_params() - configs.from_hf(_N).total_params() == 2 * (64 + 32 + 32 + 64 + 96 + 64)
    # LayerNorm1P's bias beside each weight: two per layer (2 layers) and the final one
    assert sum(configs._numel(v) for k, v in c.tensor_shapes().items() if "layernorm.bias" in k or k == "model.norm.bias") \
        == 5 * 64
    # Model runs it with random weights: finite logits, its norms held as 1 + w (ones here)
    import glmbench
    m = glmbench.Model(c, weights="f32", max_context=16)
    assert np.all(np.isfinite(m.prefill(np.arange(9))))


_NKEYS = {"feed_forward_length": 96, "attention.layer_norm_epsilon": 1e-5, "rope.dimension_count": 8}


def _nwrite(path, drop=(), hc=None, **extra):
    cfg = configs.from_hf(hc or _N, "synth")
    meta = {k: v for k, v in gguf_writer.gqa_meta(cfg).items() if k != "attention.layer_norm_rms_epsilon"}
    gguf_writer.write_zero_file(path, cfg, "nemotron", {**meta, **_NKEYS}, drop, extra)
    return cfg


def test_nemotron_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "nemotron.gguf")
    want = _nwrite(p)
    cfg, names = gguf_writer.read_back(p, want)
    assert cfg.rope_dim == 8
    assert {"blk.0.attn_norm.bias", "blk.0.ffn_norm.bias", "output_norm.bias", "blk.1.ffn_up.weight"} <= names
    # the whole head rotated: stated as 1.0, not NemotronConfig's default 0.5
    p2 = str(tmp_path / "full.gguf")
    _nwrite(p2, hc={**_N, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 1.0}},
            **{"rope.dimension_count": 16})
    assert configs.load(p2).rope_dim == 16
    p3 = str(tmp_path / "noeps.gguf")
    _nwrite(p3, drop=("attention.layer_norm_epsilon",))
    with pytest.raises(gguf_file.GGUFError, match=r"'nemotron.attention.layer_norm_epsilon' is missing"):
        configs.load(p3)


@pytest.mark.slow
def test_nemotron_hf_folder_as_saved_runs_with_hf_logits(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from glmbench.models import checkpoint
    hc = _nhc(attention_bias=True, mlp_bias=True)
    # LayerNorm1P's (1 + w) norms and their biases: around 0
    m = hf_oracle.random_model(hc, norm_center=0.0)
    d = str(tmp_path / "hf")
    m.save_pretrained(d)
    cfg = configs.load(d)
    assert cfg.file_weights.total_bytes == 4 * cfg.total_params()
    gm = checkpoint.load_model(d, kv="f32", max_context=16)
    prompt, steps = [3, 17, 5, 99, 42, 7], [11, 64, 2]
    errs = hf_oracle.logit_errors(m, gm, prompt, steps)
    assert max(errs) < 1e-4, errs


def test_nemotron_builtins():
    import json
    transformers = pytest.importorskip("transformers")
    c = configs.load("nemotron-mini-4b")
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.rope_dim) == \
        ("nemotron", 32, 3072, 24, 8, 128, 64)
    assert c.total_params() == 4_190_509_056 and c.forward_unsupported() == []
    l = configs.load("llama-3.1-minitron-4b")
    assert (l.model_type, l.n_layers, l.hidden_size, l.n_heads, l.n_kv_heads, l.rope_type) == ("llama", 32, 3072, 32, 8, "llama3")
    assert l.total_params() == 4_512_746_496
    for name, cls in (("nemotron-mini-4b", transformers.NemotronConfig), ("llama-3.1-minitron-4b", transformers.LlamaConfig)):
        raw = json.load(open(configs.builtin_path(name)))
        assert "written from memory" in raw["_source"]
        assert hf_meta.meta_model(cls(**{k: v for k, v in raw.items() if not k.startswith("_")}))[1] == \
            configs.load(name).total_params()
        s = cm.Setup(configs.load(name), "rtx-4090", weights="Q4_K_M")
        assert cm.decode(s, 1024).tok_s > 0 and cm.memory(s, 4096).fits


def test_nemotron_llama_bench_rows_name_the_builtins(tmp_path):
    rows = {"nemotron 4B Q4_K - Medium      |   2.51 GiB |     4.19 B": ("nemotron-mini-4b", "Q4_K_M"),
            "nemotron 4B Q8_0               |   4.14 GiB |            ": ("nemotron-mini-4b", "q8_0"),
            # (llama.cpp labels any 32-layer llama with a large vocabulary 8B, src/models/llama.cpp: the params column
            # tells Minitron from Llama 3 / 3.1 8B)
            "llama 8B Q4_K - Medium         |   2.58 GiB |     4.51 B": ("llama-3.1-minitron-4b", "Q4_K_M")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |      150.10 ± 0.50")


def test_cuda_model_refuses_nemotron_before_touching_a_gpu():
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"CudaModel: .*nemotron.* which the CUDA path does not implement"):
        cuda.CudaModel(configs.from_hf(_N))


@pytest.mark.parametrize("layer", [1, 3])     # a windowed rotating layer, a full NoPE one
def test_afmoe_gated_block_matches_the_float64_reference(layer):
    """attention.gqa_block's AFMoE branch (q from q_proj alone, the gate from gate_proj) against reference.gqa_block,
    over chunks, past the 8-token window."""
    from glmbench.core import reference as ref
    from glmbench.core.attention import gqa_block
    from glmbench.core.kvcache import KVCache
    cfg = configs.from_hf(_A)
    rng = np.random.default_rng(5)
    D, H, Hk, Dh = 64, 4, 2, 16
    w = {n: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32) for n, s in (
        ("q_proj.weight", (H * Dh, D)), ("k_proj.weight", (Hk * Dh, D)), ("v_proj.weight", (Hk * Dh, D)),
        ("gate_proj.weight", (H * Dh, D)), ("o_proj.weight", (D, H * Dh)))}
    w["q_norm.weight"] = (1 + 0.1 * rng.standard_normal(Dh)).astype(np.float32)
    w["k_norm.weight"] = (1 + 0.1 * rng.standard_normal(Dh)).astype(np.float32)
    x = rng.standard_normal((13, D)).astype(np.float32)
    cache = KVCache.gqa(2, 32, Hk, Dh, kv="f32", block_size=4)
    kp = vp = None
    for a, b in [(0, 6), (6, 7), (7, 13)]:
        pos = np.arange(a, b)
        y = gqa_block(x[a:b], w, cache, 1, pos, cfg, model_layer=layer)
        r, kp, vp = ref.gqa_block(x[a:b], w, pos, cfg, kp, vp, model_layer=layer)
        np.testing.assert_allclose(y, r, rtol=0, atol=5e-5)
    # the gate acts: a zero gate_proj (every gate sigmoid(0) = 0.5) gives another output
    w2 = dict(w, **{"gate_proj.weight": np.zeros_like(w["gate_proj.weight"])})
    r2, _, _ = ref.gqa_block(x, w2, np.arange(13), cfg, model_layer=layer)
    r1, _, _ = ref.gqa_block(x, w, np.arange(13), cfg, model_layer=layer)
    assert np.max(np.abs(r1 - r2)) > 1e-2
