"""Falcon-H1 (configs.PARALLEL_FAMILIES, HF model_type falcon_h1, llama.cpp architecture falcon-h1): every layer
runs GQA attention and a Mamba-2 mixer side by side on one normed input (their outputs summed), then a SwiGLU
MLP. Priced, not run (configs.PRICED_ONLY).

  * the config and its parameter counts against HF transformers' FalconH1ForCausalLM built on the meta device
    (tiny configs and FalconH1Config's defaults), every HF tensor on one of ours;
  * the cost model: both mixers priced in every layer (the attention's ops and the Mamba-2's, each counted once
    per layer), memory = every layer's KV cache + every layer's recurrent state;
  * bad configs refused with the field named;
  * GGUF: a file laid out as llama.cpp's converter writes falcon-h1 (converter-free), and files made by llama.cpp's
    own converter (tests/llama_cpp_convert.py; slow, skipped without it) from tiny HF models: the file's config is
    the HF folder's, every stored byte on a tensor of ours, priced end to end (`glmbench sweep --model FILE`);
  * llama-bench rows of falcon-h1: no built-in (none whose sizes could be checked here), so a row takes the
    model it is given (--model, a sidecar's config beside the pastes).
"""
import dataclasses
import functools
import json
import math
import os
import sys
import warnings

import numpy as np
import pytest

from glmbench.models import configs, gguf_file
from glmbench.predict import costmodel as cm
from glmbench.results import importers as im

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# tiny HF configs: (FalconH1Config kwargs). "norm": the gated RMSNorm's weight (mamba_rms_norm), a Mamba inner width
# (mamba_d_ssm) unlike mamba_expand x hidden; "plain": no gated norm, tied head, biased attention, no conv bias,
# mamba_d_ssm null (mamba_expand x hidden); "multipliers": the muP multipliers off 1 (numerics only)
_BASE = dict(vocab_size=160, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96)
TINY = {
    "norm": dict(_BASE, head_dim=32, mamba_d_ssm=96, mamba_n_heads=6, mamba_n_groups=2, mamba_d_state=16,
                 mamba_rms_norm=True),
    "plain": dict(_BASE, mamba_d_ssm=None, mamba_expand=2, mamba_n_heads=8, mamba_n_groups=1, mamba_d_state=16,
                  mamba_rms_norm=False, tie_word_embeddings=True, attention_bias=True, mamba_conv_bias=False),
    "multipliers": dict(_BASE, head_dim=32, mamba_d_ssm=128, mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16,
                        embedding_multiplier=5.6, lm_head_multiplier=0.03, key_multiplier=0.4,
                        attention_in_multiplier=1.5, attention_out_multiplier=0.9, ssm_in_multiplier=1.2,
                        ssm_out_multiplier=0.2, mlp_multipliers=[0.8, 0.5], ssm_multipliers=[0.4, 0.3, 1.1, 0.6, 2.0]),
}
# HF's names of the layer's sub-modules -> ours (ModelConfig.tensor_shapes: Qwen3-Next's linear_attn, llama's mlp
# and post_attention_layernorm, model.norm)
_RENAME = ((".mamba.", ".linear_attn."), (".feed_forward.", ".mlp."), (".pre_ff_layernorm.", ".post_attention_layernorm."),
           ("model.final_layernorm.", "model.norm."))


def _hf_config(kw):
    transformers = pytest.importorskip("transformers")
    return transformers.FalconH1Config(**kw)


def _meta_model(hfcfg):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.FalconH1ForCausalLM(hfcfg)


def _ours(name):
    for a, b in _RENAME:
        name = name.replace(a, b)
    return name


