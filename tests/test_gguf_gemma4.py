"""Gemma 4's GGUF files (llama.cpp's `gemma4` architecture) read for pricing, and llama-bench's names for them.

Converter-free: GGUFs written here with the gguf package (_write) as llama.cpp's converter lays Gemma 4 out
(conversion/gemma.py Gemma4Model; src/models/gemma4.cpp's keys and tensor names): an E2B-like file (per-layer
embeddings, kv-shared layers holding unused k / v as the released checkpoints' files do, the double-wide MLP on
them), a 26B-A4B-like one (MoE beside the dense MLP, the experts' gate and up fused, k = v global layers with
their own KV heads), a 31B-like dense k = v one and one whose global layers have their own KV heads without
k = v. configs.load of each equals configs.from_hf of the HF config it was written from, every stored byte is on
the HF name configs.tensor_shapes() gives it or counted extra (rope_freqs, the kv-shared layers' k / v), and a
metadata key missing or inconsistent is one GGUFError naming it.

Converted (slow; skipped with the reason where llama.cpp's sources are not found, tests/llama_cpp_convert.py):
llama.cpp's own convert_hf_to_gguf.py on tiny HF Gemma4ForCausalLM models saved with save_pretrained, read back
into the HF folder's config, its bytes on the HF names, priced (`glmbench sweep --model FILE`, `glmbench models
FILE`). glmbench.Model does not run Gemma 4 yet (configs.PRICED_ONLY): no logits are compared.
"""
import dataclasses
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import llama_bench_rows as lb  # noqa: E402
import llama_cpp_convert as lc  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = gguf.GGMLQuantizationType
needs_converter = pytest.mark.skipif(lc.source() is None, reason=lc.skip_reason())
A = "gemma4"

_ROPE = {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
_5TO1 = ["sliding_attention"] * 5 + ["full_attention"]
_BASE = dict(model_type="gemma4_text", vocab_size=128, hidden_size=64, num_attention_heads=4, head_dim=32,
             global_head_dim=64, sliding_window=16, rms_norm_eps=1e-6, final_logit_softcapping=30.0,
             rope_parameters=_ROPE, max_position_embeddings=8192, tie_word_embeddings=True)
_SYNTH = {
    # E2B-like: one KV head, per-layer embeddings (a table of its own vocabulary), 4 kv-shared layers twice as wide
    "e2b": dict(_BASE, intermediate_size=96, num_hidden_layers=10, num_key_value_heads=1,
                hidden_size_per_layer_input=8, vocab_size_per_layer_input=112, num_kv_shared_layers=4,
                use_double_wide_mlp=True, attention_k_eq_v=False, enable_moe_block=False,
                layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 2),
    # 26B-A4B-like: k = v global layers with one KV head (the sliding ones two), MoE beside the dense MLP
    "26b": dict(_BASE, intermediate_size=48, num_hidden_layers=6, num_key_value_heads=2, num_global_key_value_heads=1,
                attention_k_eq_v=True, hidden_size_per_layer_input=0, num_kv_shared_layers=0, enable_moe_block=True,
                num_experts=8, top_k_experts=2, moe_intermediate_size=32, layer_types=_5TO1),
    # 31B-like: dense, k = v global layers
    "31b": dict(_BASE, intermediate_size=96, num_hidden_layers=6, num_key_value_heads=2, num_global_key_value_heads=1,
                attention_k_eq_v=True, hidden_size_per_layer_input=0, num_kv_shared_layers=0, layer_types=_5TO1,
                tie_word_embeddings=False),
    # global layers with their own KV heads but their own values too (HF states it per layer: per_layer_config)
    "global-kv": dict(_BASE, intermediate_size=96, num_hidden_layers=6, num_key_value_heads=1,
                      attention_k_eq_v=False, hidden_size_per_layer_input=0, num_kv_shared_layers=0,
                      layer_types=_5TO1, per_layer_config={"5": {"head_dim": 64, "num_key_value_heads": 2}}),
}

# glmbench's tensor names (configs.tensor_shapes) -> llama.cpp's (src/llama-arch.cpp, LLM_ARCH_GEMMA4), as the
# converter writes them
_MODEL_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                "lm_head.weight": "output.weight", "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
                "model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
                "model.per_layer_projection_norm.weight": "per_layer_proj_norm.weight"}
