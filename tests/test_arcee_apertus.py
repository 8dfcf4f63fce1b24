"""Arcee AFM (arcee): Llama's layers with an ungated relu2 MLP. GGUF files laid out as llama.cpp's converter writes
them (conversion/llama.py ArceeModel: LlamaModel's keys, permuted q / k rows, the rope.scaling keys of YaRN), written
here with the gguf package so the metadata reading is tested without llama.cpp's sources (its own converter's files:
tests/test_converted_gguf.py), llama-bench's names for them, what the cost model makes of the built-in, the HF folder
transformers saves, and the config's errors. The forward pass against HF's tiny models: tests/test_model_hf.py."""
import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

import glmbench  # noqa: E402
from glmbench.models import configs  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

_BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096)
_ARCEE = dict(_BASE, model_type="arcee", rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                                          "original_max_position_embeddings": 1024})


def _arcee_meta(cfg, yarn=True):
    """The keys conversion/llama.py ArceeModel writes (LlamaModel's, and TextModel's rope.scaling keys for YaRN)."""
    meta = gguf_writer.gqa_meta(cfg)
    if yarn:
        meta.update({"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0,
                     "rope.scaling.original_context_length": 1024})
    return meta


def _write_arcee(path, hc, yarn=True):
    cfg = configs.from_hf(hc, "synth")
    w = gguf.GGUFWriter(path, "arcee")
    meta = _arcee_meta(cfg, yarn)
    st = meta.pop("rope.scaling.type", None)
    gguf_writer.add_metadata(w, "arcee", meta)
    if st:
        w.add_string("arcee.rope.scaling.type", st)
    gguf_writer.add_zero_tensors(w, cfg, "arcee")
    gguf_writer.finish(w)
    return cfg


# ---- configs -------------------------------------------------------------------------------------------------------
def test_arcee_config_is_llamas_with_an_ungated_relu2_mlp():
    c = configs.from_hf(_ARCEE)
    assert not c.mlp_gated and c.hidden_act == "relu2" and c.mlp_matrices == 2
    shapes = c.tensor_shapes()
    assert "model.layers.0.mlp.gate_proj.weight" not in shapes
    assert shapes["model.layers.0.mlp.up_proj.weight"] == (96, 64)
    assert shapes["model.layers.0.mlp.down_proj.weight"] == (64, 96)
    # two MLP matrices per layer, not three: 4 x (attention 64 x (64 + 32 + 32 + 64) + MLP 2 x 64 x 96 + 2 norms)
    assert c.total_params() == 2 * 128 * 64 + 64 + 4 * (64 * 192 + 2 * 64 * 96 + 128)
    assert c.rope_type == "yarn" and c.forward_unsupported() == []
    # ArceeConfig's defaults: relu2, untied, KV heads = heads, rms eps 1e-5
    d = configs.from_hf({k: v for k, v in _ARCEE.items() if k not in ("num_key_value_heads", "rms_norm_eps")})
    assert (d.hidden_act, d.tie_word_embeddings, d.n_kv_heads, d.rms_norm_eps) == ("relu2", False, 4, 1e-5)
    # mlp_bias: the up / down biases priced (ArceeMLP builds them), not run
    b = configs.from_hf(dict(_ARCEE, mlp_bias=True))
    assert b.total_params() == c.total_params() + 4 * (96 + 64)
    assert "model.layers.0.mlp.up_proj.bias" in b.tensor_shapes() and b.forward_unsupported()
    # another activation in the ungated MLP: priced, and Model says it does not run it
    for act in ("silu", "gelu"):
        assert any(act in s for s in configs.from_hf(dict(_ARCEE, hidden_act=act)).forward_unsupported())


def test_arcee_bad_configs_are_named():
    with pytest.raises(ValueError, match=r"`hidden_act` must be a string"):
        configs.from_hf(dict(_ARCEE, hidden_act=2))
    with pytest.raises(ValueError, match=r"`intermediate_size`"):
        configs.from_hf({k: v for k, v in _ARCEE.items() if k != "intermediate_size"})
    with pytest.raises(ValueError, match=r"`num_attention_heads`=4 is not a multiple of `num_key_value_heads`=3"):
        configs.from_hf(dict(_ARCEE, num_key_value_heads=3))
    with pytest.raises(ValueError, match=r"`mlp_bias` must be true or false"):
        configs.from_hf(dict(_ARCEE, mlp_bias="yes"))


