"""Gemma 3n (gemma3n_text, the gemma3n wrapper's text model), Hunyuan (hunyuan_v1_dense, hunyuan_v1_moe) and
Phi-3.5-MoE (phimoe): parameter counts against HF's meta-device models, GGUF files laid out as llama.cpp's converter
writes them (conversion/gemma.py Gemma3NModel, conversion/hunyuan.py, conversion/phi.py), written here with the gguf
package and, where the vendored converter is at hand, converted from tiny HF models; llama-bench's names for them
and what the cost model makes of the built-ins. All three are priced, not run (configs.PRICED_ONLY)."""
import math
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

# ten layers: every 5th global (4, 9); the last five share the cache of layer 3 (windowed) or 4 (global)
_G3N = dict(model_type="gemma3n_text", vocab_size=160, hidden_size=64, intermediate_size=[96] * 5 + [64] * 5,
            num_hidden_layers=10, num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
            num_kv_shared_layers=5, vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, laurel_rank=4,
            max_position_embeddings=4096, activation_sparsity_pattern=[0.95] * 3 + [0.0] * 7)


def _meta_count(hc):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(hc)
    return m, sum(p.numel() for p in m.parameters())


# ---- Gemma 3n --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(intermediate_size=96), dict(num_kv_shared_layers=0), {}])
def test_gemma3n_parameters_equal_the_hf_model(kw):
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model("gemma3n_text", **{k: v for k, v in {**_G3N, **kw}.items()
                                                              if k != "model_type"})
    m, n = _meta_count(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == "gemma3n_text" and cfg.total_params() == n
    shapes = cfg.tensor_shapes()
    assert sum(configs._numel(s) for s in shapes.values()) == n
    hf = {k: tuple(p.shape) for k, p in m.named_parameters()}
    # the AltUp projections stacked (as the converter stores them), every other tensor by HF's name and shape
    stacked = {k for k in hf if k.startswith(("model.altup_projections.", "model.altup_unembed_projections."))}
    assert {k: v for k, v in hf.items() if k not in stacked} == \
        {k: v for k, v in shapes.items() if not k.startswith("model.altup_")}
    shared = hc.num_kv_shared_layers
    assert cfg.cache_layers == tuple(range(10 - shared))
    if shared:   # each shared layer reads the last earlier layer of its kind (HF's kv_sharing_modes "store")
        assert [cfg.kv_source(i) for i in range(5, 10)] == [3, 3, 3, 3, 4]
        assert "model.layers.7.self_attn.k_proj.weight" not in shapes
    assert cfg.kv_bytes_per_token("f16") == len(cfg.cache_layers) * 2 * 2 * 16 * 2
    assert cfg.windowed_layers == (0, 1, 2, 3, 5, 6, 7, 8) and cfg.softmax_scale == 1.0
    assert cfg.forward_unsupported()[-1].endswith("(model_type 'gemma3n_text' is priced, not run)")


def test_gemma3n_config_fields_and_errors():
    c = configs.from_hf(_G3N)
    assert (c.altup_inputs, c.laurel_rank, c.ple_size, c.ple_vocab) == (4, 4, 8, 128)
    assert c.layer_intermediates == (96,) * 5 + (64,) * 5 and c.sparse_layers == (0, 1, 2)
    assert (c.rope_theta, c.rope_local_theta, c.final_logit_softcapping) == (1e6, 1e4, 30.0)
    # the HF default: 0.95 on the first 10 layers where there are more than 10
    d = configs.from_hf({**_G3N, "num_hidden_layers": 12, "intermediate_size": 96, "activation_sparsity_pattern": None})
    assert d.sparse_layers == tuple(range(10)) and d.layer_intermediates == ()
    # the wrapper's text_config, tied by the wrapper's own field
    w = configs.from_hf({"model_type": "gemma3n", "text_config": {**_G3N, "model_type": "gemma3n_text"},
                         "tie_word_embeddings": True})
    assert w.model_type == "gemma3n_text" and w.tie_word_embeddings
    for bad, match in (({"intermediate_size": [96] * 3}, r"`intermediate_size`"),
                       ({"activation_sparsity_pattern": [0.5] * 3}, r"`activation_sparsity_pattern`"),
                       ({"num_kv_shared_layers": 6}, r"`num_kv_shared_layers`=6: a shared layer's kind"),
                       ({"altup_active_idx": 4}, r"`altup_active_idx`")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_G3N, **bad})