_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight", "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
    "pre_feedforward_layernorm_2.weight": "pre_ffw_norm_2.weight",
    "post_feedforward_layernorm_1.weight": "post_ffw_norm_1.weight",
    "post_feedforward_layernorm_2.weight": "post_ffw_norm_2.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "layer_scalar": "layer_output_scale.weight", "per_layer_input_gate.weight": "inp_gate.weight",
    "per_layer_projection.weight": "proj.weight", "post_per_layer_input_norm.weight": "post_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight", "mlp.shared_experts.gate_proj.weight": "ffn_gate.weight",
    "mlp.shared_experts.up_proj.weight": "ffn_up.weight", "mlp.shared_experts.down_proj.weight": "ffn_down.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight", "mlp.gate.scale": "ffn_gate_inp.scale",
    "mlp.gate.per_expert_scale": "ffn_down_exps.scale", "mlp.experts.gate_proj": "ffn_gate_exps.weight",
    "mlp.experts.up_proj": "ffn_up_exps.weight", "mlp.experts.down_proj": "ffn_down_exps.weight"}


def _gguf_of(hf, fused=True):
    """(GGUF name, share of its rows): the converter's name of glmbench tensor `hf`; the experts' gate and up
    each half of the fused ffn_gate_up_exps."""
    if hf in _MODEL_NAMES:
        return _MODEL_NAMES[hf], 1.0
    _, _, i, rest = hf.split(".", 3)
    if fused and rest in ("mlp.experts.gate_proj", "mlp.experts.up_proj"):
        return f"blk.{i}.ffn_gate_up_exps.weight", 0.5
    return f"blk.{i}.{_LAYER_NAMES[rest]}", 1.0


def _type(name, shape):
    """The stored type: Q8_0 matrices (rows of whole blocks), the router and 1-D tensors F32, the rest F16."""
    if len(shape) < 2 or "ffn_gate_inp" in name or name == "rope_freqs.weight":
        return T.F32
    return T.Q8_0 if shape[-1] % 32 == 0 and name != "per_layer_token_embd.weight" else T.F16


def _add(w, name, a):
    t = _type(name, a.shape)
    if t == T.Q8_0:
        q = gguf.quants.quantize(np.ascontiguousarray(a, np.float32), t)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=t)
    else:
        w.add_tensor(name, np.ascontiguousarray(a, np.float16 if t == T.F16 else np.float32))


