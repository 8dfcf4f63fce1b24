"""OLMo 2 / OLMo 3 (olmo2, olmo3), SmolLM3 (smollm3) and EXAONE 4 (exaone4): GGUF files laid out as llama.cpp's
converter writes them (conversion/olmo.py Olmo2Model for both OLMos, conversion/llama.py SmolLM3Model,
conversion/exaone.py Exaone4Model), written here with the gguf package so the metadata reading and its errors are
tested without llama.cpp's sources (its own converter's files: tests/test_converted_gguf.py), llama-bench's names
for them, what the cost model makes of the built-ins, and the HF folders transformers saves. The forward pass
against HF's tiny models: tests/test_model_hf.py."""
import dataclasses

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

import glmbench  # noqa: E402
from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

_BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096)
_SYNTH = {
    "olmo2": dict(_BASE, model_type="olmo2"),
    "olmo3": dict(_BASE, model_type="olmo3", sliding_window=8),
    "smollm3": dict(_BASE, model_type="smollm3"),
    "exaone4": dict(_BASE, model_type="exaone4", sliding_window=8, sliding_window_pattern=4),
}
_ARCH = {"olmo2": "olmo2", "olmo3": "olmo2", "smollm3": "smollm3", "exaone4": "exaone4"}


def _write(path, mt, hc, drop=(), **extra):
    """A GGUF of HF config `hc` with the keys and tensors llama.cpp's converter writes for `mt` (zeros for data, F16
    matrices, 1-D tensors F32; the window and the per-layer flags of the sliding layers where the config has a
    window, as Olmo2Model / Exaone4Model write them), less the metadata keys in `drop`, plus `extra` keys."""
    cfg = configs.from_hf(hc, "synth")
    arch = _ARCH[mt]
    meta = gguf_writer.gqa_meta(cfg)
    if cfg.sliding_window:
        meta.update({"attention.sliding_window": cfg.sliding_window,
                     "attention.sliding_window_pattern": [i in cfg.windowed_layers for i in range(cfg.n_layers)]})
    gguf_writer.write_zero_file(path, cfg, arch, meta, drop, extra)
    return cfg


@pytest.mark.parametrize("mt", list(_SYNTH))
def test_written_file_reads_as_its_config(tmp_path, mt):
    p = str(tmp_path / f"{mt}.gguf")
    want = _write(p, mt, _SYNTH[mt])
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {}
    shapes = cfg.tensor_shapes()
    if mt == "smollm3":   # Llama's pre-norm layer, the 4th without rope (llama.cpp's fixed step)
        assert not cfg.post_norms and cfg.nope_layers == (3,) and cfg.windowed_layers == ()
        assert "model.layers.0.input_layernorm.weight" in shapes
    else:   # post-norm layers: no input_layernorm, a norm after the MLP
        assert cfg.post_norms and "model.layers.0.input_layernorm.weight" not in shapes
        assert "model.layers.0.post_feedforward_layernorm.weight" in shapes
    if mt in ("olmo2", "olmo3"):   # q / k norms over all heads at once
        assert cfg.qk_norm_all_heads and shapes["model.layers.0.self_attn.k_norm.weight"] == (32,)
    if mt == "olmo3":   # three of four layers windowed, plain rope by the (one) base there, every layer rotating
        assert cfg.windowed_layers == (0, 1, 2) and cfg.nope_layers == () and cfg.rope_local_theta == cfg.rope_theta
    if mt == "exaone4":   # per-head q / k norms; the global layer applies no rope
        assert not cfg.qk_norm_all_heads and shapes["model.layers.0.self_attn.k_norm.weight"] == (16,)
        assert cfg.windowed_layers == (0, 1, 2) and cfg.nope_layers == (3,)


def test_olmo3_file_rope_bases_and_pattern_period(tmp_path):
    # a swa base of its own (rope.freq_base_swa) on the sliding layers; a period for a pattern (llama.cpp's
    # load_swa_pattern: every n-th layer global)
    p = str(tmp_path / "o3.gguf")
    _write(p, "olmo3", dict(_SYNTH["olmo3"], num_hidden_layers=6), **{"rope.freq_base_swa": 1000.0, "attention.sliding_window_pattern": 3})
    cfg = gguf_writer.load_stated(p)
    assert (cfg.model_type, cfg.windowed_layers, cfg.rope_local_theta, cfg.rope_theta) == \
        ("olmo3", (0, 1, 3, 4), 1000.0, 5e5)
    assert cfg.layer_rope(0)["theta"] == 1000.0 and cfg.layer_rope(2)["theta"] == 5e5