# ---- the config --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(TINY) + ["defaults"])
def test_parameter_counts_equal_hf(case):
    """total_params counts what HF's FalconH1ForCausalLM builds (attention and Mamba-2 in every layer, two norms,
    the MLP): every HF parameter is one tensor of ours, of its shape. HF's buffers are not weights: each Mamba's
    mup_vector (the muP multipliers per in_proj row, non-persistent: not in the checkpoint) and rope's inv_freq."""
    hfcfg = _hf_config(TINY.get(case, {}))
    m = _meta_model(hfcfg)
    n = sum(p.numel() for p in m.parameters())
    c = configs.from_hf(hfcfg.to_dict())
    assert c.total_params() == n
    hf = {_ours(k): tuple(p.shape) for k, p in m.named_parameters()}
    assert hf == c.tensor_shapes()
    assert set(m.state_dict()) == {k for k, _ in m.named_parameters()} | (
        {"lm_head.weight"} if hfcfg.tie_word_embeddings else set())
    bufs = {k.rsplit(".", 1)[1] for k, _ in m.named_buffers()}
    assert bufs == {"mup_vector", "inv_freq", "original_inv_freq"}
    assert c.active_params() == c.total_params()


def test_config_fields():
    c = configs.from_hf(_hf_config(TINY["norm"]).to_dict())
    L = 3
    assert c.model_type == "falcon_h1" and c.attention == "gqa" and c.parallel_mixers and c.linear_kind == "mamba2"
    # every layer both: attention (a KV cache of its own) and Mamba-2 (a state)
    assert c.linear_layers == c.attention_layers == c.cache_layers == tuple(range(L))
    assert (c.linear_v_heads, c.linear_v_dim, c.linear_k_heads, c.linear_k_dim, c.linear_conv) == (6, 16, 2, 16, 4)
    assert c.linear_conv_dim == 96 + 2 * 2 * 16 and c.linear_conv_bias and c.linear_norm
    assert (c.n_heads, c.n_kv_heads, c.head_dim, c.rope_dim, c.intermediate_size) == (4, 2, 32, 32, 96)
    assert not c.nope and c.mlp_gated and c.n_layer_norms == 2 and not c.n_routed_experts
    # the cache: every layer's K and V (2 heads x 32, f16); the state: per layer (K - 1) x conv channels + heads x
    # head_dim x d_state, f32
    assert c.kv_bytes_per_token("f16") == L * 2 * 2 * 32 * 2
    assert c.recurrent_state_bytes() == 4 * L * (3 * 160 + 6 * 16 * 16)
    assert c.summary()["family"] == "dense GQA + Mamba-2 in parallel"
    # mamba_d_ssm null: mamba_expand x hidden_size; mamba_d_head "auto": the width / heads
    p = configs.from_hf(_hf_config(TINY["plain"]).to_dict())
    assert (p.linear_v_heads, p.linear_v_dim, p.head_dim) == (8, 16, 16) and not p.linear_norm
    assert not p.linear_conv_bias and p.attention_bias and p.attention_out_bias and p.tie_word_embeddings
    assert "model.layers.0.linear_attn.norm.weight" not in p.tensor_shapes()
    assert configs.from_hf({**_hf_config(TINY["plain"]).to_dict(), "mamba_d_head": "auto"}).linear_v_dim == 16
    # the muP multipliers change values only: the cost shape is the plain config's
    mult = configs.from_hf(_hf_config(TINY["multipliers"]).to_dict())
    same = configs.from_hf(_hf_config({k: v for k, v in TINY["multipliers"].items()
                                       if "multiplier" not in k}).to_dict())
    assert mult.cost_shape() == same.cost_shape()


def test_priced_not_run():
    c = configs.from_hf(_hf_config(TINY["norm"]).to_dict())
    assert "falcon_h1" in configs.PRICED_ONLY and configs.PRICED_ONLY["falcon_h1"] in c.forward_unsupported()[-1]
    from glmbench.models.model import Model
    with pytest.raises(ValueError, match="priced, not run"):
        Model(c)
    assert "falcon_h1" not in configs.MAMBA_FAMILIES and configs.FAMILIES["falcon_h1"] == "gqa"


def _raw(**kw):
    return {"model_type": "falcon_h1", "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "mamba_d_ssm": 128,
            "mamba_n_heads": 8, "mamba_n_groups": 2, "mamba_d_state": 16, **kw}


