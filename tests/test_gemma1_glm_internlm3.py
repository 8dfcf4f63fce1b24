"""Gemma 1 (gemma): configs against HF's meta-device models, errors, GGUF files as llama.cpp's converter lays them
out (conversion/gemma.py GemmaModel: norms stored as 1 + w, lm_head dropped), written here with the gguf package and
converted from tiny folders where the vendored converter is at hand, HF folders as transformers saves them, llama-bench's
names and the built-ins. The forward pass against HF's tiny models: tests/test_model_hf.py (and here, the variants)."""
import json

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_meta  # noqa: E402
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
    assert {k: tuple(p.shape) for k, p in m.named_parameters()} == \
        {k: v for k, v in cfg.tensor_shapes().items() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    return cfg


def _run_against_hf(mt, tiny, prompt=(3, 17, 5, 99, 42, 7), steps=(11, 2, 60)):
    """A tiny random HF model of TINY-like dict `tiny` and glmbench.Model holding its weights: the logits of a prefill
    and decode steps agree (relative 1e-4)."""
    pytest.importorskip("torch")
    from test_model_hf import TINY, glm_logits, hf_logits, rel_err, tiny_hf_model
    saved = TINY.get(mt)
    TINY[mt] = tiny
    try:
        hc, hf = tiny_hf_model(mt)
    finally:
        TINY[mt] = saved
    cfg = configs.load(hc.to_dict())
    m = glmbench.Model(cfg, state_dict={k: v.numpy() for k, v in hf.state_dict().items()}, weights="f32", kv="f32",
                       max_context=32)
    errs = [rel_err(a, b) for a, b in zip(glm_logits(m, list(prompt), list(steps)), hf_logits(hf, list(prompt),
                                                                                            list(steps)))]
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
    gguf_writer.write_zero_file(q, want, "gemma", _gemma_meta(want), drop=("attention.key_length",))
    with pytest.raises(gguf_file.GGUFError, match="attn_q"):
        configs.load(q)


def test_gemma_gguf_norms_lose_the_one_the_converter_added(tmp_path):
    """A gemma GGUF holds GemmaRMSNorm's 1 + w (conversion/gemma.py GemmaModel.modify_tensors): checkpoint.load_model
    takes the 1 off and Model holds 1 + w again, so a file of norms 1 + w runs as HF with norms w."""
    torch = pytest.importorskip("torch")
    from test_model_hf import TINY, glm_logits, hf_logits, rel_err, tiny_hf_model
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
    assert max(rel_err(a, b) for a, b in zip(glm_logits(m, prompt, steps), hf_logits(hf, prompt, steps))) < 1e-4
    assert TINY["gemma"]["num_key_value_heads"] == 1 and torch is not None


@pytest.mark.slow
def test_gemma_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves (tied: no lm_head stored) read by checkpoint.load_model: every stored byte on a
    tensor of the config, logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import glm_logits, hf_logits, rel_err, tiny_hf_model
    from glmbench.models import checkpoint
    _, hf = tiny_hf_model("gemma")
    hf.save_pretrained(str(tmp_path))
    fw = configs.load(str(tmp_path)).file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"
    m = checkpoint.load_model(str(tmp_path), kv="f32", max_context=32)
    prompt, steps = [3, 17, 42, 5, 9, 1], [7, 11]
    assert max(rel_err(a, b) for a, b in zip(glm_logits(m, prompt, steps), hf_logits(hf, prompt, steps))) < 1e-4


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
