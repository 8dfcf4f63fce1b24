"""Gemma 3n (gemma3n_text, the gemma3n wrapper's text model), Hunyuan (hunyuan_v1_dense, hunyuan_v1_moe) and
Phi-3.5-MoE (phimoe): parameter counts against HF's meta-device models, GGUF files laid out as llama.cpp's converter
writes them (conversion/gemma.py Gemma3NModel, conversion/hunyuan.py, conversion/phi.py), written here with the gguf
package and, where the vendored converter is at hand, converted from tiny HF models; llama-bench's names for them
and what the cost model makes of the built-ins. Gemma 3n is priced, not run (configs.PRICED_ONLY); Hunyuan and
Phi-3.5-MoE run in glmbench.Model (their logits against HF's tiny models: tests/test_model_hf.py; the converted
Hunyuan files' and a Phi-3.5-MoE file holding HF's weights here)."""
import math

import numpy as np

import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_meta  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

# ten layers: every 5th global (4, 9); the last five share the cache of layer 3 (windowed) or 4 (global)
_G3N = dict(model_type="gemma3n_text", vocab_size=160, hidden_size=64, intermediate_size=[96] * 5 + [64] * 5,
            num_hidden_layers=10, num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
            num_kv_shared_layers=5, vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, laurel_rank=4,
            max_position_embeddings=4096, activation_sparsity_pattern=[0.95] * 3 + [0.0] * 7)


_meta_count = hf_meta.meta_model


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
    gguf_writer.write_zero_file(path, cfg, "gemma3n", meta, drop, extra)
    return cfg


def test_gemma3n_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "g3n.gguf")
    want = _write_gemma3n(p)
    _, names = gguf_writer.read_back(p, want)
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


# ---- Hunyuan and Phi-3.5-MoE ----------------------------------------------------------------------------------
_B = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096)
_SYNTH = {"hunyuan_v1_dense": dict(_B, model_type="hunyuan_v1_dense"),
          "hunyuan_v1_moe": dict(_B, model_type="hunyuan_v1_moe", num_experts=4, moe_topk=2),
          "phimoe": dict(_B, model_type="phimoe", num_local_experts=4, num_experts_per_tok=2, attention_bias=True,
                         lm_head_bias=True)}
_ARCH = {"hunyuan_v1_dense": "hunyuan-dense", "hunyuan_v1_moe": "hunyuan-moe", "phimoe": "phimoe"}
_MOE_KEYS = {"hunyuan_v1_moe": {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 96,
                                "expert_shared_feed_forward_length": 96},
             "phimoe": {"expert_count": 4, "expert_used_count": 2}}


@pytest.mark.parametrize("mt,kw", [("hunyuan_v1_dense", {}), ("hunyuan_v1_dense", dict(attention_bias=True)),
                                   ("hunyuan_v1_moe", dict(num_experts=4, moe_topk=2)),
                                   ("phimoe", dict(num_local_experts=4, num_experts_per_tok=2)),
                                   ("phimoe", dict(num_local_experts=4, num_experts_per_tok=2, attention_bias=True,
                                                   lm_head_bias=True, sliding_window=8))])
def test_hunyuan_phimoe_parameters_equal_the_hf_model(mt, kw):
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model(mt, **{**{k: v for k, v in _B.items()}, "head_dim": 16, **kw})
    m, n = _meta_count(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == mt and cfg.total_params() == n
    assert sum(configs._numel(s) for s in cfg.tensor_shapes().values()) == n
    hf = {k: tuple(p.shape) for k, p in m.named_parameters()}
    ours = cfg.tensor_shapes()
    # every tensor outside the MoE by HF's own name and shape (the experts stacked apart, HF's gate_up fused)
    assert {k: v for k, v in hf.items() if ".mlp." not in k} == {k: v for k, v in ours.items() if ".mlp." not in k}
    assert cfg.forward_unsupported() == []
    if mt.startswith("hunyuan"):   # per-head q / k norms, HF's names
        assert cfg.qk_norm and ours["model.layers.0.self_attn.query_layernorm.weight"] == (16,)
    if mt == "hunyuan_v1_moe":     # experts and the shared MLP intermediate_size wide, softmax top-2 renormalised
        assert (cfg.n_routed_experts, cfg.n_experts_per_tok, cfg.moe_intermediate_size,
                cfg.shared_expert_intermediate_size, cfg.norm_topk_prob) == (4, 2, 96, 96, True)
    if mt == "phimoe":
        assert cfg.norm_bias and cfg.lm_head_bias == bool(kw.get("lm_head_bias"))
        assert cfg.windowed_layers == ((0, 1, 2, 3) if kw.get("sliding_window") else ())


def test_hunyuan_config_variants_and_errors():
    # the released config.json's per-layer lists, one value each
    c = configs.from_hf({**_SYNTH["hunyuan_v1_moe"], "moe_topk": [2] * 4, "num_experts": 4,
                         "moe_intermediate_size": [96] * 4, "num_shared_expert": [1] * 4})
    assert (c.n_routed_experts, c.n_experts_per_tok) == (4, 2)
    for bad, match in (({"moe_intermediate_size": [64] * 4}, r"`moe_intermediate_size`.*96 wide"),
                       ({"num_shared_expert": [2] * 4}, r"`num_shared_expert`"),
                       ({"moe_topk": [2, 2, 1, 1]}, r"`moe_topk` must be an integer")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_SYNTH["hunyuan_v1_moe"], **bad})


