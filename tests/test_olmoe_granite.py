"""OLMoE (olmoe) and Granite 3.x (granite, granitemoe): GGUF files laid out as llama.cpp's converter writes
them (conversion/olmo.py OlmoeModel, conversion/granite.py GraniteModel / GraniteMoeModel), written here with
the gguf package so the metadata reading and its errors are tested without llama.cpp's sources (its own
converter's files: tests/test_converted_gguf.py), llama-bench's names for them, and what the cost model makes
of the built-ins. The forward pass against HF's tiny models: tests/test_model_hf.py."""
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

_BASE = dict(vocab_size=128, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
             rms_norm_eps=1e-5, max_position_embeddings=4096)
_GRANITE = dict(embedding_multiplier=12.0, residual_multiplier=0.25, attention_multiplier=0.0078125, logits_scaling=8.0,
                tie_word_embeddings=True)
_SYNTH = {
    "olmoe": dict(_BASE, model_type="olmoe", intermediate_size=32, num_experts=8, num_experts_per_tok=2),
    "granite": dict(_BASE, **_GRANITE, model_type="granite", intermediate_size=96),
    "granitemoe": dict(_BASE, **_GRANITE, model_type="granitemoe", intermediate_size=32, num_local_experts=8,
                       num_experts_per_tok=2),
}


def _write(path, arch, hc, drop=(), **extra):
    """A GGUF of HF config `hc` with the keys and tensors llama.cpp's converter writes for `arch` (zeros for data,
    F16 matrices, the router and 1-D tensors F32), less the metadata keys in `drop`, plus `extra` keys."""
    cfg = configs.from_hf(hc, "synth")
    meta = gguf_writer.gqa_meta(cfg)
    if cfg.n_routed_experts:
        meta.update({"expert_count": cfg.n_routed_experts, "expert_used_count": cfg.n_experts_per_tok})
    if arch != "olmoe":
        meta.update({"attention.scale": cfg.attention_scale, "embedding_scale": cfg.embedding_multiplier,
                     "residual_scale": cfg.residual_multiplier, "logit_scale": 1 / cfg.logit_scale})
    gguf_writer.write_zero_file(path, cfg, arch, meta, drop, extra)
    return cfg


@pytest.mark.parametrize("arch", list(_SYNTH))
def test_written_file_reads_as_its_config(tmp_path, arch):
    p = str(tmp_path / f"{arch}.gguf")
    want = _write(p, arch, _SYNTH[arch])
    cfg = gguf_writer.check_reads_as(p, want)
    if arch == "olmoe":   # q / k norms over the whole projection, all heads at once
        assert cfg.qk_norm and cfg.qk_norm_all_heads and not cfg.norm_topk_prob
        assert cfg.tensor_shapes()["model.layers.0.self_attn.k_norm.weight"] == (32,)
    else:   # the multipliers as llama.cpp's *_scale keys (logit_scale the logits' divisor)
        assert (cfg.embedding_multiplier, cfg.residual_multiplier, cfg.attention_scale, cfg.logit_scale) == \
            (12.0, 0.25, 0.0078125, 0.125)


def test_granite_file_without_the_scale_keys_takes_llama_cpps_defaults(tmp_path):
    p = str(tmp_path / "g.gguf")
    _write(p, "granite", _SYNTH["granite"], drop=("attention.scale", "embedding_scale", "residual_scale"))
    cfg = configs.load(p)
    # (src/models/granite.cpp: kq_scale 1 / sqrt(head dim) where attention.scale is 0; the others off; logit_scale
    # required: get_key without a default)
    assert (cfg.embedding_multiplier, cfg.residual_multiplier, cfg.attention_scale, cfg.logit_scale) == \
        (1.0, 1.0, 0.25, 0.125)
    # granite-moe.cpp never reads rope.scaling.finetuned (its layers always rotate): false is read, not refused
    q = str(tmp_path / "gm.gguf")
    _write(q, "granitemoe", _SYNTH["granitemoe"], **{"rope.scaling.finetuned": False})
    assert configs.load(q).rope_dim == configs.load(q).head_dim


@pytest.mark.parametrize("arch,key,extra,match", [
    ("olmoe", "expert_count", {}, "'olmoe.expert_count' is missing"),
    ("olmoe", "expert_used_count", {}, "'olmoe.expert_used_count' is missing"),
    ("granitemoe", "expert_used_count", {}, "'granitemoe.expert_used_count' is missing"),
    ("granitemoe", None, {"expert_shared_feed_forward_length": 48}, "granitemoeshared"),
    ("granite", None, {"rope.scaling.finetuned": False}, "rope.scaling.finetuned"),
    # (granite.cpp / granite-moe.cpp read logit_scale required and divide the logits by it)
    ("granite", "logit_scale", {}, "'granite.logit_scale' is missing"),
    ("granitemoe", "logit_scale", {}, "'granitemoe.logit_scale' is missing"),
    ("granite", None, {"logit_scale": 0.0}, r"'granite\.logit_scale' = 0: llama\.cpp's granite divides the logits"),
])
def test_written_file_errors_name_the_key(tmp_path, arch, key, extra, match):
    p = str(tmp_path / "bad.gguf")
    _write(p, arch, _SYNTH[arch], drop=(key,) if key else (), **extra)
    with pytest.raises(gguf_file.GGUFError, match=match) as e:
        configs.load(p)
    assert p in str(e.value)


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match=r"`head_dim`=32 x `num_attention_heads`=4 must equal `hidden_size`=64"):
        configs.from_hf({**_SYNTH["olmoe"], "head_dim": 32})
    with pytest.raises(ValueError, match=r"`clip_qkv`"):
        configs.from_hf({**_SYNTH["olmoe"], "clip_qkv": -1})
    assert configs.from_hf({**_SYNTH["granite"], "mlp_bias": True}).mlp_bias    # priced (tests/test_configs.py)
    with pytest.raises(ValueError, match=r"granitemoeshared"):
        configs.from_hf({**_SYNTH["granitemoe"], "shared_intermediate_size": 48})
    with pytest.raises(ValueError, match=r"`logits_scaling`"):
        configs.from_hf({**_SYNTH["granite"], "logits_scaling": 0})


