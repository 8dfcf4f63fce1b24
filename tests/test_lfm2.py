"""LFM2 and LFM2-MoE (configs.SHORTCONV_FAMILIES, HF model_types lfm2 / lfm2_moe, llama.cpp architectures lfm2 /
lfm2moe): each layer either GQA attention with q/k RMSNorm or a gated short convolution (linear_kind "shortconv":
in_proj hidden -> B, C, x; B * x through a causal depthwise conv of conv_L_cache taps; times C; out_proj), then a
SwiGLU MLP (LFM2) or, past num_dense_layers, a sigmoid-routed MoE (LFM2-MoE). Priced, not run (configs.PRICED_ONLY).

  * the config and its parameter counts against HF transformers' Lfm2ForCausalLM / Lfm2MoeForCausalLM built on the
    meta device (tiny configs), every HF tensor on one of ours, of its shape (LFM2-MoE's expert_bias, a buffer the
    checkpoint stores, as the router's e_score_correction_bias; its fused gate_up_proj as our gate and up);
  * the state: llama.cpp's n_embd_r = hidden x (conv_L_cache - 1) f32 per conv layer (src/llama-hparams.cpp), no
    KV cache on the conv layers;
  * the cost model: the conv layers' ops once per conv layer, flat in the depth; the attention layers' grow;
  * bad configs refused with the field named;
  * GGUF: a file laid out as llama.cpp's converter writes lfm2 / lfm2moe (conversion/lfm2.py) reads back as its
    HF config (tests/gguf_writer.py);
  * llama-bench rows of lfm2 / lfm2moe: no built-in, so a row takes the model it is given.
"""
import dataclasses
import json
import warnings

import numpy as np
import pytest

from glmbench.models import configs, gguf_file
from glmbench.predict import costmodel as cm
from glmbench.results import importers as im

_TYPES = ["conv", "full_attention", "conv", "conv", "full_attention"]
_BASE = dict(vocab_size=160, hidden_size=128, num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=2)
# tiny HF configs: (model class name, config kwargs)
TINY = {
    # the MLP's width adjusted: int(2 x 192 / 3) = 128, x 1.5 = 192, up to a multiple of 80 = 240
    "lfm2": ("Lfm2", dict(_BASE, intermediate_size=192, layer_types=_TYPES, block_ffn_dim_multiplier=1.5,
                          block_multiple_of=80)),
    # the older full_attn_idxs, a biased conv, an untied head, a 4-tap conv, the width as it is
    "lfm2_old": ("Lfm2", dict(_BASE, intermediate_size=96, full_attn_idxs=[1, 4], conv_bias=True,
                              tie_word_embeddings=False, conv_L_cache=4, block_auto_adjust_ff_dim=False)),
    "lfm2_moe": ("Lfm2Moe", dict(_BASE, intermediate_size=96, moe_intermediate_size=32, num_experts=8,
                                 num_experts_per_tok=2, num_dense_layers=2, layer_types=_TYPES)),
    "lfm2_moe_nobias": ("Lfm2Moe", dict(_BASE, intermediate_size=96, moe_intermediate_size=32, num_experts=4,
                                        num_experts_per_tok=2, num_dense_layers=0, use_expert_bias=False,
                                        tie_word_embeddings=False, layer_types=_TYPES[::-1])),
}
# HF's names -> ours (ModelConfig.tensor_shapes: llama's norms and o_proj, Qwen3's q/k_norm, Qwen3-Next's linear_attn)
_RENAME = ((".operator_norm.", ".input_layernorm."), (".ffn_norm.", ".post_attention_layernorm."),
           ("model.embedding_norm.", "model.norm."), (".self_attn.out_proj.", ".self_attn.o_proj."),
           (".q_layernorm.", ".q_norm."), (".k_layernorm.", ".k_norm."), (".conv.conv.", ".linear_attn.conv1d."),
           (".conv.in_proj.", ".linear_attn.in_proj."), (".conv.out_proj.", ".linear_attn.out_proj."),
           (".feed_forward.w1.", ".mlp.gate_proj."), (".feed_forward.w3.", ".mlp.up_proj."),
           (".feed_forward.w2.", ".mlp.down_proj."), (".feed_forward.gate.weight", ".mlp.gate.weight"),
           (".feed_forward.expert_bias", ".mlp.gate.e_score_correction_bias"),
           (".feed_forward.experts.", ".mlp.experts."))