def test_bad_fields():
    assert configs.from_hf(_raw()).linear_v_dim == 16
    with pytest.raises(ValueError, match=r"`mamba_n_heads` x `mamba_d_head` = 8 x 8 must equal the Mamba's inner width 128"):
        configs.from_hf(_raw(mamba_d_head=8))
    with pytest.raises(ValueError, match=r"`mamba_n_heads` = 6 does not divide the Mamba's inner width 128"):
        configs.from_hf(_raw(mamba_n_heads=6))
    with pytest.raises(ValueError, match=r"the Mamba heads \(8\) are not a multiple of its groups \(`mamba_n_groups` = 3\)"):
        configs.from_hf(_raw(mamba_n_groups=3))
    for k in ("mamba_proj_bias", "projectors_bias", "mlp_bias"):
        with pytest.raises(ValueError, match=f"config field `{k}` = true: a biased"):
            configs.from_hf(_raw(**{k: True}))
    with pytest.raises(ValueError, match="config field `mamba_d_state` must be an integer"):
        configs.from_hf(_raw(mamba_d_state="16"))
    with pytest.raises(ValueError, match="config field `hidden_size` is missing"):
        configs.from_hf({k: v for k, v in _raw().items() if k != "hidden_size"})
    with pytest.raises(ValueError, match="config field `mamba_rms_norm` must be true or false"):
        configs.from_hf(_raw(mamba_rms_norm=None))


# ---- the cost model ----------------------------------------------------------------------------------------
# a Falcon-H1-shaped config (made-up sizes, about 0.4 B parameters): 12 layers of GQA (8 heads, 2 KV heads of 128)
# and Mamba-2 (24 heads of 64, one group, d_state 128)
MID = _raw(vocab_size=32768, hidden_size=1024, num_hidden_layers=12, num_attention_heads=8, num_key_value_heads=2,
           head_dim=128, intermediate_size=2816, mamba_d_ssm=1536, mamba_n_heads=24, mamba_n_groups=1,
           mamba_d_state=128, mamba_rms_norm=True)


@functools.lru_cache(maxsize=None)
def _mid():
    c = configs.from_hf(MID, "falcon-h1-mid")
    # the same model without its Mamba-2 mixers: its attention, MLP, norms and head alone
    att = dataclasses.replace(c, name="attention-only", linear_layers=(), parallel_mixers=False, linear_kind="")
    return c, att


_ATT_OPS = ("attn.qkv", "attn.rope_norm", "attn.kv_write", "attn.core", "attn.o_proj")
_LIN_OPS = ("lin.in_proj", "lin.conv", "lin.recurrence", "lin.norm_gate", "lin.out_proj")


@pytest.mark.parametrize("runtime", ["llama.cpp", "vllm"])
def test_cost_model_prices_both_mixers_in_every_layer(runtime):
    """Decode and prefill: each attention op and each Mamba-2 op once per layer (12 of 12), beside the MLP and the
    norms; the step is the attention-only model's plus the Mamba-2 ops, whose cost is flat in the depth."""
    c, att = _mid()
    L = c.n_layers
    s, sa = (cm.Setup(m, "rtx-3090", weights="Q8_0", runtime=runtime) for m in (c, att))
    for step in (lambda x: cm.decode(x, 4096), lambda x: cm.prefill(x, 512, 1024)):
        got, ref = step(s), step(sa)
        count = {o.name: o.count for o in got.ops}
        assert all(count[n] == L for n in _ATT_OPS + _LIN_OPS + ("norms", "mlp")), count
        lin = sum(o.seconds for o in got.ops if o.name.startswith("lin."))
        assert lin > 0 and {o.name for o in got.ops} - {o.name for o in ref.ops} == set(_LIN_OPS)
        assert got.seconds == pytest.approx(ref.seconds + lin, rel=1e-9)
        flops = {o.name: o.flops for o in got.ops}
        assert all(flops[n] == pytest.approx(o.flops, rel=1e-9) for o in ref.ops for n in [o.name])
    # the Mamba-2 ops do not grow with the depth; the attention's do
    d0, d1 = cm.decode(s, 0), cm.decode(s, 65536)
    lin_s = lambda d: sum(o.seconds for o in d.ops if o.name.startswith("lin."))
    assert lin_s(d0) == pytest.approx(lin_s(d1), rel=1e-12)
    assert d1.seconds - d0.seconds == pytest.approx(cm.decode(sa, 65536).seconds - cm.decode(sa, 0).seconds, rel=1e-9)