def _write(path, mt, drop=(), **extra):
    return gguf_writer.write_synth(path, _SYNTH[mt], _ARCH[mt], _MOE_KEYS.get(mt, {}), drop, extra)


@pytest.mark.parametrize("mt", list(_SYNTH))
def test_hunyuan_phimoe_written_file_reads_as_its_config(tmp_path, mt):
    p = str(tmp_path / f"{mt}.gguf")
    want = _write(p, mt)
    _, names = gguf_writer.read_back(p, want)
    if mt.startswith("hunyuan"):
        assert "blk.0.attn_q_norm.weight" in names
    if mt == "hunyuan_v1_moe":
        assert {"blk.0.ffn_gate_inp.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_up_shexp.weight"} <= names
    if mt == "phimoe":
        assert {"blk.0.attn_norm.bias", "blk.0.attn_output.bias", "output.bias", "output_norm.bias"} <= names


def test_hunyuan_phimoe_file_errors_and_window(tmp_path):
    p = str(tmp_path / "hy.gguf")
    _write(p, "hunyuan_v1_moe", **{"expert_shared_feed_forward_length": 48})
    with pytest.raises(gguf_file.GGUFError, match="expert_shared_feed_forward_length' = 48 differs"):
        configs.load(p)
    p = str(tmp_path / "hy2.gguf")
    _write(p, "hunyuan_v1_moe", drop=("expert_count",))
    with pytest.raises(gguf_file.GGUFError, match="expert_count"):
        configs.load(p)
    # Phi-3.5-MoE's window (131072 in the released config) is not applied by llama.cpp's phimoe, nor here
    p = str(tmp_path / "ph.gguf")
    _write(p, "phimoe", **{"attention.sliding_window": 8})
    with pytest.warns(gguf_file.GGUFNotice, match="full attention"):
        c = configs.load(p)
    assert c.sliding_window is None and c.windowed_layers == ()