def _hf(case):
    transformers = pytest.importorskip("transformers")
    cls, kw = TINY[case]
    return getattr(transformers, cls + "Config")(**kw)


def _meta_model(hfcfg):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cls = transformers.Lfm2MoeForCausalLM if hfcfg.model_type == "lfm2_moe" else transformers.Lfm2ForCausalLM
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(hfcfg)


def _ours(name):
    for a, b in _RENAME:
        name = name.replace(a, b)
    return name


def _hf_shapes(m):
    """HF's checkpoint tensors (parameters and the expert_bias buffers) by our names, the fused gate_up_proj [E, 2F, D]
    as our gate_proj and up_proj [E, F, D]."""
    out = {}
    for k, p in list(m.named_parameters()) + [(k, b) for k, b in m.named_buffers() if k.endswith("expert_bias")]:
        k, s = _ours(k), tuple(p.shape)
        if k.endswith(".mlp.experts.gate_up_proj"):
            base = k[: -len("gate_up_proj")]
            out[base + "gate_proj"] = out[base + "up_proj"] = (s[0], s[1] // 2, s[2])
        else:
            out[k] = s
    return out


# ---- the config --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(TINY))
def test_parameter_counts_equal_hf(case):
    hfcfg = _hf(case)
    m = _meta_model(hfcfg)
    n = sum(p.numel() for p in m.parameters()) + sum(b.numel() for k, b in m.named_buffers()
                                                     if k.endswith("expert_bias"))
    c = configs.from_hf(hfcfg.to_dict())
    assert c.total_params() == n
    assert _hf_shapes(m) == c.tensor_shapes()
    bufs = {k.rsplit(".", 1)[1] for k, _ in m.named_buffers()}
    assert bufs <= {"expert_bias", "inv_freq", "original_inv_freq"}
    if c.n_routed_experts:
        idle = c.n_moe_layers * (c.n_routed_experts - c.n_experts_per_tok) * c.expert_params()
        assert c.active_params() == n - idle < n
    else:
        assert c.active_params() == n


def test_config_fields():
    c = configs.from_hf(_hf("lfm2").to_dict())
    assert c.model_type == "lfm2" and c.linear_kind == "shortconv" and c.qk_norm and not c.attention_bias
    assert c.linear_layers == (0, 2, 3) and c.attention_layers == c.cache_layers == (1, 4)
    assert (c.linear_conv, c.linear_conv_dim, c.linear_conv_bias, c.intermediate_size) == (3, 128, False, 240)
    assert (c.linear_k_heads, c.linear_v_heads, c.linear_k_dim, c.linear_v_dim) == (0, 0, 0, 0)
    assert (c.head_dim, c.n_kv_heads, c.tie_word_embeddings, c.rms_norm_eps) == (32, 2, True, 1e-5)
    assert c.summary()["family"] == "dense GQA + short conv"
    o = configs.from_hf(_hf("lfm2_old").to_dict())
    assert o.linear_layers == (0, 2, 3) and o.linear_conv == 4 and o.linear_conv_bias and o.intermediate_size == 96
    mo = configs.from_hf(_hf("lfm2_moe").to_dict())
    assert mo.moe_layers == (2, 3, 4) and mo.dense_layers == (0, 1) and mo.intermediate_size == 96
    assert (mo.router_scoring, mo.router_bias, mo.norm_topk_prob, mo.n_shared_experts) == ("sigmoid", True, True, 0)
    assert mo.summary()["family"] == "MoE + GQA + short conv"
    # the released configs' names: tie_embedding, block_ff_dim (HF's __post_init__ reads them)
    raw = dict(_raw(), tie_embedding=False, block_ff_dim=3072, intermediate_size=None)
    r = configs.from_hf(raw)
    assert not r.tie_word_embeddings and r.intermediate_size == 2048
    # HF without layer_types nor full_attn_idxs: every layer attends
    allatt = configs.from_hf({k: v for k, v in _raw().items() if k != "layer_types"})
    assert allatt.linear_layers == () and allatt.recurrent_state_bytes() == 0


def test_state_bytes():
    """llama.cpp's recurrent state for lfm2: n_embd_r = hidden x (l_cache - 1) f32 per conv layer, n_embd_s 0
    (src/llama-hparams.cpp); the attention layers' KV cache per token."""
    c = configs.from_hf(_hf("lfm2").to_dict())
    assert c.recurrent_state_bytes() == 3 * 4 * 128 * (3 - 1)
    assert c.kv_bytes_per_token("f16") == 2 * 2 * 2 * 32 * 2
    o = configs.from_hf(_hf("lfm2_old").to_dict())
    assert o.recurrent_state_bytes() == 3 * 4 * 128 * (4 - 1)


def test_priced_not_run():
    c = configs.from_hf(_hf("lfm2").to_dict())
    for mt in ("lfm2", "lfm2_moe"):
        assert mt in configs.PRICED_ONLY and mt in configs.SHORTCONV_FAMILIES and configs.FAMILIES[mt] == "gqa"
    assert configs.PRICED_ONLY["lfm2"] in c.forward_unsupported()[-1]
    from glmbench.models.model import Model
    with pytest.raises(ValueError, match="priced, not run"):
        Model(c)


def _raw(**kw):
    return {"model_type": "lfm2", "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 4,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 192,
            "layer_types": ["conv", "full_attention", "conv", "full_attention"], **kw}


def test_bad_fields():
    assert configs.from_hf(_raw()).linear_layers == (0, 2)
    with pytest.raises(ValueError, match=r"config field `layer_types` must list 'conv' or 'full_attention' for each "
                                         r"of 4 layers"):
        configs.from_hf(_raw(layer_types=["conv", "full_attention"]))
    with pytest.raises(ValueError, match="config field `layer_types` must list"):
        configs.from_hf(_raw(layer_types=["conv", "sliding_attention", "conv", "full_attention"]))
    with pytest.raises(ValueError, match="config field `layer_types` makes all 4 layers short convolutions"):
        configs.from_hf(_raw(layer_types=["conv"] * 4))
    with pytest.raises(ValueError, match=r"config field `conv_L_cache` must be >= 2, got 1"):
        configs.from_hf(_raw(conv_L_cache=1))
    with pytest.raises(ValueError, match=r"config field `full_attn_idxs` must list layer indices in \[0, 4\)"):
        configs.from_hf({**{k: v for k, v in _raw().items() if k != "layer_types"}, "full_attn_idxs": [1, 7]})
    with pytest.raises(ValueError, match="config field `conv_bias` must be true or false"):
        configs.from_hf(_raw(conv_bias="no"))
    with pytest.raises(ValueError, match="config field `block_ffn_dim_multiplier` must be a finite number"):
        configs.from_hf(_raw(block_ffn_dim_multiplier="x"))
    moe = dict(_raw(), model_type="lfm2_moe", moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2)
    assert configs.from_hf(moe).moe_layers == (2, 3)
    with pytest.raises(ValueError, match="config field `layer_types` must list"):
        configs.from_hf({k: v for k, v in moe.items() if k != "layer_types"})
    with pytest.raises(ValueError, match="config field `num_experts_per_tok`=8 is larger than the 4 routed experts"):
        configs.from_hf(dict(moe, num_experts_per_tok=8))


# ---- the cost model ----------------------------------------------------------------------------------------
# an LFM2-shaped config (made-up sizes, about 1.2 B parameters): 16 layers, 6 of them GQA (32 heads, 8 KV heads)
MID = dict(model_type="lfm2", vocab_size=65536, hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
           num_key_value_heads=8, intermediate_size=12288, full_attn_idxs=[2, 5, 8, 10, 12, 14])
MID_MOE = dict(model_type="lfm2_moe", vocab_size=65536, hidden_size=2048, num_hidden_layers=24, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=7168, moe_intermediate_size=1792, num_experts=32,
               num_experts_per_tok=4, num_dense_layers=2,
               layer_types=["full_attention" if i in (2, 6, 10, 14, 18, 21) else "conv" for i in range(24)])
_LIN_OPS = ("lin.in_proj", "lin.gates", "lin.conv", "lin.out_proj")


@pytest.mark.parametrize("hf", [MID, MID_MOE])
@pytest.mark.parametrize("runtime", ["llama.cpp", "vllm"])
def test_decode_conv_layers_flat_attention_grows(hf, runtime):
    """Decode: the conv ops once per conv layer, the attention ops once per attention layer; the conv layers' cost
    does not grow with the depth (no KV cache), the attention layers' does; the step is the attention-only part's
    plus the conv ops."""
    c = configs.from_hf(hf, "lfm2-mid")
    n_conv, n_att = len(c.linear_layers), len(c.attention_layers)
    assert n_conv + n_att == c.n_layers and n_att == 6
    s = cm.Setup(c, "rtx-3090", weights="Q8_0", runtime=runtime)
    d0, d1 = cm.decode(s, 0), cm.decode(s, 65536)
    for d in (d0, d1):
        count = {o.name: o.count for o in d.ops}
        assert all(count[n] == n_conv for n in _LIN_OPS), count
        assert count["attn.core"] == count["attn.qkv"] == n_att
    lin_s = lambda d: sum(o.seconds for o in d.ops if o.name.startswith("lin."))
    att_s = lambda d: sum(o.seconds for o in d.ops if o.name.startswith("attn."))
    assert 0 < lin_s(d0) == pytest.approx(lin_s(d1), rel=1e-12)
    assert att_s(d1) > att_s(d0)
    assert d1.seconds - d0.seconds == pytest.approx(att_s(d1) - att_s(d0), rel=1e-9)
    # a prefill prices them too, no recurrence chain (the conv's tokens run in parallel)
    p = cm.prefill(s, 512, 0)
    assert {o.name for o in p.ops} >= set(_LIN_OPS) and p.seconds > 0


def test_memory_cache_and_state():
    """Memory: the attention layers' KV per token of context plus the conv layers' state per stream, flat."""
    c = configs.from_hf(MID, "lfm2-mid")
    per_tok, st = c.kv_bytes_per_token("f16"), c.recurrent_state_bytes()
    assert per_tok == 6 * 2 * 8 * 64 * 2 and st == 10 * 4 * 2048 * 2
    s = cm.Setup(c, "rtx-3090", weights="Q8_0", runtime="llama.cpp")
    for ctx, batch in ((0, 1), (4096, 1), (32768, 4)):
        assert cm.memory(s, ctx, batch).cards[0].kv == batch * (ctx * per_tok + st)
    n = cm.max_context(s)
    assert cm.memory(s, n).fits and not cm.memory(s, n + 1).fits


def test_tensor_split_prices_the_conv_layers():
    c = configs.from_hf(MID_MOE, "lfm2-moe-mid")
    t = cm.decode(cm.Setup(c, cm.Rig("rtx-3090", 2), split="tensor", weights="bf16", runtime="vllm"), 4096)
    count = {o.name: o.count for o in t.ops}
    assert count["lin.conv"] == 18 and count["attn.core"] == 6 and t.seconds > 0


# ---- llama-bench rows ----------------------------------------------------------------------------------------
_LB = ("ggml_cuda_init: found 1 CUDA devices:\n"
       "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
       "| model                          |       size |     params | backend    | ngl |        fa |            test |"
       "                  t/s |\n"
       "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------: | --------------: |"
       " -------------------: |\n"
       "| {arch} {label} Q4_K - Medium   |   0.68 GiB |     {params} B | CUDA       |  99 |         1 |           tg128 |"
       "       98.60 ± 0.40 |\n")


@pytest.mark.parametrize("arch, mt, hf, label, params, builtin", [("lfm2", "lfm2", MID, "1.2B", "1.17", "lfm2-1.2b"),
                                                                  ("lfm2moe", "lfm2_moe", MID_MOE, "8B.A1B", "8.34",
                                                                   "lfm2-8b-a1b")])
def test_llama_bench_rows(tmp_path, arch, mt, hf, label, params, builtin):
    """llama.cpp names the architectures lfm2 and lfm2moe (src/llama-arch.cpp). A row of LFM2-1.2B's / LFM2-8B-A1B's
    label and params names the built-in (tests/test_builtins_recalled.py: every LFM2 built-in's row); the model it
    is given (--model) takes its place, a default model (for rows naming none) does not."""
    assert im._arch_of(mt) == arch
    p = tmp_path / "r.md"
    p.write_text(_LB.format(arch=arch, label=label, params=params))
    (r,) = im.read(str(p))
    assert (r["model"], r["weights"]) == (builtin, "Q4_K_M")
    assert r["inferred"]["model"].startswith(f"from '{arch} {label}'")
    # the built-in is the shape these tests price as MID / MID_MOE
    assert configs.load(builtin).total_params() == configs.from_hf(hf).total_params()
    d = tmp_path / "lfm2-mid"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(hf))
    (r,) = im.read(str(p), model=str(d / "config.json"))
    assert (r["model"], r["weights"], r["test"], r["avg_ts"]) == ("lfm2-mid", "Q4_K_M", "tg", 98.6)
    # a default model stands only for rows that name none: this one names the built-in
    (r,) = im.read(str(p), default_model=str(d))
    assert r["model"] == builtin