def test_cost_model_splits_and_offload():
    """Tensor and layer split over two cards, and llama.cpp's partial offload (-ngl: half the layers on the host):
    both mixers' ops priced on every layer, where it runs."""
    c, _ = _mid()
    L = c.n_layers
    t = cm.decode(cm.Setup(c, cm.Rig("rtx-3090", 2), split="tensor", weights="bf16", runtime="vllm"), 4096)
    assert {o.name: o.count for o in t.ops if o.name in ("attn.core", "lin.recurrence")} == \
        {"attn.core": L, "lin.recurrence": L}
    ls = cm.decode(cm.Setup(c, cm.Rig("rtx-3090", 2), split="layer", weights="Q8_0", runtime="llama.cpp"), 4096)
    per_card = {}
    for o in ls.ops:
        if o.name in ("attn.core", "lin.recurrence"):
            per_card[(o.card, o.name)] = o.count
    assert per_card == {(0, "attn.core"): 6, (0, "lin.recurrence"): 6, (1, "attn.core"): 6, (1, "lin.recurrence"): 6}
    host = dict(name="test host", memory_gib=64, bandwidth_gbs=50, tflops={"fp32": 1.0, "fp16": 1.0},
                pcie_gbps=25, pcie_latency_us=10)
    off = cm.decode(cm.Setup(c, "rtx-3090", weights="Q8_0", runtime="llama.cpp", offload={"n_gpu_layers": 6},
                             host=host), 4096)
    n = {}
    for o in off.ops:
        n[o.name] = n.get(o.name, 0) + o.count
    for op in ("attn.core", "lin.recurrence", "attn.qkv", "lin.in_proj"):
        assert n[op] == 6 and n[op + " (host)"] == 6, (op, n)


def test_memory_every_layer_cache_and_state():
    """The cache: every layer's K and V per token of context (llama.cpp's hybrid memory for falcon-h1 keeps both
    in every layer), plus every layer's state, flat; the weights: the attention-only model's plus the Mamba-2's."""
    c, att = _mid()
    L, per_tok = c.n_layers, c.kv_bytes_per_token("f16")
    assert per_tok == L * 2 * 2 * 128 * 2 == att.kv_bytes_per_token("f16")
    st = c.recurrent_state_bytes()
    assert st == 4 * L * (3 * (1536 + 2 * 128) + 24 * 64 * 128) and att.recurrent_state_bytes() == 0
    s, sa = (cm.Setup(m, "rtx-3090", weights="Q8_0", runtime="llama.cpp") for m in (c, att))
    for ctx, batch in ((0, 1), (4096, 1), (32768, 4)):
        m, ma = cm.memory(s, ctx, batch).cards[0], cm.memory(sa, ctx, batch).cards[0]
        assert m.kv == math.ceil(batch * (ctx * per_tok + st)) and ma.kv == batch * ctx * per_tok
        lin_w = sum(cm._layer_total(c, "Q8_0")) - sum(cm._layer_total(att, "Q8_0"))
        assert m.weights - ma.weights == lin_w == L * sum(cm._layer_weight_bytes(c, "Q8_0")["linear"].values())
    # the longest context: the state is taken off the room first, then every layer's cache per token
    n = cm.max_context(s)
    assert cm.memory(s, n).fits and not cm.memory(s, n + 1).fits


# ---- GGUF: a file laid out as llama.cpp's converter writes falcon-h1 ----------------------------------------
gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
import gguf_writer  # noqa: E402
import llama_cpp_convert as lc  # noqa: E402

needs_converter = pytest.mark.skipif(lc.source() is None, reason=lc.skip_reason())