def _write(path, hc, *, drop=(), meta=None, fused=True, shared_kv=True):
    """A GGUF of HF config `hc` laid out as the converter writes `gemma4` (keys, per-layer arrays, tensor names and
    shapes, rope_freqs; zeros for the weights), less the metadata keys in `drop`, with `meta` ({key: value})
    replacing keys. `fused`: the experts' gate and up in one ffn_gate_up_exps (else ffn_gate_exps / ffn_up_exps,
    as llama.cpp also loads); `shared_kv`: k / v / k_norm for the kv-shared layers too, as a released checkpoint
    holds them. Returns configs.from_hf(hc)."""
    cfg = configs.from_hf(hc, "synth")
    L, D, H = cfg.n_layers, cfg.hidden_size, cfg.n_heads
    hd, hd_g = cfg.head_dim, cfg.global_head_dim
    w = gguf.GGUFWriter(path, A)
    swa = [i in cfg.windowed_layers for i in range(L)]
    kv = [cfg.layer_kv_heads(i) for i in range(L)]
    m = {"block_count": L, "context_length": cfg.max_position_embeddings, "embedding_length": D,
         "feed_forward_length": [cfg.layer_intermediate(i) for i in range(L)] if cfg.double_wide_mlp
         else cfg.intermediate_size, "attention.head_count": H,
         "attention.head_count_kv": kv if len(set(kv)) > 1 else kv[0], "rope.freq_base": 1e6,
         "rope.freq_base_swa": 1e4, "attention.layer_norm_rms_epsilon": 1e-6, "attention.key_length": hd_g,
         "attention.value_length": hd_g, "attention.sliding_window": cfg.sliding_window,
         "attention.shared_kv_layers": cfg.kv_shared_layers, "embedding_length_per_layer_input": cfg.ple_size,
         "attention.sliding_window_pattern": swa, "attention.key_length_swa": hd, "attention.value_length_swa": hd,
         "rope.dimension_count": hd_g, "rope.dimension_count_swa": hd, "final_logit_softcapping": 30.0}
    if cfg.n_routed_experts:
        m.update({"expert_count": cfg.n_routed_experts, "expert_used_count": cfg.n_experts_per_tok,
                  "expert_feed_forward_length": cfg.moe_intermediate_size})
    m.update(meta or {})
    gguf_writer.add_metadata(w, A, m, drop)
    n_rot = int(hd_g * 0.25 / 2)   # the converter's proportional rope: 1 per rotated pair, then 1e30
    _add(w, "rope_freqs.weight", np.array([1.0] * n_rot + [1e30] * (hd_g // 2 - n_rot), np.float32))
    shapes = cfg.tensor_shapes()
    for hf, shape in shapes.items():
        name, share = _gguf_of(hf, fused)
        if share != 1.0:
            if hf.endswith("up_proj"):
                continue   # (written with the gate)
            shape = (shape[0], 2 * shape[1], shape[2])
        _add(w, name, np.zeros(shape, np.float32))
    if shared_kv:   # the kv-shared layers' k / v, as the released checkpoints (and so their GGUFs) hold them
        for i in range(L - cfg.kv_shared_layers, L):
            d, n = cfg.layer_head_dim(i), cfg.layer_kv_heads(i)
            for part in ("attn_k", "attn_v"):
                _add(w, f"blk.{i}.{part}.weight", np.zeros((n * d, D), np.float32))
            _add(w, f"blk.{i}.attn_k_norm.weight", np.zeros(d, np.float32))
    gguf_writer.finish(w)
    return cfg


_load, _diff = gguf_writer.load_stated, gguf_writer.config_diff


def _check_bytes(path, cfg, fused=True):
    """Every stored byte once: on the HF name the config gives it (the experts' gate / up each half of the fused
    tensor), else extra (rope_freqs; the kv-shared layers' k / v / k_norm, which llama.cpp loads and never uses)."""
    g = gguf_file.read(path)
    fw, shapes, ts = cfg.file_weights, cfg.tensor_shapes(), g.tensors
    assert [n for n, _, _ in fw.tensors] == list(shapes)
    by, types = fw.bytes_of(), fw.types()
    for hf in shapes:
        n, share = _gguf_of(hf, fused)
        assert by[hf] == ts[n].n_bytes * share and types[hf] == ts[n].type_name, (hf, n)
    first = cfg.n_layers - cfg.kv_shared_layers
    unused = [n for n in ts if n.startswith("blk.") and int(n.split(".")[1]) >= first
              and n.split(".")[2] in ("attn_k", "attn_v", "attn_k_norm")]
    assert fw.extra_bytes == ts["rope_freqs.weight"].n_bytes + sum(ts[n].n_bytes for n in unused)
    assert sum(by.values()) + fw.extra_bytes == fw.total_bytes == g.tensor_bytes and fw.skipped_bytes == 0
    return fw, unused


def _on_card(path, cfg):
    """The file's bytes a card holds under llama.cpp: all but (embeddings in host memory) the per-layer embedding
    table and, with an untied head, the input embedding."""
    ts = gguf_file.read(path).tensors
    host = ts["token_embd.weight"].n_bytes if "output.weight" in ts else 0
    host += ts["per_layer_token_embd.weight"].n_bytes if "per_layer_token_embd.weight" in ts else 0
    return cfg.file_weights.model_bytes - host


# ---- converter-free: files written here ----------------------------------------------------------------
@pytest.mark.parametrize("case", list(_SYNTH))
def test_written_file_reads_as_its_config(tmp_path, case):
    p = str(tmp_path / f"{case}.gguf")
    want = _write(p, _SYNTH[case])
    cfg = _load(p)
    assert cfg.model_type == "gemma4_text" and gguf_file.read(p).architecture == A
    assert cfg.cost_shape() == want.cost_shape() and _diff(cfg, want) == {}, _diff(cfg, want)
    assert cfg.total_params() == want.total_params() and cfg.active_params() == want.active_params()
    assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
    assert (cfg.rope_scaling, cfg.rope_theta, cfg.rope_local_theta) == \
        ({"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}, 1e6, 1e4)
    fw, unused = _check_bytes(p, cfg)
    assert fw.main_type == "Q8_0"
    assert bool(unused) == bool(want.kv_shared_layers)


def test_written_file_fields():
    """What each file states, as HF's config names it."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "e2b.gguf")
        _write(p, _SYNTH["e2b"])
        hf = gguf_file.hf_config(gguf_file.read(p))
        assert (hf["head_dim"], hf["global_head_dim"], hf["num_key_value_heads"], hf["num_kv_shared_layers"]) == \
            (32, 64, 1, 4)
        assert (hf["hidden_size_per_layer_input"], hf["vocab_size_per_layer_input"], hf["use_double_wide_mlp"]) == \
            (8, 112, True)
        assert hf["intermediate_size"] == 96 and not hf["attention_k_eq_v"] and not hf["enable_moe_block"]
        assert hf["layer_types"] == _SYNTH["e2b"]["layer_types"] and hf["final_logit_softcapping"] == 30.0
        assert hf["rope_parameters"] == _ROPE and "rope_theta" not in hf and "rope_scaling" not in hf
        cfg = configs.load(p)
        assert cfg.kv_source(9) == 4 and cfg.kv_source(8) == 5 and cfg.layer_intermediate(6) == 192
        p = os.path.join(d, "26b.gguf")
        _write(p, _SYNTH["26b"])
        hf = gguf_file.hf_config(gguf_file.read(p))
        assert hf["attention_k_eq_v"] and (hf["num_key_value_heads"], hf["num_global_key_value_heads"]) == (2, 1)
        assert (hf["num_experts"], hf["top_k_experts"], hf["moe_intermediate_size"], hf["intermediate_size"]) == \
            (8, 2, 32, 48)
        assert hf["hidden_size_per_layer_input"] == 0 and "vocab_size_per_layer_input" not in hf
        p = os.path.join(d, "global-kv.gguf")
        _write(p, _SYNTH["global-kv"])
        hf = gguf_file.hf_config(gguf_file.read(p))
        assert not hf["attention_k_eq_v"] and hf["per_layer_config"] == {"5": {"head_dim": 64, "num_key_value_heads": 2}}


def test_written_file_experts_apart(tmp_path):
    """Experts' gate and up stored apart (ffn_gate_exps / ffn_up_exps, which llama.cpp's gemma4 loads too)."""
    p = str(tmp_path / "apart.gguf")
    want = _write(p, _SYNTH["26b"], fused=False)
    cfg = _load(p)
    assert cfg.cost_shape() == want.cost_shape()
    _check_bytes(p, cfg, fused=False)
    # the weights' reader (models/checkpoint.py) gets each tensor by name; fused, it is refused by name until it
    # takes each expert's rows (expert_rows=True, as file_weights does)
    where = gguf_file.expected_gguf_tensors(gguf_file.read(p), cfg.tensor_shapes(), cfg.n_layers)
    assert where["model.layers.2.mlp.experts.up_proj"] == ("blk.2.ffn_up_exps.weight",)
    assert where["model.layers.2.mlp.gate.per_expert_scale"] == ("blk.2.ffn_down_exps.scale",)
    p = str(tmp_path / "fused.gguf")
    _write(p, _SYNTH["26b"])
    g = gguf_file.read(p)
    with pytest.raises(gguf_file.GGUFError, match=r"'blk.0.ffn_gate_up_exps.weight' holds the experts' gate and up "
                                                   r"rows fused"):
        gguf_file.expected_gguf_tensors(g, cfg.tensor_shapes(), cfg.n_layers)
    where = gguf_file.expected_gguf_tensors(g, cfg.tensor_shapes(), cfg.n_layers, expert_rows=True)
    (up,) = where["model.layers.2.mlp.experts.up_proj"]
    assert isinstance(up, gguf_file.ExpertRows) and (str(up), up.start, up.stop) == ("blk.2.ffn_gate_up_exps.weight", 32, 64)


def test_written_file_without_the_shared_layers_kv(tmp_path):
    """A file of a checkpoint saved by transformers (no k / v on the kv-shared layers): nothing extra but rope_freqs."""
    p = str(tmp_path / "bare.gguf")
    want = _write(p, _SYNTH["e2b"], shared_kv=False)
    cfg = _load(p)
    assert cfg.cost_shape() == want.cost_shape()
    fw, unused = _check_bytes(p, cfg)
    assert not unused and fw.extra_bytes == 4 * 32


def test_gemma4_tensor_names_are_llama_cpps():
    """gguf_file's names for every Gemma 4 tensor are this test's table (llama.cpp's), each a name gguf knows."""
    known = {v.split("{bid}.")[-1] for v in gguf.TENSOR_NAMES.values()}
    for case in _SYNTH:
        cfg = configs.from_hf(_SYNTH[case])
        for hf in cfg.tensor_shapes():
            n = gguf_file.gguf_name(hf, A, cfg.n_layers)
            assert n == _gguf_of(hf, fused=False)[0], hf
            assert n.split(".")[-2] in known, n
    assert gguf_file.gguf_name("model.layers.3.mlp.bogus.weight", A, 6) is None


# each key the reading needs, removed: a GGUFError naming it (the keys llama.cpp defaults: defaulted as it does)
@pytest.mark.parametrize("case,key", [
    ("e2b", "attention.sliding_window_pattern"), ("e2b", "attention.sliding_window"),
    ("e2b", "attention.key_length_swa"), ("e2b", "feed_forward_length"), ("e2b", "embedding_length_per_layer_input"),
    ("26b", "expert_used_count"), ("26b", "expert_feed_forward_length"), ("26b", "expert_count")])
def test_written_file_missing_key_is_named(tmp_path, case, key):
    p = str(tmp_path / "bad.gguf")
    _write(p, _SYNTH[case], drop=(key,))
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    msg = str(e.value)
    assert p in msg and f"'{A}.{key}'" in msg, msg
    assert "is missing" in msg


def test_written_file_defaults_as_llama_cpp(tmp_path):
    """Keys llama.cpp defaults: freq_base_swa (to freq_base), head_count_kv (to head_count), shared_kv_layers (0),
    the global layers' value length (the key length), the soft-cap (none); value_length_swa it requires
    (gemma4.cpp: get_key)."""
    p = str(tmp_path / "e2b.gguf")
    _write(p, _SYNTH["e2b"])
    g = gguf_file.read(p)
    base = dict(g.metadata)
    hf = lc.hf_config_with(g, base, **{"rope.freq_base_swa": None, "final_logit_softcapping": None,
                                       "attention.value_length": None})
    with pytest.raises(gguf_file.GGUFError, match=r"'gemma4\.attention\.value_length_swa' is missing"):
        lc.hf_config_with(g, base, **{"attention.value_length_swa": None})
    assert hf["rope_parameters"]["sliding_attention"]["rope_theta"] == 1e6 and hf["final_logit_softcapping"] is None
    hf = lc.hf_config_with(g, base, **{"attention.head_count_kv": None})
    assert hf["num_key_value_heads"] == 4
    hf = lc.hf_config_with(g, base, **{"attention.shared_kv_layers": None,
                                       "feed_forward_length": np.array([96] * 10, np.int32)})
    assert hf["num_kv_shared_layers"] == 0 and not hf["use_double_wide_mlp"]


def test_written_file_inconsistent_metadata_is_named(tmp_path):
    """Metadata that contradicts itself or the tensors: one GGUFError naming the key (or tensor) and the file."""
    p = str(tmp_path / "e2b.gguf")
    _write(p, _SYNTH["e2b"])
    g = gguf_file.read(p)
    base = dict(g.metadata)

    def bad(match, tensors=None, **meta):
        saved = dict(g.tensors)
        if tensors:
            tensors(g.tensors)
        try:
            with pytest.raises(gguf_file.GGUFError, match=match) as e:
                lc.hf_config_with(g, base, **meta)
            assert p in str(e.value)
        finally:
            g.tensors.clear()
            g.tensors.update(saved)

    k = f"'{A}."
    bad(k + r"attention.sliding_window_pattern' has 9 flags; .* needs one per layer",
        **{"attention.sliding_window_pattern": np.array([True] * 9)})
    bad(k + r"attention.sliding_window_pattern' must be an array of bools",
        **{"attention.sliding_window_pattern": 6})
    bad(k + r"attention.head_count_kv' gives the sliding layers different KV head counts \(\[1, 2\]\)",
        **{"attention.head_count_kv": np.array([1, 2, 1, 1, 1, 1, 1, 1, 1, 1], np.int32)})
    bad(k + r"attention.head_count_kv' has 5 values", **{"attention.head_count_kv": np.array([1] * 5, np.int32)})
    bad(k + r"attention.head_count_kv' gives layer 4 no KV heads",
        **{"attention.head_count_kv": np.array([1, 1, 1, 1, 0, 1, 1, 1, 1, 1], np.int32)})
    bad(k + r"attention.head_count' = 4 is not a multiple of the global layers' 3 KV heads",
        **{"attention.head_count_kv": np.array([1, 1, 1, 1, 3, 1, 1, 1, 1, 3], np.int32)})
    bad(k + r"attention.value_length' = 32 differs from '.*attention.key_length' = 64",
        **{"attention.value_length": 32})
    bad(k + r"attention.shared_kv_layers' = 10 leaves none", **{"attention.shared_kv_layers": 10})
    bad(k + r"feed_forward_length' = \[.*\]: the 4 kv-shared layers must be 96 wide, or all 192",
        **{"feed_forward_length": np.array([96] * 6 + [192, 96, 192, 192], np.int32)})
    bad(k + r"feed_forward_length' = \[.*\] must give the layers before the kv-shared ones one",
        **{"feed_forward_length": np.array([96] * 5 + [48] + [192] * 4, np.int32)})
    bad(k + r"embedding_length_per_layer_input' = 16 x 10 layers needs rows of 160",
        **{"embedding_length_per_layer_input": 16})
    bad(r"'per_layer_token_embd.weight' \(the per-layer embeddings\) is missing",
        tensors=lambda ts: ts.pop("per_layer_token_embd.weight"))
    bad(r"tensor 'blk.4.attn_v.weight' is missing but 'blk.9.attn_v.weight' is there",
        tensors=lambda ts: ts.pop("blk.4.attn_v.weight"), **{"attention.shared_kv_layers": 0,
                                                             "feed_forward_length": 96})
    bad(r"tensor 'blk.0.ffn_gate_inp.weight' \(a router\) is there but metadata '.*expert_count' is missing",
        tensors=lambda ts: ts.update({"blk.0.ffn_gate_inp.weight": ts["blk.0.ffn_up.weight"]}))
    bad(r"'rope_freqs.weight' holds 4 factors .* needs 32",
        tensors=lambda ts: ts.update({"rope_freqs.weight": dataclasses.replace(
            ts["rope_freqs.weight"], shape=(4,), n_bytes=16)}))
    # a config the metadata makes that HF's Gemma 4 cannot be: configs' error, named as read from the file
    g.metadata.update({f"{A}.attention.shared_kv_layers": 6,
                       f"{A}.feed_forward_length": np.array([96] * 4 + [192] * 6, np.int32)})
    with pytest.raises(ValueError, match="`num_kv_shared_layers`=6: a shared layer's kind"):
        configs.from_hf(gguf_file.hf_config(g))
    # MoE: a layer without its router
    p = str(tmp_path / "26b.gguf")
    _write(p, _SYNTH["26b"])
    g = gguf_file.read(p)
    base = dict(g.metadata)
    bad(k + r"expert_count' = 8 but tensor 'blk.3.ffn_gate_inp.weight' \(the router\) is missing",
        tensors=lambda ts: ts.pop("blk.3.ffn_gate_inp.weight"))
    # the fused experts' rows disagreeing with the widths the metadata states
    g.metadata[f"{A}.expert_feed_forward_length"] = 16
    cfg = configs.from_hf(gguf_file.hf_config(g))
    with pytest.raises(gguf_file.GGUFError, match=r"'blk.0.ffn_gate_up_exps.weight' has shape \(8, 64, 64\), the "
                                                   r"config .* expects \(8, 32, 64\)"):
        gguf_file.file_weights(g, cfg.tensor_shapes(), cfg.n_layers)


def test_written_file_priced(tmp_path):
    """`glmbench sweep --model FILE` and `glmbench models FILE`: the file's own bytes priced."""
    from glmbench.predict import costmodel as cm
    p = str(tmp_path / "gemma4-e2b-Q8_0.gguf")
    _write(p, _SYNTH["e2b"])
    cfg = _load(p)
    s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
    assert cm.memory(s, 1024).cards[0].weights == _on_card(p, cfg) > 0
    assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = str(tmp_path / "sweep.json")
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--model", p, "-q", "--cards", "1",
                        "--tests", "tg,pp,mem", "--out", out], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        recs = json.load(f)
    recs = recs if isinstance(recs, list) else recs["records"]
    assert {x["model"] for x in recs} == {"gemma4-e2b-Q8_0"} and {x["weights"] for x in recs} == {"q8_0"}
    assert {x["model_type"] for x in recs} == {"gemma4_text"} and all(x["fits"] for x in recs)
    r = subprocess.run([sys.executable, "-m", "glmbench", "models", p, "--json"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    rows = rows if isinstance(rows, list) else [rows]
    assert rows[0]["total_params"] == cfg.total_params() and not rows[0]["moe"]


# ---- converted files: llama.cpp's converter on tiny HF models ---------------------------------------------------
_TINY = {
    # E2B-like (PLE, kv-shared layers twice as wide; the folder given the shared layers' k / v as the released
    # checkpoints hold them: _with_shared_kv)
    "ple": dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=10, num_attention_heads=4,
                num_key_value_heads=1, head_dim=32, global_head_dim=64, sliding_window=6,
                hidden_size_per_layer_input=8, vocab_size_per_layer_input=96, num_kv_shared_layers=4,
                use_double_wide_mlp=True, final_logit_softcapping=30.0,
                layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 2),
    # 26B-A4B-like (k = v global layers with their own KV heads, MoE beside the dense MLP, no PLE)
    "moe": dict(vocab_size=96, hidden_size=64, intermediate_size=48, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, global_head_dim=64, num_global_key_value_heads=1,
                attention_k_eq_v=True, sliding_window=6, hidden_size_per_layer_input=0, enable_moe_block=True,
                num_experts=8, top_k_experts=2, moe_intermediate_size=32),
}


def _with_shared_kv(folder):
    """The kv-shared layers given k_proj / v_proj / k_norm (copies of their source layer's), as google's released
    checkpoints hold them (transformers' Gemma4TextAttention makes none there; the converter writes what it finds)."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(folder, "model.safetensors")
    sd = load_file(path)
    c = configs.load(folder)
    for i in range(c.n_layers - c.kv_shared_layers, c.n_layers):
        src = c.kv_source(i)
        for n in ("k_proj.weight", "v_proj.weight", "k_norm.weight"):
            sd[f"model.layers.{i}.self_attn.{n}"] = sd[f"model.layers.{src}.self_attn.{n}"].clone()
    save_file(sd, path, metadata={"format": "pt"})


def _build(case, tmp):
    torch = pytest.importorskip("torch", reason="the tiny HF models need torch")
    transformers = pytest.importorskip("transformers", reason="the tiny HF models need transformers")
    if not hasattr(transformers, "Gemma4TextConfig"):
        pytest.skip(f"transformers {transformers.__version__} has no Gemma 4")
    torch.manual_seed(0)
    cfg = transformers.Gemma4TextConfig(**_TINY[case])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(cfg).float().eval()
    folder = lc.save_hf(model, cfg, os.path.join(tmp, case))
    if cfg.num_kv_shared_layers:
        _with_shared_kv(folder)
    return folder


# (HF folder, {"f16": path, "q8_0": path}) for a tiny model: the run's cases in one converter process
_converted = lc.Conversions(_build, _TINY)

tmp = _converted.fixture("gemma4")


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_TINY))
def test_converted_file_config_is_the_hf_config(tmp, case):
    folder, files = _converted(case, tmp)
    want = configs.load(folder)
    for kind, path in files.items():
        g = gguf_file.read(path)
        assert g.architecture == A
        cfg = _load(path)
        assert cfg.cost_shape() == want.cost_shape() and _diff(cfg, want) == {}, (kind, _diff(cfg, want))
        assert cfg.total_params() == want.total_params() and cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
        # llama-bench's params column: every tensor the file holds (importers._gguf_params)
        n = sum(int(np.prod(t.shape)) for t in g.tensors.values())
        assert im._gguf_params(cfg) == n


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_TINY))
def test_converted_file_bytes_on_the_hf_names(tmp, case):
    """Every stored byte once on its HF name (the experts' gate / up halves of the fused ffn_gate_up_exps, the router's
    scales, the per-layer embeddings' tensors), else extra: rope_freqs and the kv-shared layers' unused k / v."""
    _, files = _converted(case, tmp)
    for kind, path in files.items():
        cfg = _load(path)
        fw, unused = _check_bytes(path, cfg)
        assert bool(unused) == (case == "ple")
        assert fw.main_type == kind.upper()


@needs_converter
@pytest.mark.slow
def test_converted_file_priced_end_to_end(tmp):
    from glmbench.predict import costmodel as cm
    for case in _TINY:
        _, files = _converted(case, tmp)
        p = files["q8_0"]
        cfg = _load(p)
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        assert cm.memory(s, 1024).cards[0].weights == _on_card(p, cfg) > 0
        assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    out = os.path.join(tmp, "sweep.json")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--model", files["q8_0"], "-q", "--cards", "1",
                        "--tests", "tg,pp,mem", "--out", out], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with open(out) as f:
        recs = json.load(f)
    recs = recs if isinstance(recs, list) else recs["records"]
    assert {x["model"] for x in recs} == {"moe-q8_0"} and {x["weights"] for x in recs} == {"q8_0"}
    assert {x["test"] for x in recs} == {"tg", "pp", "mem"} and all(x["fits"] for x in recs)
    r = subprocess.run([sys.executable, "-m", "glmbench", "models", files["q8_0"], "--json"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("case", list(_TINY))
def test_converted_file_runs_as_the_hf_folder(tmp, case):
    """Where glmbench.Model runs Gemma 4 (not in configs.PRICED_ONLY), the F16 file's logits equal the HF folder's run
    with its matrices in f16 (the names map the weights back; Gemma 4's norms are stored as they are; the experts'
    fused gate and up, ffn_gate_up_exps, split by rows as stored: checkpoint._expert_rows)."""
    if "gemma4_text" in configs.PRICED_ONLY:
        pytest.skip("glmbench.Model does not run Gemma 4 (configs.PRICED_ONLY): its files are priced only")
    from glmbench.models import checkpoint
    folder, files = _converted(case, tmp)
    ids = np.arange(1, 14) * 7 % 96
    got = checkpoint.load_model(files["f16"], kv="f32", max_context=64)
    ref = checkpoint.load_model(folder, weights="f16", kv="f32", max_context=64).prefill(ids)
    assert np.abs(got.prefill(ids) - ref).max() <= 1e-4 * np.abs(ref).max()


# ---- llama-bench's names -----------------------------------------------------------------------------------
_LB_HEAD = ("| model                          |       size |     params | backend    | threads | n_ubatch | fa | mmap |            test |                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | ------: | -------: | -: | ---: | --------------: | -------------------: |\n")
# llama-bench's model column, size and params (llama.cpp's architecture and its size label by the layer count,
# src/models/gemma4.cpp) -> the built-in and weights. E4B's is a real row (llama.cpp's
# docs/build-riscv64-spacemit.md); the others' params are the built-ins' as a file holds them
# (importers._gguf_params: the kv-shared layers' k / v and rope_freqs included)
_ROWS = {"gemma4 E4B Q4_K - Medium       |   4.76 GiB |     7.52 B": ("gemma-4-e4b", "Q4_K_M"),
         "gemma4 E4B Q8_0                |   7.48 GiB |     7.52 B": ("gemma-4-e4b", "q8_0"),
         "gemma4 E2B Q4_K - Medium       |   2.88 GiB |     4.65 B": ("gemma-4-e2b", "Q4_K_M"),
         "gemma4 26B.A4B Q4_K - Medium   |  15.64 GiB |    25.23 B": ("gemma-4-26b-a4b", "Q4_K_M"),
         "gemma4 31B Q4_K - Medium       |  17.46 GiB |    30.70 B": ("gemma-4-31b", "Q4_K_M")}


def test_llama_bench_markdown_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CPU        |       8 |      128 |  1 |    0 |           tg128 |          5.66 ± 0.00",
                                head=_LB_HEAD)
    assert im._arch_of("gemma4_text") == im._arch_of("gemma4") == im._arch_of("gemma4_text", True) == "gemma4"
    # the size label alone (no params column): llama.cpp's label by the layer count (an "E" size is not the file's
    # parameter count, which holds the per-layer table too)
    for label, model in (("gemma4 E2B", "gemma-4-e2b"), ("gemma4 E4B", "gemma-4-e4b"),
                         ("gemma4 26B.A4B", "gemma-4-26b-a4b"), ("gemma4 31B", "gemma-4-31b")):
        assert im.identify_model("/m/model.gguf", f"{label} Q4_K - Medium")[0] == model, label
        assert im.model_candidates(f"{label} Q8_0")[0] == [model], label
    assert im.model_candidates("gemma4 E8B Q8_0")[0] == []
    # the params beside the label decide (E4B's count is not E2B's); another architecture's count matches nothing
    assert im.model_candidates("gemma4 E2B Q8_0", 7.52e9)[0] == ["gemma-4-e4b"]
    assert im.model_candidates("gemma3 E4B Q8_0", 7.52e9)[0] == []
    # a file name alone names the built-in
    assert im.names_in("gemma-4-26B-A4B-it-UD-Q4_K_XL.gguf") == ["gemma-4-26b-a4b"]
    assert im.names_in("google_gemma-4-E4B-it-Q8_0.gguf") == ["gemma-4-e4b"]


@needs_converter
@pytest.mark.slow
def test_converted_q8_0_moe_file_runs_its_experts_as_stored(tmp):
    """The Q8_0 file's fused ffn_gate_up_exps splits into the experts' gate and up rows as q8_0 blocks (no
    dequantization): each [E, F, D] block tensor equals the fused one's rows, and the model runs."""
    from glmbench.core.quant import QTensor
    from glmbench.models import checkpoint
    _folder, files = _converted("moe", tmp)
    cfg, sd = checkpoint._gguf_state_dict(files["q8_0"])
    g = gguf_file.read(files["q8_0"])
    fused = np.asarray(g.tensor_data("blk.0.ffn_gate_up_exps.weight"))
    gate, up = sd["model.layers.0.mlp.experts.gate_proj"], sd["model.layers.0.mlp.experts.up_proj"]
    E, F, D = cfg.n_routed_experts, cfg.moe_intermediate_size, cfg.hidden_size
    for part, rows in ((gate, slice(0, F)), (up, slice(F, 2 * F))):
        assert isinstance(part, QTensor) and part.fmt == "q8_0" and part.shape == (E, F, D)
        assert np.array_equal(part.data, fused.reshape(E, 2 * F, -1)[:, rows])
    logits = checkpoint.load_model(files["q8_0"], kv="f32", max_context=64).prefill(np.arange(1, 14) * 7 % 96)
    assert np.isfinite(logits).all()