def _write_gemma3n(path, hc=_G3N, drop=(), **extra):
    cfg = configs.from_hf(hc, "synth")
    L = cfg.n_layers
    w = gguf.GGUFWriter(path, "gemma3n")
    meta = gguf_writer.gqa_meta(cfg)
    meta.update({"feed_forward_length": [cfg.layer_intermediate(i) for i in range(L)],
                 "attention.sliding_window": cfg.sliding_window,
                 "attention.sliding_window_pattern": [i in cfg.windowed_layers for i in range(L)],
                 "attention.key_length": cfg.head_dim, "attention.value_length": cfg.head_dim,
                 "attention.shared_kv_layers": cfg.kv_shared_layers,
                 "embedding_length_per_layer_input": cfg.ple_size, "altup.num_inputs": cfg.altup_inputs,
                 "altup.active_idx": 0, "rope.freq_base_swa": cfg.rope_local_theta, "final_logit_softcapping": 30.0,
                 # (the converter's normal quantile of each layer's target: -inf where 0)
                 "activation_sparsity_scale": [1.6448536 if i in cfg.sparse_layers else -math.inf for i in range(L)]})
    for k in drop:
        meta.pop(k)
    meta.update(extra)
    gguf_writer.add_metadata(w, "gemma3n", meta)
    gguf_writer.add_zero_tensors(w, cfg, "gemma3n")
    gguf_writer.finish(w)
    return cfg


def test_gemma3n_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "g3n.gguf")
    want = _write_gemma3n(p)
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {}
    names = set(gguf_file.read(p).tensors)
    assert {"altup_proj.weight", "altup_unembd_proj.weight", "blk.0.laurel_l.weight", "blk.0.altup_predict_coef.weight",
            "per_layer_token_embd.weight", "blk.9.inp_gate.weight"} <= names
    # llama.cpp's own rules where the keys are missing: every 5th layer global, the cache shared from layer 20 on
    # (none of these ten), no sparsity
    p2 = str(tmp_path / "bare.gguf")
    _write_gemma3n(p2, dict(_G3N, num_kv_shared_layers=0),
                   drop=("attention.sliding_window_pattern", "attention.shared_kv_layers", "activation_sparsity_scale"))
    with pytest.warns(gguf_file.GGUFNotice, match="layers 20 on"):
        c2 = configs.load(p2)
    assert c2.windowed_layers == (0, 1, 2, 3, 5, 6, 7, 8) and c2.kv_shared_layers == 0 and c2.sparse_layers == ()
    p3 = str(tmp_path / "bad.gguf")
    _write_gemma3n(p3, **{"activation_sparsity_scale": [0.0] * 3})
    with pytest.raises(gguf_file.GGUFError, match="activation_sparsity_scale' has 3 values"):
        configs.load(p3)