def _write(path, hc, drop=(), drop_tensors=()):
    """A GGUF of HF config `hc` with falcon-h1's keys and tensors (conversion/falcon_h1.py FalconH1Model on
    Mamba2Model: ssm.*, head_count_kv, key / value_length, feed_forward_length; ssm_a / ssm_d [H, 1], the conv
    [C, K], the gated norm [groups, d_inner / groups], the MLP's norm `blk.N.ffn_norm`), zeros for data, F16
    matrices; less the metadata keys in `drop` and the tensors in `drop_tensors`."""
    cfg = configs.from_hf(hc, "synth")
    L, D = cfg.n_layers, cfg.hidden_size
    w = gguf.GGUFWriter(path, "falcon-h1")
    meta = {"block_count": L, "context_length": cfg.max_position_embeddings, "embedding_length": D,
            "feed_forward_length": cfg.intermediate_size, "attention.head_count": cfg.n_heads,
            "attention.head_count_kv": cfg.n_kv_heads, "attention.key_length": cfg.head_dim,
            "attention.value_length": cfg.head_dim, "attention.layer_norm_rms_epsilon": cfg.rms_norm_eps,
            "vocab_size": cfg.vocab_size, "ssm.conv_kernel": cfg.linear_conv, "ssm.state_size": cfg.linear_k_dim,
            "ssm.group_count": cfg.linear_k_heads, "ssm.inner_size": cfg.linear_v_heads * cfg.linear_v_dim,
            "ssm.time_step_rank": cfg.linear_v_heads, "rope.freq_base": float(cfg.rope_theta)}
    gguf_writer.add_metadata(w, "falcon-h1", meta, drop)
    for hf, shape in cfg.tensor_shapes().items():
        name = gguf_file.gguf_name(hf, "falcon-h1", L)
        if name in drop_tensors:
            continue
        if hf.endswith(("linear_attn.A_log", "linear_attn.D")):
            shape = (shape[0], 1)
        elif hf.endswith("linear_attn.conv1d.weight"):
            shape = (shape[0], shape[2])
        elif hf.endswith("linear_attn.norm.weight"):
            shape = (cfg.linear_k_heads, shape[0] // cfg.linear_k_heads)
        f16 = len(shape) >= 2 and not hf.endswith(("conv1d.weight", ".A_log", ".D", "norm.weight"))
        w.add_tensor(name, np.zeros(shape, np.float16 if f16 else np.float32))
    gguf_writer.finish(w)
    return cfg


_load, _diff = gguf_writer.load_stated, gguf_writer.config_diff


@pytest.mark.parametrize("kw", [dict(mamba_rms_norm=True, head_dim=32), dict(tie_word_embeddings=True,
                                                                            mamba_conv_bias=False, attention_bias=True)])
def test_written_file_reads_as_its_config(tmp_path, kw):
    p = str(tmp_path / "f.gguf")
    want = _write(p, _raw(max_position_embeddings=8192, rms_norm_eps=1e-5, **kw))
    cfg = _load(p)
    assert cfg.cost_shape() == want.cost_shape() and _diff(cfg, want) == {}, _diff(cfg, want)
    assert cfg.total_params() == want.total_params() and cfg.hf["gguf_architecture"] == "falcon-h1"
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and sum(fw.bytes_of().values()) == fw.total_bytes
    assert fw.main_type == "F16"


@pytest.mark.parametrize("key", ["ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                                 "ssm.inner_size", "feed_forward_length", "attention.layer_norm_rms_epsilon",
                                 "block_count", "embedding_length", "attention.head_count"])
def test_written_file_missing_key_is_named(tmp_path, key):
    p = str(tmp_path / "bad.gguf")
    _write(p, _raw(), drop=(key,))
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    assert p in str(e.value) and f"'falcon-h1.{key}' is missing" in str(e.value)


def test_written_file_bad_sizes_and_tensors(tmp_path):
    p = str(tmp_path / "f.gguf")
    _write(p, _raw())
    g = gguf_file.read(p)
    base = dict(g.metadata)
    with pytest.raises(gguf_file.GGUFError, match=r"'falcon-h1.ssm.inner_size' = 100 is not a multiple"):
        lc.hf_config_with(g, base, **{"ssm.inner_size": 100})
    with pytest.raises(gguf_file.GGUFError, match=r"'falcon-h1.ssm.time_step_rank' = 8 \(the Mamba heads\) is not a "
                                                  r"multiple of 'falcon-h1.ssm.group_count' = 3"):
        lc.hf_config_with(g, base, **{"ssm.group_count": 3})
    # the file's tensors disagreeing with its metadata: named
    hf = lc.hf_config_with(g, base, **{"ssm.state_size": 32})
    cfg = configs.from_hf(hf, "x")
    with pytest.raises(gguf_file.GGUFError, match=r"'blk.0.ssm_conv1d.weight' has shape \(192, 4\), the config .* "
                                                  r"expects \(256, 1, 4\)"):
        gguf_file.file_weights(g, cfg.tensor_shapes(), cfg.n_layers)
    # a file without the Mamba-2 mixer is not a falcon-h1 file; one without the MLP's norm misses a tensor
    q = str(tmp_path / "nossm.gguf")
    _write(q, _raw(), drop_tensors=("blk.0.ssm_in.weight",))
    with pytest.raises(gguf_file.GGUFError, match="'blk.0.ssm_in.weight' is missing: every falcon-h1 layer"):
        configs.load(q)
    q = str(tmp_path / "nonorm.gguf")
    _write(q, _raw(), drop_tensors=("blk.1.ffn_norm",))
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk.1.ffn_norm' is missing \(HF "
                                                  r"'model.layers.1.post_attention_layernorm.weight'"):
        configs.load(q)
    # the flags the tensors tell (no bias, no gated norm here), the widths the keys state
    hf = lc.hf_config_with(g, base)
    assert hf["model_type"] == "falcon_h1" and hf["mamba_d_ssm"] == 128 and hf["mamba_d_head"] == 16
    assert not (hf["mlp_bias"] or hf["mamba_proj_bias"] or hf["projectors_bias"] or hf["mamba_rms_norm"])
    assert hf["mamba_conv_bias"] and hf["intermediate_size"] == 96