# ---- GGUF: a file laid out as llama.cpp's converter writes lfm2 / lfm2moe ------------------------------------
gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
import gguf_writer  # noqa: E402


def _write(path, hc, drop=(), drop_tensors=(), meta_over=None):
    """A GGUF of HF config `hc` with lfm2's / lfm2moe's keys and tensors (conversion/lfm2.py: head_count_kv per layer,
    0 on the conv layers; shortconv.l_cache; the MLP's adjusted width as feed_forward_length; lfm2moe:
    expert_feed_forward_length, leading_dense_block_count, expert_gating_func 2; the conv squeezed to [D, K], the final
    norm token_embd_norm, expert_bias as exp_probs_b.bias), zeros for data, F16 matrices; less the metadata keys in
    `drop` and the tensors in `drop_tensors`."""
    cfg = configs.from_hf(hc, "synth")
    arch = "lfm2moe" if cfg.model_type == "lfm2_moe" else "lfm2"
    L, D = cfg.n_layers, cfg.hidden_size
    w = gguf.GGUFWriter(path, arch)
    lin = set(cfg.linear_layers)
    meta = {"block_count": L, "context_length": cfg.max_position_embeddings, "embedding_length": D,
            "feed_forward_length": cfg.intermediate_size, "attention.head_count": cfg.n_heads,
            "attention.head_count_kv": [0 if i in lin else cfg.n_kv_heads for i in range(L)],
            "attention.layer_norm_rms_epsilon": cfg.rms_norm_eps, "vocab_size": cfg.vocab_size,
            "shortconv.l_cache": cfg.linear_conv, "rope.freq_base": float(cfg.rope_theta)}
    if arch == "lfm2moe":
        meta.update({"expert_count": cfg.n_routed_experts, "expert_used_count": cfg.n_experts_per_tok,
                     "expert_feed_forward_length": cfg.moe_intermediate_size,
                     "leading_dense_block_count": len(cfg.dense_layers), "expert_gating_func": 2})
    meta.update(meta_over or {})
    gguf_writer.add_metadata(w, arch, meta, drop)
    for hf, shape in cfg.tensor_shapes().items():
        name = gguf_file.gguf_name(hf, arch, L)
        if name in drop_tensors:
            continue
        if hf.endswith("linear_attn.conv1d.weight"):
            shape = (shape[0], shape[2])
        f16 = len(shape) >= 2 and not hf.endswith(("conv1d.weight", "mlp.gate.weight"))
        w.add_tensor(name, np.zeros(shape, np.float16 if f16 else np.float32))
    gguf_writer.finish(w)
    return cfg