# ---- llama-bench's names (llama.cpp's labels: src/models/olmoe.cpp 16 layers -> "A1.7B"; granite.cpp 40 layers of
# 4096 -> "8B"; granite-moe.cpp 32 layers -> "3B.A800M") --------------------------------------------------------------
_ROWS = {"olmoe A1.7B Q4_K - Medium      |   3.92 GiB |     6.92 B": ("olmoe-1b-7b-0924", "Q4_K_M"),
         "olmoe 7B Q8_0                  |   6.85 GiB |     6.92 B": ("olmoe-1b-7b-0924", "q8_0"),
         "granite 8B Q4_K - Medium       |   4.60 GiB |     8.17 B": ("granite-3.3-8b-instruct", "Q4_K_M"),
         "granitemoe 3B.A800M Q4_K - Medium |   1.92 GiB |     3.30 B": ("granite-3.1-3b-a800m-instruct", "Q4_K_M"),
         "granitemoe 3B Q8_0             |   3.27 GiB |     3.30 B": ("granite-3.1-3b-a800m-instruct", "q8_0")}


def test_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       80.10 ± 0.50")
    assert [im._arch_of(t) for t in ("olmoe", "granite", "granitemoe")] == ["olmoe", "granite", "granitemoe"]
    # the size label alone (no params column): OLMoE's "A1.7B" by its 16 layers, the others by their sizes
    for label, model in (("olmoe A1.7B", "olmoe-1b-7b-0924"), ("olmoe 7B", "olmoe-1b-7b-0924"),
                         ("granite 8B", "granite-3.3-8b-instruct"), ("granitemoe 3B.A800M", "granite-3.1-3b-a800m-instruct"),
                         ("granitemoe 3B", "granite-3.1-3b-a800m-instruct")):
        assert im.identify_model("/m/model.gguf", f"{label} Q4_K - Medium")[0] == model, label
    # the dense architecture is not the MoE one's: Granite MoE's count under granite matches nothing
    assert im.model_candidates("granite 3B Q4_K - Medium", 3.30e9)[0] == []
    assert im.model_candidates("granitemoe 1B.A400M Q4_K - Medium")[0] == []


# ---- the built-ins priced ------------------------------------------------------------------------------------------
def test_builtins_priced():
    o, g, gm = (configs.load(n) for n in ("olmoe-1b-7b-0924", "granite-3.3-8b-instruct",
                                          "granite-3.1-3b-a800m-instruct"))
    assert (o.n_routed_experts, o.n_experts_per_tok, o.n_moe_layers, o.norm_topk_prob, o.qk_norm_all_heads) == \
        (64, 8, 16, False, True)
    assert (gm.n_routed_experts, gm.n_experts_per_tok, gm.n_moe_layers, gm.norm_topk_prob) == (40, 8, 32, True)
    assert g.n_routed_experts == 0 and g.tie_word_embeddings and g.logit_scale == 1 / 16
    for c, total, active, kv in ((o, 6_919_161_856, 1_282_017_280, 16 * 16 * 256 * 2),
                                 (g, 8_170_864_640, 8_170_864_640, 40 * 8 * 256 * 2),
                                 (gm, 3_298_793_472, 882_874_368, 32 * 8 * 128 * 2)):
        assert (c.total_params(), c.active_params(), c.kv_bytes_per_token("f16")) == (total, active, kv)
        assert c.forward_unsupported() == []
        s = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
        d = cm.decode(s, 100)
        assert d.tok_s > 0 and cm.prefill(s, 512).tok_s > 0 and cm.memory(s, 4096).fits
        # a decode step reads the experts it routes to, not all of them
        read = sum(op.bytes for op in d.ops)
        assert read < 0.3 * c.weight_bytes("Q4_K_M") if c.n_routed_experts else read > 0.95 * c.weight_bytes("Q4_K_M")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["olmoe", "granitemoe"])
def test_hf_folder_as_saved_runs_and_is_counted(tmp_path, family):
    """A folder transformers 5 saves (the released layouts: OLMoE's one tensor per expert, Granite MoE's
    block_sparse_moe.input_linear / output_linear / router.layer) read by checkpoint.load_model: every stored byte
    on a tensor of the config, logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model(family)
    _, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    errs = hf_oracle.logit_errors(hf, m, [3, 17, 42, 5], [7, 11])
    assert max(errs) < 1e-4, errs