def test_falcon_h1_tensor_gguf_names():
    """The names llama.cpp's falcon-h1 loader reads (src/models/falcon-h1.cpp): the MLP's norm without `.weight`,
    the Mamba's as the other hybrids' (ssm_a, ssm_d without it), the attention's as llama's."""
    p = "model.layers.3."
    names = {n: gguf_file.gguf_name(p + n, "falcon-h1", 5) for n in (
        "input_layernorm.weight", "post_attention_layernorm.weight", "linear_attn.in_proj.weight", "linear_attn.D",
        "linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.norm.weight", "linear_attn.conv1d.weight",
        "linear_attn.conv1d.bias", "linear_attn.out_proj.weight", "self_attn.q_proj.weight", "self_attn.o_proj.bias",
        "mlp.gate_proj.weight", "mlp.down_proj.weight")}
    assert names == {
        "input_layernorm.weight": "blk.3.attn_norm.weight", "post_attention_layernorm.weight": "blk.3.ffn_norm",
        "linear_attn.in_proj.weight": "blk.3.ssm_in.weight", "linear_attn.D": "blk.3.ssm_d",
        "linear_attn.A_log": "blk.3.ssm_a", "linear_attn.dt_bias": "blk.3.ssm_dt.bias",
        "linear_attn.norm.weight": "blk.3.ssm_norm.weight", "linear_attn.conv1d.weight": "blk.3.ssm_conv1d.weight",
        "linear_attn.conv1d.bias": "blk.3.ssm_conv1d.bias", "linear_attn.out_proj.weight": "blk.3.ssm_out.weight",
        "self_attn.q_proj.weight": "blk.3.attn_q.weight", "self_attn.o_proj.bias": "blk.3.attn_output.bias",
        "mlp.gate_proj.weight": "blk.3.ffn_gate.weight", "mlp.down_proj.weight": "blk.3.ffn_down.weight"}
    # (another architecture's MLP norm keeps its suffix)
    assert gguf_file.gguf_name(p + "post_attention_layernorm.weight", "granitehybrid", 5) == "blk.3.ffn_norm.weight"


# ---- GGUF: files made by llama.cpp's own converter ------------------------------------------------------------
# (the converter needs head_dim and a mamba_d_ssm in config.json, as the released ones have: "plain" with both set)
_CONVERT = {"norm": TINY["norm"], "plain": dict(TINY["plain"], head_dim=32, mamba_d_ssm=128),
            "multipliers": TINY["multipliers"]}


def _build(case, tmp):
    torch = pytest.importorskip("torch", reason="the tiny HF models need torch")
    transformers = pytest.importorskip("transformers", reason="the tiny HF models need transformers")
    torch.manual_seed(0)
    hfcfg = transformers.FalconH1Config(**_CONVERT[case])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.FalconH1ForCausalLM(hfcfg).float().eval()
    return lc.save_hf(model, hfcfg, os.path.join(tmp, case))