_load, _diff = gguf_writer.load_stated, gguf_writer.config_diff


@pytest.mark.parametrize("case", list(TINY))
def test_written_file_reads_as_its_config(tmp_path, case):
    hc = _hf(case).to_dict()
    if hc.get("conv_bias"):
        # llama.cpp's lfm2 loader (src/models/lfm2.cpp) creates no shortconv.in_proj / out_proj bias: a file holding
        # HF's conv_bias tensors has tensors it does not create, which llama_model_loader::done_getting_tensors
        # refuses ("wrong number of tensors"); glmbench read and priced it. The same model unbiased reads below.
        p = str(tmp_path / "biased.gguf")
        _write(p, hc)
        with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.0\.shortconv\.(in|out)_proj\.bias' is not one "
                                                      r"llama\.cpp's lfm2 loader creates; .*wrong number of tensors"):
            _load(p)
        hc = dict(hc, conv_bias=False)
    p = str(tmp_path / "f.gguf")
    want = _write(p, hc)
    cfg = _load(p)
    assert cfg.cost_shape() == want.cost_shape() and _diff(cfg, want) == {}, _diff(cfg, want)
    assert cfg.total_params() == want.total_params() and cfg.model_type == want.model_type
    assert cfg.recurrent_state_bytes() == want.recurrent_state_bytes() > 0
    assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16") > 0
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and sum(fw.bytes_of().values()) == fw.total_bytes
    assert fw.main_type == "F16"
    s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
    assert cm.decode(s, 4096).seconds > 0 and cm.memory(s, 1024).cards[0].kv == \
        1024 * cfg.kv_bytes_per_token("f16") + cfg.recurrent_state_bytes()


