"""Gemma 1 (gemma), GLM-4-9B-Chat as transformers ports it (glm) and InternLM3 (internlm3): configs against HF's
meta-device models, errors, GGUF files as llama.cpp's converter lays them out (conversion/gemma.py GemmaModel: norms
stored as 1 + w, lm_head dropped; conversion/chatglm.py ChatGLMModel: llama.cpp's chatglm, gate and up fused in
ffn_up, no key_length; conversion/internlm.py InternLM3Model: llama.cpp's llama, q / k rows permuted),
written here with the gguf package (the converted tiny files: tests/test_converted_gguf.py), HF folders as
transformers saves them, llama-bench's names and the built-ins. The forward pass against HF's tiny models: tests/test_model_hf.py (and here, the variants)."""
import dataclasses
import json

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_meta  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

import glmbench  # noqa: E402
from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

_B = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=0, bos_token_id=1, eos_token_id=2)
_GEMMA = dict(_B, model_type="gemma", num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-6)


def _hf_counts_equal(mt, hf):
    """configs' parameter count and tensor names equal HF's meta-device model's of config dict `hf`."""
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model(mt, **{k: v for k, v in hf.items() if k != "model_type"})
    m, n = hf_meta.meta_model(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == mt and cfg.total_params() == n
    want = {k: v for k, v in cfg.tensor_shapes().items() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    if mt == "glm":   # GlmMLP's gate_up_proj: glmbench's gate and up rows, gate first (split on input)
        for k in [k for k in want if k.endswith("mlp.gate_proj.weight")]:
            g, u = want.pop(k), want.pop(k.replace("gate_proj", "up_proj"))
            want[k.replace("gate_proj", "gate_up_proj")] = (g[0] + u[0], g[1])
    assert {k: tuple(p.shape) for k, p in m.named_parameters()} == want
    return cfg


def _run_against_hf(mt, tiny, prompt=(3, 17, 5, 99, 42, 7), steps=(11, 2, 60)):
    """A tiny random HF model of TINY-like dict `tiny` and glmbench.Model holding its weights: the logits of a prefill
    and decode steps agree (relative 1e-4)."""
    pytest.importorskip("torch")
    from test_model_hf import TINY, tiny_hf_model
    saved = TINY.get(mt)
    TINY[mt] = tiny
    try:
        hc, hf = tiny_hf_model(mt)
    finally:
        TINY[mt] = saved
    cfg = configs.load(hc.to_dict())
    m = glmbench.Model(cfg, state_dict={k: v.numpy() for k, v in hf.state_dict().items()}, weights="f32", kv="f32",
                       max_context=32)
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs
    return cfg, m


# ---- Gemma 1 -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(attention_bias=True), dict(num_key_value_heads=4, head_dim=16),
                                dict(tie_word_embeddings=False, hidden_act="gelu")])
def test_gemma_parameters_equal_the_hf_model(kw):
    cfg = _hf_counts_equal("gemma", {**_GEMMA, **kw})
    assert cfg.n_layer_norms == 2 and cfg.hidden_act == "gelu_pytorch_tanh" and cfg.forward_unsupported() == []
    assert (cfg.sliding_window, cfg.final_logit_softcapping, cfg.attn_logit_softcapping, cfg.qk_norm) == \
        (None, None, None, False)
    assert cfg.softmax_scale == cfg.head_dim ** -0.5 and cfg.rope_layout == "half" and cfg.rope_dim == cfg.head_dim
    # (attention_bias: GemmaAttention biases q, k, v and o)
    assert cfg.attention_out_bias == kw.get("attention_bias", False)