# (HF folder, {"f16": path, "q8_0": path}) for a case: the run's cases in one converter process
_converted = lc.Conversions(_build, _CONVERT)

tmp = _converted.fixture("falcon_h1")


# each tensor of ours -> the GGUF name the converter gives it (src/llama-arch.cpp's names)
_GGUF = {"linear_attn.in_proj.weight": "ssm_in.weight", "linear_attn.conv1d.weight": "ssm_conv1d.weight",
         "linear_attn.conv1d.bias": "ssm_conv1d.bias", "linear_attn.dt_bias": "ssm_dt.bias", "linear_attn.A_log": "ssm_a",
         "linear_attn.D": "ssm_d", "linear_attn.norm.weight": "ssm_norm.weight",
         "linear_attn.out_proj.weight": "ssm_out.weight", "self_attn.q_proj.weight": "attn_q.weight",
         "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
         "self_attn.o_proj.weight": "attn_output.weight", "self_attn.q_proj.bias": "attn_q.bias",
         "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
         "self_attn.o_proj.bias": "attn_output.bias", "mlp.gate_proj.weight": "ffn_gate.weight",
         "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
         "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm"}


def _gguf_of(hf):
    if not hf.startswith("model.layers."):
        return {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                "lm_head.weight": "output.weight"}[hf]
    _, _, i, rest = hf.split(".", 3)
    return f"blk.{i}.{_GGUF[rest]}"


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CONVERT))
def test_converted_file_config_is_the_hf_config(tmp, case):
    folder, files = _converted(case, tmp)
    want = configs.load(folder)
    assert want.parallel_mixers and want.model_type == "falcon_h1"
    for kind, path in files.items():
        g = gguf_file.read(path)
        assert g.architecture == "falcon-h1"
        cfg = _load(path)
        assert cfg.cost_shape() == want.cost_shape() and _diff(cfg, want) == {}, (kind, _diff(cfg, want))
        assert cfg.total_params() == want.total_params() == sum(int(np.prod(t.shape)) for t in g.tensors.values())
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16") > 0
        assert cfg.recurrent_state_bytes() == want.recurrent_state_bytes() > 0


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CONVERT))
def test_converted_file_bytes_on_our_names(tmp, case):
    """Every stored byte once, on the tensor of ours the config gives it (nothing extra, nothing skipped), the
    Mamba tensors in the converter's shapes; q8_0 quantizes the matrices and keeps the rest f32."""
    _, files = _converted(case, tmp)
    for kind, path in files.items():
        g = gguf_file.read(path)
        cfg = _load(path)
        fw, shapes, ts = cfg.file_weights, cfg.tensor_shapes(), g.tensors
        assert [n for n, _, _ in fw.tensors] == list(shapes)
        by, types = fw.bytes_of(), fw.types()
        assert {_gguf_of(hf) for hf in shapes} == set(ts)
        for hf in shapes:
            n = _gguf_of(hf)
            assert by[hf] == ts[n].n_bytes and types[hf] == ts[n].type_name, (kind, hf, n)
        assert sum(by.values()) == fw.total_bytes == g.tensor_bytes and fw.extra_bytes == fw.skipped_bytes == 0
        H, P, G = cfg.linear_v_heads, cfg.linear_v_dim, cfg.linear_k_heads
        assert ts["blk.0.ssm_a"].shape == ts["blk.0.ssm_d"].shape == (H, 1)
        assert ts["blk.0.ssm_conv1d.weight"].shape == (cfg.linear_conv_dim, cfg.linear_conv)
        if cfg.linear_norm:
            assert ts["blk.0.ssm_norm.weight"].shape == (G, H * P // G)
        if kind == "q8_0":
            assert fw.main_type == "Q8_0" and types["model.layers.0.linear_attn.in_proj.weight"] == "Q8_0"
            assert types["model.layers.0.self_attn.q_proj.weight"] == "Q8_0"
            assert types["model.layers.0.linear_attn.conv1d.weight"] == "F32"


@needs_converter
@pytest.mark.slow
def test_converted_file_priced_end_to_end(tmp):
    """`glmbench sweep --model FILE`: records priced from the file's own bytes; memory holds its weights, every
    layer's cache and every layer's state."""
    for case in _CONVERT:
        _, files = _converted(case, tmp)
        cfg = _load(files["q8_0"])
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        ts = gguf_file.read(files["q8_0"]).tensors
        host = ts["token_embd.weight"].n_bytes if "output.weight" in ts else 0
        m = cm.memory(s, 1024).cards[0]
        assert m.weights == cfg.file_weights.model_bytes - host > 0
        assert m.kv == 1024 * cfg.kv_bytes_per_token("f16") + cfg.recurrent_state_bytes()
        assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    path = _converted("norm", tmp)[1]["q8_0"]
    gguf_writer.sweep_file(path, tmp, "norm-q8_0")


# ---- llama-bench rows ----------------------------------------------------------------------------------------
_LB = ("ggml_cuda_init: found 1 CUDA devices:\n"
       "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"
       "| model                          |       size |     params | backend    | ngl |        fa |            test |"
       "                  t/s |\n"
       "| ------------------------------ | ---------: | ---------: | ---------- | --: | --------: | --------------: |"
       " -------------------: |\n"
       "| falcon-h1 7B Q4_K - Medium     |   4.40 GiB |     7.59 B | CUDA       |  99 |         1 |           tg128 |"
       "       40.10 ± 0.50 |\n")


def test_llama_bench_rows(tmp_path):
    """llama.cpp names the architecture falcon-h1 (src/llama-arch.cpp). No built-in is a Falcon-H1 (none whose sizes
    could be checked: FalconH1Config's defaults are no released model's), so a row matches none by itself and takes
    the model it is given: a config.json or the GGUF file (--model; a sidecar's config beside the pastes)."""
    assert im._arch_of("falcon_h1") == "falcon-h1"
    assert not [n for n in configs.builtin_names() if configs.load(n).model_type == "falcon_h1"]
    p = tmp_path / "r.md"
    p.write_text(_LB)
    (r,) = im.read(str(p))
    assert r.get("model") is None and r["weights"] == "Q4_K_M" and r["model_type"] == "falcon-h1 7B Q4_K - Medium"
    assert "'falcon-h1 7B' + 7.59 B params matches no built-in model" in r["inferred"]["model"]
    assert im.model_candidates("falcon-h1 7B Q4_K - Medium", 7.59e9)[0] == []
    cfg = tmp_path / "falcon-h1-mid"
    cfg.mkdir()
    (cfg / "config.json").write_text(json.dumps(MID))
    for kw in (dict(model=str(cfg / "config.json")), dict(default_model=str(cfg))):
        (r,) = im.read(str(p), **kw)
        assert (r["model"], r["weights"], r["test"], r["avg_ts"]) == ("falcon-h1-mid", "Q4_K_M", "tg", 40.1), kw


def test_public_paste_with_a_config_beside_it(tmp_path):
    """bench/public_records.py's generic path: a falcon-h1 paste whose sidecar names a Falcon-H1 config beside the
    pastes is read with it (the records name configs/<file>), where it was skipped as a family glmbench did not
    price."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import public_records as pr
    d = str(tmp_path)
    with open(os.path.join(d, "falcon-h1-mid.json"), "w") as f:
        json.dump({**MID, "architectures": ["FalconH1ForCausalLM"], "_name_or_path": "test/Falcon-H1-Mid"}, f)
    with open(os.path.join(d, "falcon.md"), "w") as f:
        f.write(_LB)
    with open(os.path.join(d, "falcon.txt"), "w") as f:
        f.write("URL: https://example.org/falcon\nModel: Falcon-H1-Mid Q4_K_M\nCommand: llama-bench -m m.gguf -ngl 99 -fa 1\n")
    cfgs = pr.folder_configs(d)
    assert list(cfgs) == ["falcon-h1-mid.json"]
    _, (rec,) = pr.generic_records(os.path.join(d, "falcon.md"), cfgs)
    assert (rec["model"], rec["weights"], rec["hardware"], rec["test"]) == ("configs/falcon-h1-mid.json", "Q4_K_M",
                                                                           "rtx-4090", "tg")