def test_tensor_gguf_names():
    """The names llama.cpp's lfm2 loader reads (src/models/lfm2.cpp, src/llama-arch.cpp)."""
    p = "model.layers.3."
    names = {n: gguf_file.gguf_name(p + n, "lfm2moe", 5) for n in (
        "input_layernorm.weight", "post_attention_layernorm.weight", "linear_attn.in_proj.weight",
        "linear_attn.conv1d.weight", "linear_attn.out_proj.weight", "self_attn.o_proj.weight",
        "self_attn.q_norm.weight", "mlp.gate.e_score_correction_bias", "mlp.experts.up_proj")}
    assert names == {
        "input_layernorm.weight": "blk.3.attn_norm.weight", "post_attention_layernorm.weight": "blk.3.ffn_norm.weight",
        "linear_attn.in_proj.weight": "blk.3.shortconv.in_proj.weight",
        "linear_attn.conv1d.weight": "blk.3.shortconv.conv.weight",
        "linear_attn.out_proj.weight": "blk.3.shortconv.out_proj.weight",
        "self_attn.o_proj.weight": "blk.3.attn_output.weight", "self_attn.q_norm.weight": "blk.3.attn_q_norm.weight",
        "mlp.gate.e_score_correction_bias": "blk.3.exp_probs_b.bias", "mlp.experts.up_proj": "blk.3.ffn_up_exps.weight"}
    assert gguf_file.gguf_name("model.norm.weight", "lfm2", 5) == "token_embd_norm.weight"