def test_hunyuan_phimoe_folder_names_as_transformers_saves_them(tmp_path):
    """transformers 5's names for the router (Hunyuan's mlp.gate.wg, Phi-3.5-MoE's mlp.router) and Hunyuan's shared
    MLP (mlp.shared_mlp) count as the config's tensors: no byte of the folder left over."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    for mt in ("hunyuan_v1_moe", "phimoe"):
        # (transformers 5.25's Hunyuan needs head_dim stated: its attention reads None otherwise)
        hc = transformers.AutoConfig.for_model(mt, **{k: v for k, v in _SYNTH[mt].items() if k != "model_type"},
                                               head_dim=16)
        m = transformers.AutoModelForCausalLM.from_config(hc)
        d = tmp_path / mt
        m.save_pretrained(str(d))
        fw = configs.load(str(d)).file_weights
        assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32", mt
        assert fw.total_bytes == 4 * sum(p.numel() for p in m.parameters())
    assert torch.float32 == next(m.parameters()).dtype


def test_hunyuan_phimoe_builtins_priced():
    hy, ph = configs.load("hunyuan-a13b"), configs.load("phi-3.5-moe")
    # the cards' 80B total / 13B active (Hunyuan-A13B, tied embeddings) and 42B / 6.6B (Phi-3.5-MoE); llama-bench's
    # 80.39 B and 41.87 B
    assert (hy.total_params(), hy.active_params()) == (80_393_183_232, 12_747_448_320)
    assert (ph.total_params(), ph.active_params()) == (41_873_153_344, 6_640_999_744)
    assert hy.kv_bytes_per_token("f16") == ph.kv_bytes_per_token("f16") == 32 * 8 * (128 + 128) * 2
    assert hy.moe_layers == ph.moe_layers == tuple(range(32)) and hy.shared_expert_intermediate_size == 3072
    assert ph.norm_bias and ph.lm_head_bias and ph.attention_bias and ph.attention_out_bias
    for c in (hy, ph):
        st = cm.Setup(c, "h200-sxm", weights="Q4_K_M")
        d = cm.decode(st, 100)
        assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0
        # decode reads the attention, the shared MLP and the experts a token's batch touches, not all of them
        assert sum(op.bytes for op in d.ops) < 0.3 * c.weight_bytes("Q4_K_M")
        assert c.forward_unsupported() == []     # (Hunyuan-A13B's NTK-alpha rope: ntk_alpha, run)
    assert hy.rope_type == "ntk_alpha"


@pytest.mark.slow
def test_hunyuan_phimoe_builtins_equal_hf_meta_models():
    transformers = pytest.importorskip("transformers")
    for n, cls in (("hunyuan-a13b", "HunYuanMoEV1Config"), ("phi-3.5-moe", "PhimoeConfig")):
        c = configs.load(n)
        hc = getattr(transformers, cls)(**{k: v for k, v in c.hf.items()
                                           if not k.startswith("_") and k not in ("architectures", "model_type")})
        assert _meta_count(hc)[1] == c.total_params(), n


_HY_ROWS = {"hunyuan-moe A13B Q4_K - Medium  |  45.43 GiB |    80.39 B": ("hunyuan-a13b", "Q4_K_M"),
            "phimoe 16x3.8B Q4_K - Medium    |  23.55 GiB |    41.87 B": ("phi-3.5-moe", "Q4_K_M")}


def test_hunyuan_phimoe_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _HY_ROWS, "CUDA       |  99 |         1 |           tg128 |       50.10 ± 0.50")
    assert [im._arch_of(t) for t in ("hunyuan_v1_dense", "hunyuan_v1_moe", "phimoe")] == \
        ["hunyuan-dense", "hunyuan-moe", "phimoe"]
    # the size labels alone by the layer count (llama.cpp's hunyuan-moe / phimoe: 32 layers)
    assert im.model_candidates("hunyuan-moe A13B Q4_K - Medium")[0] == ["hunyuan-a13b"]
    assert im.model_candidates("phimoe 16x3.8B Q8_0")[0] == ["phi-3.5-moe"]
    assert im.model_candidates("hunyuan-dense 7B Q4_K - Medium", 7.5e9)[0] == []


@pytest.mark.parametrize("mt", ["hunyuan_v1_dense", "hunyuan_v1_moe"])
def test_hunyuan_converted_file(tmp_path, mt):
    """llama.cpp's converter on tiny HF Hunyuans (the MoE with the released config's per-layer lists, which
    conversion/hunyuan.py reads): the config read back is HF's, every byte a tensor of it. (Phi-3.5-MoE's converter,
    conversion/phi.py PhiMoeModel, takes the released checkpoint's layout, PhiMoEForCausalLM with
    block_sparse_moe.experts.N.w1 / w2 / w3, not what transformers 5.25 saves: its files are the written ones above.)"""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    kw = dict(num_experts=4, moe_topk=[2] * 4, moe_intermediate_size=[96] * 4, num_shared_expert=[1] * 4) \
        if mt == "hunyuan_v1_moe" else {}
    hc = transformers.AutoConfig.for_model(mt, **{k: v for k, v in _B.items()}, head_dim=16, pad_token_id=0,
                                           bos_token_id=1, eos_token_id=2, **kw)
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc)
    f = lc.convert(lc.save_hf(m, hc, tmp_path / "hf"), tmp_path / f"{mt}.gguf", "q8_0")
    cfg = configs.load(f)
    assert gguf_writer.config_diff(cfg, configs.from_hf(hc.to_dict(), "hf")) == {}
    fw = cfg.file_weights
    assert fw.main_type == "Q8_0" and fw.extra_bytes == fw.skipped_bytes == 0
    s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
    assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0


def test_cuda_model_refuses_the_three_families():
    """glmbench.cuda.CudaModel runs the Llama / Qwen layer only: Gemma 3n (priced, not run), Hunyuan (q / k norms after
    rope) and Phi-3.5-MoE (biased LayerNorms, sparsemixer), which glmbench.Model runs on the CPU, are refused before
    anything reaches a GPU."""
    from glmbench import cuda
    for hc in (_G3N, _SYNTH["hunyuan_v1_dense"], _SYNTH["hunyuan_v1_moe"], _SYNTH["phimoe"]):
        with pytest.raises(ValueError, match=r"CudaModel: .* which the CUDA path does not implement"):
            cuda.CudaModel(configs.from_hf(hc))


@pytest.mark.slow
@pytest.mark.parametrize("mt", ["hunyuan_v1_dense", "hunyuan_v1_moe"])
def test_hunyuan_converted_file_runs_with_hf_logits(tmp_path, mt):
    """llama.cpp's converter on tiny HF Hunyuans (F32): glmbench.Model runs the file (checkpoint.load_model) with HF's
    logits, a prefill and decode steps. The dense one with the released configs' NTK-alpha rope ("dynamic" with an
    alpha, which conversion/hunyuan.py HunYuanModel folds into rope.freq_base; its MoE converter takes only the
    released alpha 1000 over 128-dim heads, so the MoE file turns by plain rope)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    from glmbench.models import checkpoint
    kw = dict(num_experts=4, moe_topk=[2] * 4, moe_intermediate_size=[96] * 4, num_shared_expert=[1] * 4) \
        if mt == "hunyuan_v1_moe" else \
        dict(max_position_embeddings=32768, rope_parameters={"rope_type": "dynamic", "alpha": 8.0, "factor": 1.0,
                                                             "rope_theta": 10000.0})
    hc = transformers.AutoConfig.for_model(mt, **{**_B, "head_dim": 16, "pad_token_id": 0, "bos_token_id": 1,
                                                  "eos_token_id": 2, **kw})
    m = hf_oracle.random_model(hc)
    f = lc.convert(lc.save_hf(m, hc, tmp_path / "hf"), tmp_path / f"{mt}.gguf", "f32")
    gm = checkpoint.load_model(f, kv="f32", max_context=16)
    if mt == "hunyuan_v1_dense":   # the alpha's base, as plain rope: HF's ntk_alpha frequencies
        np.testing.assert_allclose(gm.config.rope_theta ** (-np.arange(0, 16, 2) / 16),
                                   m.model.rotary_emb.inv_freq.double().numpy(), rtol=1e-6)
    errs = hf_oracle.logit_errors(m, gm, [3, 17, 5, 99, 42, 7], [11, 64, 2])
    assert max(errs) < 1e-4, errs