def test_arcee_runs_op_by_op_and_cuda_refuses_it():
    """The ungated MLP has no C layer (the C layer's MLP is SwiGLU): every layer runs forward_py; CudaModel refuses
    the config before touching a GPU."""
    hc = {k: v for k, v in _ARCEE.items() if k != "rope_parameters"}
    m = glmbench.Model(configs.from_hf(dict(hc, vocab_size=64)), weights="f32", max_context=16)
    assert [layer.runs_in_c(1) for layer in m.layers] == [False] * 4
    assert np.all(np.isfinite(m.prefill(np.arange(6))))
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"an ungated MLP"):
        cuda.CudaModel(configs.from_hf(hc))


# ---- GGUF ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("yarn", [True, False])
def test_arcee_written_file_reads_as_its_config(tmp_path, yarn):
    p = str(tmp_path / "arcee.gguf")
    hc = _ARCEE if yarn else {k: v for k, v in _ARCEE.items() if k != "rope_parameters"}
    want = _write_arcee(p, hc, yarn)
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {}
    assert not cfg.mlp_gated and cfg.hidden_act == "relu2" and not cfg.mlp_bias
    assert cfg.rope_type == ("yarn" if yarn else "default")
    if yarn:
        assert cfg.rope_scaling["factor"] == 4.0 and cfg.rope_scaling["original_max_position_embeddings"] == 1024


def test_arcee_file_with_mlp_biases(tmp_path):
    # llama.cpp's arcee loads no MLP bias, but the file's tensors are HF's mlp_bias when present (read, priced)
    p = str(tmp_path / "b.gguf")
    want = _write_arcee(p, dict(_ARCEE, mlp_bias=True))
    cfg = gguf_writer.check_reads_as(p, want)
    assert cfg.mlp_bias


# ---- llama-bench's names (llama.cpp's label: src/models/arcee.cpp 36 layers -> "4B") --------------------------------
def test_arcee_llama_bench_rows_name_the_builtin(tmp_path):
    rows = {"arcee 4B Q4_K - Medium         |   2.64 GiB |     4.62 B": ("afm-4.5b", "Q4_K_M"),
            "arcee 4B Q8_0                  |   4.59 GiB |     4.62 B": ("afm-4.5b", "q8_0")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |       80.10 ± 0.50")
    assert im._arch_of("arcee") == "arcee"
    # the label alone (no params column): llama.cpp gives "4B" by the layer count, which the 4.62 B would not reach
    assert im.identify_model("/m/model.gguf", "arcee 4B Q4_K - Medium")[0] == "afm-4.5b"
    assert im.model_candidates("arcee 4B Q4_K - Medium", 4.62e9)[0] == ["afm-4.5b"]
    assert im.model_candidates("arcee 4B Q4_K - Medium", 8.0e9)[0] == []


# ---- the built-in priced -------------------------------------------------------------------------------------------
def test_afm_builtin_priced():
    c = configs.load("afm-4.5b")
    assert c.model_type == "arcee" and not c.mlp_gated and c.rope_type == "yarn" and not c.tie_word_embeddings
    # 36 x (attention 2560 x (2560 + 512 + 512 + 2560) + MLP 2 x 2560 x 18432 + 2 norms) + 2 x 128004 x 2560 + 2560
    assert c.total_params() == 4_619_184_640 and c.kv_bytes_per_token("f16") == 36 * 4 * 256 * 2
    assert c.forward_unsupported() == []
    st = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
    d = cm.decode(st, 100)
    assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0
    # every matrix read once a token (the input embedding one row: 6% of this small model's bytes)
    assert 0.9 * c.weight_bytes("Q4_K_M") < sum(op.bytes for op in d.ops) < c.weight_bytes("Q4_K_M")
    # an ungated MLP reads two matrices, not three: the same sizes gated would cost half an MLP more per token
    g = configs.from_hf({**c.hf, "model_type": "llama", "hidden_act": "silu"})
    assert c.total_params() + 36 * 2560 * 18432 == g.total_params()
    assert cm.decode(cm.Setup(g, "rtx-3090", weights="Q4_K_M"), 100).tok_s < d.tok_s


@pytest.mark.slow
def test_arcee_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves read by checkpoint.load_model: every stored byte on a tensor of the config,
    logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import glm_logits, hf_logits, rel_err, tiny_hf_model
    from glmbench.models import checkpoint
    _, hf = tiny_hf_model("arcee")
    hf.save_pretrained(str(tmp_path))
    fw = configs.load(str(tmp_path)).file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"
    m = checkpoint.load_model(str(tmp_path), kv="f32", max_context=32)
    want = hf_logits(hf, [3, 17, 42, 5, 9, 1], [7, 11])
    assert max(rel_err(a, b) for a, b in zip(glm_logits(m, [3, 17, 42, 5, 9, 1], [7, 11]), want)) < 1e-4