@pytest.mark.parametrize("family,arch,key",
                         [("lfm2", "lfm2", k) for k in ("shortconv.l_cache", "attention.layer_norm_rms_epsilon",
                                                        "feed_forward_length", "attention.head_count_kv")]
                         + [("lfm2_moe", "lfm2moe", k) for k in ("expert_count", "expert_used_count",
                                                                 "expert_feed_forward_length", "expert_gating_func")])
def test_written_file_missing_key_is_named(tmp_path, family, arch, key):
    p = str(tmp_path / "bad.gguf")
    _write(p, _hf(family).to_dict(), drop=(key,))
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    assert p in str(e.value) and f"'{arch}.{key}' is missing" in str(e.value)


def test_written_file_bad_values(tmp_path):
    p = str(tmp_path / "f.gguf")
    _write(p, _hf("lfm2_moe").to_dict(), meta_over={"expert_gating_func": 1})
    with pytest.raises(gguf_file.GGUFError, match=r"'lfm2moe.expert_gating_func' = 1 is not 2 \(sigmoid\)"):
        configs.load(p)
    q = str(tmp_path / "kv.gguf")
    _write(q, _hf("lfm2").to_dict(), meta_over={"attention.head_count_kv": [0, 2, 0, 0, 1]})
    with pytest.raises(gguf_file.GGUFError, match=r"'lfm2.attention.head_count_kv' gives the attention layers "
                                                  r"different KV heads"):
        configs.load(q)
    r = str(tmp_path / "allconv.gguf")
    _write(r, _hf("lfm2").to_dict(), meta_over={"attention.head_count_kv": [0] * 5})
    with pytest.raises(gguf_file.GGUFError, match=r"'lfm2.attention.head_count_kv' is 0 on every layer"):
        configs.load(r)
    s = str(tmp_path / "k1.gguf")
    _write(s, _hf("lfm2").to_dict(), meta_over={"shortconv.l_cache": 1})
    with pytest.raises(ValueError, match=r"config field `conv_L_cache` must be >= 2"):
        configs.load(s)
    # a tensor the config names, missing from the file: named
    t = str(tmp_path / "noconv.gguf")
    _write(t, _hf("lfm2").to_dict(), drop_tensors=("blk.2.shortconv.conv.weight",))
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk.2.shortconv.conv.weight' is missing"):
        configs.load(t)