@pytest.mark.slow
def test_phimoe_file_with_hf_weights_runs_with_hf_logits(tmp_path):
    """A Phi-3.5-MoE GGUF laid out as llama.cpp's converter writes one (conversion/phi.py PhiMoeModel: phimoe's tensor
    names, the experts stacked, the LayerNorm, attention and output biases), holding a tiny HF model's weights (the
    converter itself takes only the released checkpoint's layout): glmbench.Model runs it with HF's logits, the
    sparsemixer routing by HF's default band (router_jitter_noise 0.01, which no GGUF key states)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from glmbench.models import checkpoint
    hc = transformers.AutoConfig.for_model("phimoe", **{k: v for k, v in _SYNTH["phimoe"].items() if k != "model_type"},
                                           head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    m = hf_oracle.random_model(hc)
    cfg = configs.from_hf(hc.to_dict(), "hf")
    sd = gguf_writer.hf_tensors(hc, m.state_dict())
    sd = {k.replace(".mlp.router.", ".mlp.gate."): v for k, v in sd.items()}
    p = str(tmp_path / "phimoe.gguf")
    w = gguf.GGUFWriter(p, "phimoe")
    gguf_writer.add_metadata(w, "phimoe", {**gguf_writer.gqa_meta(cfg), **_MOE_KEYS["phimoe"]})
    for name in cfg.tensor_shapes():
        w.add_tensor(gguf_file.gguf_name(name, "phimoe", cfg.n_layers), np.ascontiguousarray(sd[name], np.float32))
    gguf_writer.finish(w)
    gm = checkpoint.load_model(p, kv="f32", max_context=16)
    assert gguf_writer.config_diff(gm.config, cfg) == {}
    errs = hf_oracle.logit_errors(m, gm, [3, 17, 5, 99, 42, 7], [11, 64, 2])
    assert max(errs) < 1e-4, errs