def test_gemma_config_defaults_and_errors():
    # GemmaConfig's defaults where the file states none: 16 KV heads (not the heads' count), head_dim 256, tied,
    # gelu_pytorch_tanh; the released "gelu" is that too
    c = configs.from_hf({k: v for k, v in _GEMMA.items() if k not in ("num_key_value_heads", "head_dim")} |
                        dict(num_attention_heads=16))
    assert (c.n_kv_heads, c.head_dim, c.tie_word_embeddings, c.hidden_act, c.rms_norm_eps) == \
        (16, 256, True, "gelu_pytorch_tanh", 1e-6)
    assert configs.from_hf({**_GEMMA, "hidden_act": "gelu"}).hidden_act == "gelu_pytorch_tanh"
    # a SwiGLU Gemma runs (GemmaMLP's ACT2FN[hidden_act]); another activation is priced and refused by Model
    assert configs.from_hf({**_GEMMA, "hidden_act": "silu"}).forward_unsupported() == []
    relu = configs.from_hf({**_GEMMA, "hidden_act": "relu"})
    assert relu.forward_unsupported() and "relu" in relu.forward_unsupported()[0]
    with pytest.raises(ValueError, match="not run|relu"):
        glmbench.Model(relu, weights="f32", max_context=8)
    for bad, match in (({"use_bidirectional_attention": True}, r"`use_bidirectional_attention` = true"),
                       ({"num_key_value_heads": 3}, r"`num_attention_heads`=4 is not a multiple of `num_key_value_heads`=3"),
                       ({"hidden_act": 7}, r"`hidden_act` must be a string"),
                       ({"head_dim": 0}, r"`head_dim` must be >= 1"),
                       ({"rms_norm_eps": -1}, r"`rms_norm_eps` must be > 0")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_GEMMA, **bad})


@pytest.mark.slow
def test_gemma_swiglu_and_mha_variants_match_hf():
    """The tiny models of test_model_hf with other shapes: a SwiGLU Gemma (hidden_act silu: GemmaMLP runs it), MHA with
    q / k / v / o biases and an untied head."""
    from test_model_hf import TINY
    cfg, m = _run_against_hf("gemma", dict(TINY["gemma"], hidden_act="silu"))
    assert cfg.hidden_act == "silu"
    cfg, m = _run_against_hf("gemma", dict(TINY["gemma"], num_key_value_heads=4, attention_bias=True,
                                           tie_word_embeddings=False))
    assert cfg.attention_bias and not cfg.tie_word_embeddings
    # no C layer for Gemma 1 (its dense MLP is GeGLU): forward_py runs every layer
    assert not any(layer.runs_in_c(1) for layer in m.layers)


def _gemma_meta(cfg):
    return {**gguf_writer.gqa_meta(cfg), "attention.key_length": cfg.head_dim, "attention.value_length": cfg.head_dim}


def test_gemma_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "gemma.gguf")
    want = configs.from_hf(_GEMMA, "synth")
    gguf_writer.write_zero_file(p, want, "gemma", _gemma_meta(want))
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {} and cfg.model_type == "gemma"
    assert cfg.tie_word_embeddings and cfg.head_dim == 32 and cfg.hidden_act == "gelu_pytorch_tanh"
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0
    # without key_length the head is embedding_length / head_count (16 here), which the tensors contradict
    q = str(tmp_path / "nokey.gguf")
    gguf_writer.write_zero_file(q, want, "gemma", _gemma_meta(want), drop=("attention.key_length", "attention.value_length"))
    with pytest.raises(gguf_file.GGUFError, match="attn_q"):
        configs.load(q)
    # and with value_length kept (32), the value head unlike that key head: named by its keys
    gguf_writer.write_zero_file(q, want, "gemma", _gemma_meta(want), drop=("attention.key_length",))
    with pytest.raises(gguf_file.GGUFError, match=r"'gemma\.attention\.value_length' = 32 differs from the key head "
                                                  r"dim 16"):
        configs.load(q)