def test_gguf_config_keeps_the_adjusted_width(tmp_path):
    """lfm2's feed_forward_length is the adjusted width (conversion/lfm2.py _add_feed_forward_length): read back with
    the adjustment off, the same MLP as the HF config's."""
    p = str(tmp_path / "f.gguf")
    _write(p, _hf("lfm2").to_dict())
    hf = gguf_file.hf_config(gguf_file.read(p))
    assert hf["model_type"] == "lfm2" and hf["intermediate_size"] == 240 and not hf["block_auto_adjust_ff_dim"]
    assert hf["layer_types"] == _TYPES and hf["conv_L_cache"] == 3 and not hf["conv_bias"]
    assert dataclasses.replace(configs.from_hf(hf), name="x").intermediate_size == 240


def test_sliding_window_from_the_file(tmp_path):
    """llama.cpp's lfm2 windows every attention layer where the file states attention.sliding_window
    (src/models/lfm2.cpp): read back as `sliding_window` on the attention layers, the cache per stream bounded by
    it (the conv state as before)."""
    p = str(tmp_path / "swa.gguf")
    full = _write(p, _hf("lfm2").to_dict(), meta_over={"attention.sliding_window": 64})
    cfg = _load(p)
    assert (cfg.sliding_window, cfg.windowed_layers) == (64, (1, 4)) and not full.sliding_window
    assert cfg.recurrent_state_bytes() == full.recurrent_state_bytes()
    assert cfg.linear_layers == full.linear_layers and cfg.total_params() == full.total_params()
    s, sf = (cm.Setup(c, "rtx-3090", runtime="llama.cpp") for c in (cfg, full))
    assert cm.memory(s, 32768).cards[0].kv < cm.memory(sf, 32768).cards[0].kv
    # a config.json stating one: the same (HF's Lfm2Config has no such field; without it every layer attends in full)
    hf = configs.from_hf(dict(_hf("lfm2").to_dict(), sliding_window=64))
    assert (hf.sliding_window, hf.windowed_layers) == (64, (1, 4))