def test_exaone4_file_without_window_keys_takes_llama_cpps_rules(tmp_path):
    # llama.cpp's exaone4 loader: a 64-layer file (EXAONE 4.0 32B) windows 4096 tokens, every 4th layer global
    # and without rope; another depth without the keys attends in full and rotates every layer
    p = str(tmp_path / "e64.gguf")
    _write(p, "exaone4", dict(_SYNTH["exaone4"], num_hidden_layers=64), drop=("attention.sliding_window",
                                                                              "attention.sliding_window_pattern"))
    cfg = gguf_writer.load_stated(p)
    assert cfg.sliding_window == 4096 and cfg.nope_layers == tuple(range(3, 64, 4))
    assert cfg.windowed_layers == tuple(i for i in range(64) if i % 4 != 3)
    p = str(tmp_path / "e4.gguf")
    _write(p, "exaone4", _SYNTH["exaone4"], drop=("attention.sliding_window", "attention.sliding_window_pattern"))
    cfg = gguf_writer.load_stated(p)
    assert (cfg.sliding_window, cfg.windowed_layers, cfg.nope_layers) == (None, (), ())


@pytest.mark.parametrize("mt,extra,match", [
    ("olmo3", {"attention.sliding_window_pattern": [True, False]}, "has 2 flags"),
    ("exaone4", {"attention.sliding_window_pattern": [True] * 5}, "has 5 flags"),
])
def test_written_file_errors_name_the_key(tmp_path, mt, extra, match):
    p = str(tmp_path / "bad.gguf")
    _write(p, mt, _SYNTH[mt], **extra)
    with pytest.raises(gguf_file.GGUFError, match=match) as e:
        configs.load(p)
    assert p in str(e.value) and "sliding_window_pattern" in str(e.value)


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match=r"`no_rope_layers` must list 0/1 for each of 4 layers"):
        configs.from_hf({**_SYNTH["smollm3"], "no_rope_layers": [1, 1, 0]})
    with pytest.raises(ValueError, match=r"`mlp_bias`"):
        configs.from_hf({**_SYNTH["smollm3"], "mlp_bias": True})
    with pytest.raises(ValueError, match=r"`sliding_window_pattern`"):
        configs.from_hf({**_SYNTH["exaone4"], "sliding_window_pattern": "LXG"})
    with pytest.raises(ValueError, match=r"`layer_types`"):
        configs.from_hf({**_SYNTH["exaone4"], "layer_types": ["sliding_attention"]})
    with pytest.raises(ValueError, match=r"sliding_attention.rope_type"):
        configs.from_hf({**_SYNTH["olmo3"], "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 1e4},
            "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}})


def test_config_variants():
    # SmolLM3: the released no_rope_layers list, a window only with use_sliding_window (on the NoPE layers by
    # default, as SmolLM3Config writes layer_types); EXAONE 4: the released "LLLG" string, no window -> all rotate
    s = configs.from_hf({**_SYNTH["smollm3"], "num_hidden_layers": 8, "no_rope_layers": [1, 0, 1, 1, 1, 0, 1, 1]})
    assert s.nope_layers == (1, 5) and s.windowed_layers == ()
    s = configs.from_hf({**_SYNTH["smollm3"], "use_sliding_window": True, "sliding_window": 8})
    assert s.windowed_layers == (3,)
    assert configs.from_hf({**_SYNTH["smollm3"], "sliding_window": 8}).windowed_layers == ()
    e = configs.from_hf({**_SYNTH["exaone4"], "num_hidden_layers": 8, "sliding_window_pattern": "LLLG"})
    assert e.windowed_layers == (0, 1, 2, 4, 5, 6) and e.nope_layers == (3, 7)
    e = configs.from_hf({**_SYNTH["exaone4"], "sliding_window": None, "layer_types": ["full_attention"] * 4})
    assert e.windowed_layers == () and e.nope_layers == ()
    # the config classes' rope bases where none is stated
    assert configs.from_hf(_SYNTH["smollm3"]).rope_theta == 2e6 and configs.from_hf(_SYNTH["olmo3"]).rope_theta == 5e5
    assert configs.from_hf(_SYNTH["olmo2"]).rope_theta == 1e4


def test_smollm3_nope_layers_run_in_python_the_others_in_c():
    m = glmbench.Model(configs.from_hf(dict(_SYNTH["smollm3"], vocab_size=64)), weights="f32", max_context=16)
    assert [layer.runs_in_c(1) for layer in m.layers] == [True, True, True, False]
    assert np.all(np.isfinite(m.prefill(np.arange(6))))


# ---- llama-bench's names (llama.cpp's labels: src/models/olmo2.cpp 32 layers -> "7B" (OLMo 2 and OLMo 3 alike);
# smollm3.cpp 36 -> "3B"; exaone4.cpp 64 -> "32B") -------------------------------------------------------------------
_ROWS = {"smollm3 3B Q4_K - Medium       |   1.78 GiB |     3.08 B": ("smollm3-3b", "Q4_K_M"),
         "smollm3 3B Q8_0                |   3.05 GiB |     3.08 B": ("smollm3-3b", "q8_0"),
         "exaone4 32B Q4_K - Medium      |  18.01 GiB |    32.00 B": ("exaone-4.0-32b", "Q4_K_M")}


def test_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       80.10 ± 0.50")
    assert [im._arch_of(t) for t in ("olmo2", "olmo3", "smollm3", "exaone4")] == ["olmo2", "olmo2", "smollm3",
                                                                                  "exaone4"]
    for label, model in (("smollm3 3B", "smollm3-3b"), ("exaone4 32B", "exaone-4.0-32b")):
        assert im.identify_model("/m/model.gguf", f"{label} Q4_K - Medium")[0] == model, label
    # OLMo 2 7B and OLMo 3 7B are one architecture of one size to llama.cpp ("olmo2 7B", 7.30 B both): the file
    # name tells them apart, nothing else does
    assert im.model_candidates("olmo2 7B Q4_K - Medium", 7.30e9)[0] == ["olmo-2-1124-7b", "olmo-3-7b"]
    assert im.identify_model("/m/OLMo-2-1124-7B-Instruct-Q4_K_M.gguf", "olmo2 7B Q4_K - Medium", 7.30e9)[0] == \
        "olmo-2-1124-7b"
    assert im.identify_model("/m/Olmo-3-7B-Instruct-Q4_K_M.gguf", "olmo2 7B Q4_K - Medium", 7.30e9)[0] == "olmo-3-7b"
    with pytest.raises(im.AmbiguousModel, match=r"olmo-2-1124-7b, olmo-3-7b"):
        im.identify_model("/m/model.gguf", "olmo2 7B Q4_K - Medium", 7.30e9)
    assert im.model_candidates("exaone4 1.2B Q4_K - Medium", 1.28e9)[0] == []


# ---- the built-ins priced ------------------------------------------------------------------------------------------
def test_builtins_priced():
    o2, o3, s, e = (configs.load(n) for n in ("olmo-2-1124-7b", "olmo-3-7b", "smollm3-3b", "exaone-4.0-32b"))
    assert o2.post_norms and o2.qk_norm_all_heads and o2.windowed_layers == () and o2.nope_layers == ()
    assert o3.post_norms and o3.windowed_layers == tuple(i for i in range(32) if i % 4 != 3) and o3.rope_type == "yarn"
    assert o3.rope_local_theta == o3.rope_theta == 5e5 and o3.layer_rope(0)["inv_freq"] is None
    assert not s.post_norms and s.nope_layers == tuple(range(3, 36, 4)) and s.tie_word_embeddings
    assert e.post_norms and not e.qk_norm_all_heads and e.nope_layers == tuple(range(3, 64, 4))
    assert e.windowed_layers == tuple(i for i in range(64) if i % 4 != 3) and e.rope_type == "llama3"
    for c, total, kv in ((o2, 7_298_617_344, 32 * 32 * 256 * 2), (o3, 7_298_011_136, 32 * 32 * 256 * 2),
                         (s, 3_075_098_624, 36 * 4 * 256 * 2), (e, 32_003_216_384, 64 * 8 * 256 * 2)):
        assert (c.total_params(), c.kv_bytes_per_token("f16")) == (total, kv)
        assert c.forward_unsupported() == []
        st = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
        d = cm.decode(st, 100)
        assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0
        assert sum(op.bytes for op in d.ops) > 0.95 * c.weight_bytes("Q4_K_M")
    # EXAONE 4.0 32B at 32K tokens: the windowed layers keep 4096 + a ubatch, so it fits a 48 GB card where the
    # same layers all attending in full would need 8 GiB of cache on top of the weights
    st = cm.Setup(e, "rtx-a6000", weights="Q4_K_M")
    full = cm.Setup(dataclasses.replace(e, window_layers=()), "rtx-a6000", weights="Q4_K_M")
    assert cm.memory(st, 32768).kv < 0.4 * cm.memory(full, 32768).kv and cm.memory(st, 32768).fits


@pytest.mark.slow
@pytest.mark.parametrize("family", ["olmo2", "olmo3", "smollm3", "exaone4"])
def test_hf_folder_as_saved_runs_and_is_counted(tmp_path, family):
    """A folder transformers 5 saves read by checkpoint.load_model: every stored byte on a tensor of the config,
    logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model(family)
    _, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    errs = hf_oracle.logit_errors(hf, m, [3, 17, 42, 5, 9, 1], [7, 11])
    assert max(errs) < 1e-4, errs


def test_cuda_model_refuses_the_layers_it_lacks():
    """glmbench.cuda.CudaModel runs the Llama / Qwen layer only: the post-norm layers, the NoPE layers, OLMo's q / k
    norms over all heads (and OLMoE's clip_qkv, Granite's multipliers) are refused before anything reaches a GPU,
    never run wrong."""
    from glmbench import cuda
    for hc in (_SYNTH["olmo2"], _SYNTH["smollm3"], dict(_SYNTH["olmo2"], model_type="olmoe", num_experts=4,
                                                        num_experts_per_tok=2, intermediate_size=32),
               dict(_SYNTH["smollm3"], model_type="granite", residual_multiplier=0.5, no_rope_layer_interval=None)):
        with pytest.raises(ValueError, match=r"post-norms, NoPE layers, q / k norms over all heads, multipliers"):
            cuda.CudaModel(configs.from_hf(hc))