def test_gemma_gguf_norms_lose_the_one_the_converter_added(tmp_path):
    """A gemma GGUF holds GemmaRMSNorm's 1 + w (conversion/gemma.py GemmaModel.modify_tensors): checkpoint.load_model
    takes the 1 off and Model holds 1 + w again, so a file of norms 1 + w runs as HF with norms w."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    from glmbench.models import checkpoint
    hc, hf = tiny_hf_model("gemma")
    cfg = configs.load(hc.to_dict())
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    p = str(tmp_path / "g.gguf")
    w = gguf.GGUFWriter(p, "gemma")
    gguf_writer.add_metadata(w, "gemma", {**_gemma_meta(cfg), "context_length": 64})
    for k, a in sd.items():
        if k == "lm_head.weight":
            continue   # (the converter drops it)
        a = a + 1 if k.endswith("norm.weight") else a
        w.add_tensor(gguf_file.gguf_name(k, "gemma", cfg.n_layers), np.ascontiguousarray(a, np.float32))
    gguf_writer.finish(w)
    m = checkpoint.load_model(p, kv="f32", max_context=32)
    prompt, steps = [3, 17, 42, 5], [7, 11]
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs
    assert cfg.n_kv_heads == 1 and m.config.model_type == "gemma"


@pytest.mark.slow
def test_gemma_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves (tied: no lm_head stored) read by checkpoint.load_model: every stored byte on a
    tensor of the config, logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model("gemma")
    _, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    prompt, steps = [3, 17, 42, 5, 9, 1], [7, 11]
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs


def test_gemma_builtins_priced():
    # the published 2.51 B / 8.54 B (tied embeddings counted once); 2B: MQA (one KV head of 256); 7B: 16 heads of 256
    # beside a hidden size of 3072 (q_proj 3072 -> 4096)
    for n, total, kv, layers in (("gemma-2b", 2_506_172_416, 18 * 1 * 512 * 2, 18),
                                 ("gemma-7b", 8_537_680_896, 28 * 16 * 512 * 2, 28)):
        c = configs.load(n)
        assert (c.model_type, c.total_params(), c.kv_bytes_per_token("f16"), c.n_layers) == ("gemma", total, kv, layers)
        assert c.forward_unsupported() == [] and c.tie_word_embeddings and c.head_dim == 256
        assert c.hidden_act == "gelu_pytorch_tanh"    # (the file's legacy "gelu")
        s = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
        d = cm.decode(s, 100)
        assert d.tok_s > 0 and cm.prefill(s, 512).tok_s > 0 and cm.memory(s, 4096).fits
        assert sum(op.bytes for op in d.ops) > 0.95 * c.weight_bytes("Q4_K_M")
    assert configs.load("gemma-7b").tensor_shapes()["model.layers.0.self_attn.q_proj.weight"] == (4096, 3072)


@pytest.mark.slow
def test_gemma_builtins_equal_hf_meta_models():
    transformers = pytest.importorskip("transformers")
    for n in ("gemma-2b", "gemma-7b"):
        c = configs.load(n)
        hf = {k: v for k, v in c.hf.items() if not k.startswith("_") and k not in ("architectures", "model_type")}
        assert hf_meta.meta_model(transformers.AutoConfig.for_model("gemma", **hf))[1] == c.total_params(), n


_GEMMA_ROWS = {"gemma 2B Q4_K - Medium         |   1.56 GiB |     2.51 B": ("gemma-2b", "Q4_K_M"),
               "gemma 7B Q4_K - Medium         |   4.96 GiB |     8.54 B": ("gemma-7b", "Q4_K_M"),
               "gemma 7B Q8_0                  |   8.45 GiB |     8.54 B": ("gemma-7b", "q8_0")}


def test_gemma_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _GEMMA_ROWS, "CUDA       |  99 |         1 |           tg128 |       90.10 ± 0.50")
    assert im._arch_of("gemma") == "gemma"
    # the size labels alone (src/models/gemma.cpp: 18 layers -> "2B", 28 -> "7B"; 8.54 B is past "7B"'s 15%)
    assert im.model_candidates("gemma 2B Q4_K - Medium")[0] == ["gemma-2b"]
    assert im.model_candidates("gemma 7B Q4_K - Medium")[0] == ["gemma-7b"]
    # Gemma 2 / 3 rows stay theirs
    assert "gemma-2b" not in im.model_candidates("gemma2 2B Q4_K - Medium", 2.61e9)[0]


def test_cuda_model_refuses_gemma():
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"CudaModel: .*GeGLU, scaled embeddings.* which the CUDA path does not"):
        cuda.CudaModel(configs.from_hf(_GEMMA))


# ---- GLM-4-9B-Chat (transformers' glm) -------------------------------------------------------------------------
_GLM = dict(_B, model_type="glm", head_dim=16, rms_norm_eps=1e-5)


@pytest.mark.parametrize("kw", [{}, dict(attention_bias=False), dict(head_dim=32, num_key_value_heads=4),
                                dict(partial_rotary_factor=1.0, tie_word_embeddings=True)])
def test_glm_parameters_equal_the_hf_model(kw):
    cfg = _hf_counts_equal("glm", {**_GLM, **kw})
    # q/k/v biased (attention_bias, the default), o_proj never; half of each head rotated, in interleaved pairs
    assert cfg.attention_bias == kw.get("attention_bias", True) and not cfg.attention_out_bias
    assert cfg.rope_layout == "interleaved" and cfg.rope_dim == int(cfg.head_dim * kw.get("partial_rotary_factor", 0.5))
    assert cfg.n_layer_norms == 2 and cfg.forward_unsupported() == [] and cfg.model_type not in configs.PRICED_ONLY


def test_glm_config_defaults_and_errors():
    # GlmConfig's defaults: 2 KV heads of 128, q/k/v biased, half rotated, eps 1.5625e-7 (GLM-4-9B-Chat's)
    c = configs.from_hf(dict(vocab_size=128, hidden_size=256, intermediate_size=96, num_hidden_layers=2,
                             num_attention_heads=4, model_type="glm"))
    assert (c.n_kv_heads, c.head_dim, c.rope_dim, c.attention_bias, c.rms_norm_eps, c.tie_word_embeddings) == \
        (2, 128, 64, True, 1.5625e-07, False)
    # the released (transformers 4.x) layout states partial_rotary_factor at the top level; 5.x in rope_parameters
    top = configs.from_hf({**_GLM, "partial_rotary_factor": 0.25})
    v5 = configs.from_hf({**_GLM, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                                      "partial_rotary_factor": 0.25}})
    assert top.rope_dim == v5.rope_dim == 4
    for bad, match in (({"partial_rotary_factor": 0.0}, r"`partial_rotary_factor` must be in \(0, 1\]"),
                       ({"partial_rotary_factor": 0.4375}, r"rotated dims .* = 7 must be even"),
                       ({"attention_bias": "yes"}, r"`attention_bias` must be true or false"),
                       ({"num_key_value_heads": 3}, r"not a multiple of `num_key_value_heads`=3")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_GLM, **bad})
    # another activation is priced, not run
    assert configs.from_hf({**_GLM, "hidden_act": "gelu"}).forward_unsupported()


@pytest.mark.slow
def test_glm_rope_is_hfs_interleaved_half():
    """GLM rotates the first half of each head in pairs (2i, 2i + 1) (apply_rotary_pos_emb's repeat_interleave'd cos /
    sin): the config's rope, applied by the float64 reference, equals HF's own function; the other half passes."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from transformers.models.glm import modeling_glm as hfm
    from glmbench.core import reference
    hc = transformers.AutoConfig.for_model("glm", **{k: v for k, v in _GLM.items() if k != "model_type"})
    cfg = configs.load(hc.to_dict())
    T, H, D = 5, hc.num_attention_heads, cfg.head_dim
    x = np.random.default_rng(0).standard_normal((T, H, D))
    pos = np.arange(T) * 7
    want = reference.rope(x, pos, **cfg.layer_rope(0))
    cos, sin = hfm.GlmRotaryEmbedding(hc)(torch.zeros(1), torch.tensor(pos)[None])
    xt = torch.tensor(x, dtype=torch.float64).transpose(0, 1)[None]
    got, _ = hfm.apply_rotary_pos_emb(xt, xt, cos.double(), sin.double())
    got = got[0].transpose(0, 1).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(got[..., D // 2:], x[..., D // 2:])


def _glm_file(path, want, fused_qkv=False, drop=(), **extra):
    """A chatglm GGUF of config `want` as conversion/chatglm.py lays it out: gate and up in one ffn_up (gate rows
    first), no key_length; with `fused_qkv`, q / k / v (and their biases) in one attn_qkv as THUDM's remote-code
    checkpoints convert."""
    w = gguf.GGUFWriter(path, "chatglm")
    meta = {**gguf_writer.gqa_meta(want), "rope.dimension_count": want.rope_dim, **extra}
    gguf_writer.add_metadata(w, "chatglm", meta, drop)
    shapes = want.tensor_shapes()
    for k, shape in shapes.items():
        if k.endswith(("mlp.gate_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                       "self_attn.k_proj.bias", "self_attn.v_proj.bias")) and \
                (fused_qkv or "mlp." in k):
            continue
        if k.endswith("mlp.up_proj.weight"):
            w.add_tensor(k.replace("model.layers.", "blk.").replace(".mlp.up_proj.weight", ".ffn_up.weight"),
                         np.zeros((2 * shape[0], shape[1]), np.float16))
        elif fused_qkv and ".self_attn.q_proj." in k:
            rows = sum(shapes[k.replace("q_proj", x)][0] for x in ("q_proj", "k_proj", "v_proj"))
            suffix = k.rsplit(".", 1)[1]
            name = k.split(".self_attn.")[0].replace("model.layers.", "blk.") + ".attn_qkv." + suffix
            w.add_tensor(name, np.zeros((rows,) + shape[1:], np.float16 if len(shape) >= 2 else np.float32))
        else:
            w.add_tensor(gguf_file.gguf_name(k, "chatglm", want.n_layers),
                         np.zeros(shape, np.float16 if len(shape) >= 2 else np.float32))
    gguf_writer.finish(w)


@pytest.mark.parametrize("fused_qkv", [False, True])
def test_glm_written_file_reads_as_its_config(tmp_path, fused_qkv):
    p = str(tmp_path / "glm.gguf")
    want = configs.from_hf(_GLM, "synth")
    _glm_file(p, want, fused_qkv)
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {} and cfg.model_type == "glm"
    assert cfg.rope_dim == 8 and cfg.rope_layout == "interleaved" and cfg.attention_bias
    names = {n for n, _, _ in cfg.file_weights.tensors}
    assert "model.layers.1.mlp.gate_proj.weight" in names and "model.layers.1.self_attn.v_proj.bias" in names
    # llama.cpp's default where rope.dimension_count is absent: the whole head rotates
    q = str(tmp_path / "norot.gguf")
    _glm_file(q, want, drop=("rope.dimension_count",))
    assert configs.load(q).rope_dim == 16
    # an ffn_up that is not twice the MLP's width (feed_forward_length) names both
    r = str(tmp_path / "bad.gguf")
    _glm_file(r, want, **{"feed_forward_length": 64})
    with pytest.raises(gguf_file.GGUFError, match=r"ffn_up.weight. has shape \(192, 64\).*2 x 64 rows"):
        configs.load(r)


@pytest.mark.slow
def test_glm_fused_qkv_file_runs_as_hf(tmp_path):
    """A chatglm GGUF with one attn_qkv (weights and bias, THUDM's remote-code layout) holding a tiny HF glm's
    q / k / v: checkpoint.load_model takes each one's rows, and the logits are HF's."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    from glmbench.models import checkpoint
    hc, hf = tiny_hf_model("glm", head_dim=16)
    cfg = configs.load(hc.to_dict())
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    p = str(tmp_path / "g.gguf")
    w = gguf.GGUFWriter(p, "chatglm")
    gguf_writer.add_metadata(w, "chatglm", {**gguf_writer.gqa_meta(cfg), "rope.dimension_count": cfg.rope_dim,
                                            "context_length": 64})
    for k, a in sd.items():
        if ".self_attn.k_proj." in k or ".self_attn.v_proj." in k:
            continue
        if ".self_attn.q_proj." in k:
            a = np.concatenate([sd[k.replace("q_proj", x)] for x in ("q_proj", "k_proj", "v_proj")])
            name = k.split(".self_attn.")[0].replace("model.layers.", "blk.") + ".attn_qkv." + k.rsplit(".", 1)[1]
        elif k.endswith("mlp.gate_up_proj.weight"):
            name = k.replace("model.layers.", "blk.").replace(".mlp.gate_up_proj.weight", ".ffn_up.weight")
        else:
            name = gguf_file.gguf_name(k, "chatglm", cfg.n_layers)
        w.add_tensor(name, np.ascontiguousarray(a, np.float32))
    gguf_writer.finish(w)
    m = checkpoint.load_model(p, kv="f32", max_context=32)
    prompt, steps = [3, 17, 42, 5], [7, 11]
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs
    assert cfg.attention_bias and cfg.rope_dim == 8


@pytest.mark.slow
def test_glm_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves (mlp.gate_up_proj fused) read by checkpoint.load_model: every stored byte on a
    tensor of the config (the fused rows counted as gate and up), logits as HF's, the layers one C call each."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model("glm")
    assert any(k.endswith("gate_up_proj.weight") for k in hf.state_dict())
    _, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    assert all(layer.runs_in_c(1) for layer in m.layers)
    prompt, steps = [3, 17, 42, 5, 9, 1], [7, 11]
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs


def test_glm_builtin_priced():
    c = configs.load("glm-4-9b-chat")
    # the card's 9.4B; 2 KV heads of 128 on 40 layers; half of each head rotated, interleaved
    assert (c.model_type, c.total_params(), c.kv_bytes_per_token("f16")) == ("glm", 9_399_951_360, 40 * 2 * 256 * 2)
    assert (c.rope_dim, c.rope_layout, c.attention_bias, c.attention_out_bias) == (64, "interleaved", True, False)
    assert c.forward_unsupported() == [] and c.max_position_embeddings == 131072
    s = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
    d = cm.decode(s, 100)
    assert d.tok_s > 0 and cm.prefill(s, 512).tok_s > 0 and cm.memory(s, 8192).fits
    # a decode step reads every matrix but the (untied) embedding table, of which one row
    assert 0.9 * c.weight_bytes("Q4_K_M") < sum(op.bytes for op in d.ops) < c.weight_bytes("Q4_K_M")
    # GLM-4-9B-0414 (glm4, four norms per layer) stays its own built-in
    assert configs.load("glm-4-9b").model_type == "glm4"


@pytest.mark.slow
def test_glm_builtin_equals_the_hf_meta_model():
    transformers = pytest.importorskip("transformers")
    c = configs.load("glm-4-9b-chat")
    hf = {k: v for k, v in c.hf.items() if not k.startswith("_") and k not in ("architectures", "model_type")}
    assert hf_meta.meta_model(transformers.AutoConfig.for_model("glm", **hf))[1] == c.total_params()


_GLM_ROWS = {"chatglm 9B Q4_K - Medium       |   5.79 GiB |     9.40 B": ("glm-4-9b-chat", "Q4_K_M"),
             "chatglm 9B Q8_0                |   9.30 GiB |     9.40 B": ("glm-4-9b-chat", "q8_0")}


def test_glm_llama_bench_rows_name_the_builtin(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _GLM_ROWS, "CUDA       |  99 |         1 |           tg128 |       70.10 ± 0.50")
    assert im._arch_of("glm") == "chatglm" and im._arch_of("glm4") == "glm4"
    assert im.model_candidates("chatglm 9B Q4_K - Medium")[0] == ["glm-4-9b-chat"]
    # ChatGLM3-6B's row ("chatglm 6B", 28 layers) is no built-in; a glm4 9B row stays GLM-4-9B-0414
    assert im.model_candidates("chatglm 6B Q4_K - Medium", 6.24e9)[0] == []
    assert im.model_candidates("glm4 9B Q4_K - Medium", 9.4e9)[0] == ["glm-4-9b"]


def test_emulated_cuda_model_runs_glm():
    """CudaModel's wiring for GLM (q/k/v biases, interleaved rope on half the head) on tests/cuda_emulator.py against
    glmbench.Model on the same weights (bf16 accuracy). The CUDA kernels themselves are not checked here (no GPU):
    rope.cu takes rot_dim and the interleaved layout as Cohere's / ERNIE's do."""
    import cuda_emulator
    from glmbench import cuda
    restore = cuda_emulator.install()
    try:
        cfg = configs.from_hf({**_GLM, "vocab_size": 97, "max_position_embeddings": 256})
        m = cuda.CudaModel(cfg, max_context=64, seed=3)
        cpu = glmbench.Model(cfg, state_dict=m.host_weights(), weights="bf16", kv="f32", max_context=64)
        toks = [5, 17, 3, 88, 41]
        got, want = m.prefill(toks).to_numpy(), cpu.prefill(np.array(toks))
        assert np.abs(got - want).max() < 5e-2 * np.abs(want).max()
        got, want = m.decode(7).to_numpy()[0], cpu.decode(7)
        assert np.abs(got - want).max() < 5e-2 * np.abs(want).max()
    finally:
        cuda.set_poison(False)
        restore()


# ---- InternLM3 -------------------------------------------------------------------------------------------------
_ILM = dict(_B, model_type="internlm3", head_dim=32, rms_norm_eps=1e-5)


@pytest.mark.parametrize("kw", [{}, dict(qkv_bias=True, bias=True), dict(attention_bias=True, mlp_bias=True),
                                dict(head_dim=16, tie_word_embeddings=True)])
def test_internlm3_parameters_equal_the_hf_model(kw):
    cfg = _hf_counts_equal("internlm3", {**_ILM, **kw})
    biased = bool(kw.get("qkv_bias") or kw.get("attention_bias"))
    # HF's Llama layers: attention_bias on q / k / v and o, mlp_bias on gate / up / down (priced; Model runs none)
    assert (cfg.attention_bias, cfg.attention_out_bias, cfg.mlp_bias) == (biased,) * 3
    assert cfg.forward_unsupported() == (["mlp_bias (biases on the MLP's gate / up / down projections)"] if biased else [])
    assert cfg.rope_layout == "half" and cfg.rope_dim == cfg.head_dim and cfg.n_layer_norms == 2


def test_internlm3_config_defaults_and_errors():
    c = configs.from_hf({k: v for k, v in _ILM.items() if k not in ("head_dim", "num_key_value_heads")})
    assert (c.head_dim, c.n_kv_heads, c.attention_bias, c.mlp_bias, c.tie_word_embeddings) == (128, 2, False, False, False)
    for bad, match in (({"qkv_bias": True}, r"`qkv_bias` / `attention_bias` = True and `bias` / `mlp_bias` = False differ"),
                       ({"qkv_bias": True, "attention_bias": False, "bias": True},
                        r"`qkv_bias` = True and `attention_bias` = False disagree"),
                       ({"bias": "no"}, r"`mlp_bias` must be true or false, got 'no'"),
                       ({"hidden_size": 66}, r"`hidden_size`=66 is not a multiple of `num_attention_heads`=4"),
                       ({"num_key_value_heads": 3}, r"not a multiple of `num_key_value_heads`=3")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_ILM, **bad})
    # biases on both (as InternLM3Config allows): priced with them, refused by Model (its MLP has none)
    b = configs.from_hf({**_ILM, "qkv_bias": True, "bias": True})
    with pytest.raises(ValueError, match="mlp_bias"):
        glmbench.Model(b, weights="f32", max_context=8)


def test_internlm3_written_file_reads_as_llama(tmp_path):
    """conversion/internlm.py InternLM3Model writes llama.cpp's llama (key_length = head_dim, rope.dimension_count,
    q / k rows permuted): the file reads back as a llama config of InternLM3's shape, priced the same."""
    p = str(tmp_path / "ilm.gguf")
    want = configs.from_hf(_ILM, "synth")
    gguf_writer.write_zero_file(p, want, "llama", {**gguf_writer.gqa_meta(want), "attention.key_length": 32,
                                                   "attention.value_length": 32, "rope.dimension_count": 32})
    cfg = gguf_writer.load_stated(p)
    assert gguf_writer.config_diff(cfg, want) == {"model_type": ("llama", "internlm3")}
    assert cfg.total_params() == want.total_params() and cfg.kv_bytes_per_token() == want.kv_bytes_per_token()
    assert cfg.file_weights.extra_bytes == cfg.file_weights.skipped_bytes == 0
    # the same config but for the name of its family: priced alike (the file's own bytes aside)
    same = dataclasses.replace(cfg, model_type="internlm3", name="synth", file_weights=None)
    assert same == want
    a, b = cm.Setup(same, "rtx-3090", weights="Q4_K_M"), cm.Setup(want, "rtx-3090", weights="Q4_K_M")
    assert cm.decode(a, 100).seconds == cm.decode(b, 100).seconds


@pytest.mark.slow
def test_internlm3_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves (config.json model_type internlm3, LlamaForCausalLM's names) read by
    checkpoint.load_model: every stored byte counted, logits as HF's, the layers one C call each."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    from glmbench.models import checkpoint
    _, hf = tiny_hf_model("internlm3")
    hf.save_pretrained(str(tmp_path))
    assert json.load(open(tmp_path / "config.json"))["model_type"] == "internlm3"
    c = configs.load(str(tmp_path))
    assert c.model_type == "internlm3"
    fw = c.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"
    m = checkpoint.load_model(str(tmp_path), kv="f32", max_context=32)
    assert all(layer.runs_in_c(1) for layer in m.layers)
    prompt, steps = [3, 17, 42, 5, 9, 1], [7, 11]
    errs = hf_oracle.logit_errors(hf, m, prompt, steps)
    assert max(errs) < 1e-4, errs


def test_internlm3_builtin_priced():
    c = configs.load("internlm3-8b")
    # 8.80 B (the card's 8B class); 2 KV heads of 128 on 48 layers
    assert (c.model_type, c.total_params(), c.kv_bytes_per_token("f16"), c.n_layers) == \
        ("internlm3", 8_804_241_408, 48 * 2 * 256 * 2, 48)
    assert not (c.attention_bias or c.mlp_bias) and c.head_dim == 128 and c.rope_theta == 5e7
    # its dynamic rope (as recalled) changes numerics only: priced; Model and CudaModel refuse it
    assert c.rope_type == "dynamic" and c.forward_unsupported() == [
        "rope_type 'dynamic' (supported: " + ", ".join(configs.ROPE_TYPES) + ")"]
    s = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
    d = cm.decode(s, 100)
    assert d.tok_s > 0 and cm.prefill(s, 512).tok_s > 0 and cm.memory(s, 8192).fits
    assert 0.9 * c.weight_bytes("Q4_K_M") < sum(op.bytes for op in d.ops) < c.weight_bytes("Q4_K_M")
    from glmbench import cuda
    with pytest.raises(ValueError, match="CudaModel: .*rope_scaling"):
        cuda.CudaModel(c)
    # the same layers without the scaling run in Model
    plain = configs.from_hf({**{k: v for k, v in c.hf.items() if k != "rope_scaling"}, "num_hidden_layers": 1,
                             "vocab_size": 64, "hidden_size": 128, "num_attention_heads": 4, "head_dim": 32,
                             "intermediate_size": 64})
    assert plain.forward_unsupported() == []
    m = glmbench.Model(plain, weights="f32", max_context=8)
    assert np.isfinite(m.prefill(np.arange(4))).all()


@pytest.mark.slow
def test_internlm3_builtin_equals_the_hf_meta_model():
    transformers = pytest.importorskip("transformers")
    c = configs.load("internlm3-8b")
    hf = {k: v for k, v in c.hf.items() if not k.startswith("_") and k not in ("architectures", "model_type")}
    assert hf_meta.meta_model(transformers.AutoConfig.for_model("internlm3", **hf))[1] == c.total_params()


_ILM_ROWS = {"llama 34B Q4_K - Medium        |   4.97 GiB |     8.80 B": ("internlm3-8b", "Q4_K_M"),
             "llama 34B Q8_0                 |   8.72 GiB |     8.80 B": ("internlm3-8b", "q8_0")}


def test_internlm3_llama_bench_rows_name_the_builtin(tmp_path):
    """An InternLM3 file is llama.cpp's llama of 48 layers, which src/models/llama.cpp labels "34B": its row is told
    by the params column; without one, a 'llama 34B' row fits CodeLlama-34B's 48 layers too (another shape: both
    named, a file name picks), and the Llama 3 8B rows stay theirs."""
    lb.check_rows_name_builtins(tmp_path, _ILM_ROWS, "CUDA       |  99 |         1 |           tg128 |       80.10 ± 0.50")
    assert im._arch_of("internlm3") == "llama"
    assert im.model_candidates("llama 34B Q4_K - Medium")[0] == ["codellama-34b", "internlm3-8b"]
    with pytest.raises(im.AmbiguousModel, match="codellama-34b, internlm3-8b"):
        im.identify_model(None, "llama 34B Q4_K - Medium")
    assert im.identify_model("internlm3-8b-instruct-q4_k_m.gguf", "llama 34B Q4_K - Medium")[0] == "internlm3-8b"
    assert "internlm3-8b" not in im.model_candidates("llama 8B Q4_K - Medium")[0]
    assert "internlm3-8b" not in im.model_candidates("llama 8B Q4_K - Medium", 8.03e9)[0]