def test_gemma3n_converted_file(tmp_path):
    """llama.cpp's converter on a tiny HF Gemma 3n: the config read back is HF's but for the per-layer table, which
    the converter pads to the whole vocabulary (what llama.cpp loads and the file holds)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    hc = transformers.AutoConfig.for_model("gemma3n_text", **{k: v for k, v in _G3N.items() if k != "model_type"},
                                           pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc)
    d = lc.save_hf(m, hc, tmp_path / "hf")
    hf_fw = configs.load(d).file_weights      # (the folder's per-index AltUp projections count as the stacked ones)
    assert hf_fw.extra_bytes == 0 and hf_fw.main_type == "F32"
    want = configs.from_hf(hc.to_dict(), "hf")
    f = lc.convert(d, tmp_path / "g3n.gguf", "q8_0")
    cfg = configs.load(f)
    assert gguf_writer.config_diff(cfg, want) == {"ple_vocab": (160, 128)}
    assert cfg.total_params() == want.total_params() + 32 * 10 * 8
    fw = cfg.file_weights
    assert fw.main_type == "Q8_0" and fw.extra_bytes == fw.skipped_bytes == 0
    s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
    assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    from glmbench.models import checkpoint
    with pytest.raises(ValueError, match="priced, not run"):
        checkpoint.load_model(f)


def test_gemma3n_builtins_priced():
    e4, e2 = configs.load("gemma-3n-e4b"), configs.load("gemma-3n-e2b")
    # HF's counts of the text model (checked against Gemma3nForCausalLM on the meta device below); the cards' 8B / 5B
    # "raw" totals hold the vision and audio towers too, their 4B / 2B "effective" ones neither the per-layer table
    # nor the input embedding
    for c, total, kv_layers, L in ((e4, 6_835_235_568, 20, 35), (e2, 4_435_182_688, 20, 30)):
        assert c.total_params() == total and c.n_layers == L and len(c.cache_layers) == kv_layers
        assert c.kv_bytes_per_token("f16") == kv_layers * 2 * 2 * 256 * 2
        assert c.sparse_layers == tuple(range(10)) and c.windowed_layers == tuple(i for i in range(L) if i % 5 != 4)
        eff = total - c.ple_vocab * L * c.ple_size - c.vocab_size * c.hidden_size
        assert abs(eff / 1e9 - (3.95 if L == 35 else 1.88)) < 0.02
        st = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
        d = cm.decode(st, 100)
        assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0
        # decode reads one row of the per-layer table, not the table
        assert 0.4 * c.weight_bytes("Q4_K_M") < sum(op.bytes for op in d.ops) < 0.8 * c.weight_bytes("Q4_K_M")
        assert any(op.name == "altup.streams" for op in d.ops)
    with pytest.raises(ValueError, match="priced, not run"):
        __import__("glmbench").Model(e2, weights="f32", max_context=16)


@pytest.mark.slow
def test_gemma3n_builtins_equal_hf_meta_models():
    transformers = pytest.importorskip("transformers")
    for n in ("gemma-3n-e4b", "gemma-3n-e2b"):
        c = configs.load(n)
        hc = transformers.Gemma3nTextConfig(**{k: v for k, v in c.hf.items()
                                               if not k.startswith("_") and k not in ("architectures", "model_type")})
        assert _meta_count(hc)[1] == c.total_params(), n


# ---- llama-bench's names (src/models/gemma3n.cpp: 35 layers -> "E4B", 30 -> "E2B") --------------------------------
_ROWS = {"gemma3n E4B Q4_K - Medium      |   4.24 GiB |     6.87 B": ("gemma-3n-e4b", "Q4_K_M"),
         "gemma3n E2B Q4_K - Medium      |   2.79 GiB |     4.46 B": ("gemma-3n-e2b", "Q4_K_M"),
         "gemma3n E2B Q8_0               |   4.45 GiB |     4.46 B": ("gemma-3n-e2b", "q8_0")}


def test_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       80.10 ± 0.50")
    assert im._arch_of("gemma3n_text") == im._arch_of("gemma3n") == "gemma3n"
    # the size label alone (no params column) by the layer count
    assert im.identify_model("/m/model.gguf", "gemma3n E4B Q4_K - Medium")[0] == "gemma-3n-e4b"
    assert im.model_candidates("gemma3n E2B Q4_K - Medium")[0] == ["gemma-3n-e2b"]
    # llama-bench's count: the file's unused k / v of the kv-shared layers and its padded per-layer table
    assert round(im._gguf_params(configs.load("gemma-3n-e4b")) / 1e9, 2) == 6.87
