"""The Mamba-2 hybrids' GGUF files (llama.cpp's nemotron_h, nemotron_h_moe and granitehybrid) read for
pricing, and llama-bench's names for them.

Files made by llama.cpp's own converter (convert_hf_to_gguf.py from llama-cpp-python's source package,
tests/llama_cpp_convert.py; skipped with the reason where it is not found) from tiny random HF models
(transformers' NemotronHForCausalLM, GraniteMoeHybridForCausalLM): a dense Nemotron-H (Mamba-2, MLP and
attention blocks), a Nemotron 3 Nano-like MoE (Mamba-2, MoE and attention blocks, with an MTP block), Granite
4.0-H with experts (Tiny / Small) and without (Micro). configs.load of the file must give the ModelConfig of
the HF folder (configs.load: cost_shape and total_params alike), every stored byte on the HF name
configs.tensor_shapes() gives it; `glmbench sweep --model FILE` prices the file.

The folders' config.json is written as the released checkpoints ship it (Nemotron-H's
hybrid_override_pattern, no MoE fields in a dense one; Granite's layer_types of "mamba" / "attention") and
the converter reads it as written, as it read the released files (AutoConfig kept out of its way:
transformers 5 parses these configs into layer types the converter's NemotronH / GraniteHybrid classes do
not look for, 'linear_attention' / 'full_attention' / 'mlp', and adds MoE defaults to a dense Nemotron-H;
the files it writes then contradict their own tensors: test_transformers5_conversion_is_refused_by_name).

Converter-free: a GGUF written here with the gguf package (_write) as the converter lays these families out,
so the metadata reading and its errors are tested without llama.cpp's sources too.
"""
import json
import os

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import llama_bench_rows as lb  # noqa: E402
import llama_cpp_convert as lc  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.results import importers as im  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_converter = pytest.mark.skipif(lc.source() is None, reason=lc.skip_reason())

_MAMBA = dict(vocab_size=160, hidden_size=64, num_attention_heads=4, num_key_value_heads=2)
# family -> (HF class stem, HF config kwargs, GGUF architecture)
TINY = {
    # Nemotron-H 8B / Nano-9B-v2's kinds of block: Mamba-2 (M), relu2 MLP (-), attention (*)
    "nemotron_dense": ("NemotronH", dict(_MAMBA, head_dim=16, mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=16,
                                         n_groups=2, conv_kernel=4, intermediate_size=96, layer_norm_epsilon=1e-5,
                                         layers_block_type=["linear_attention", "mlp", "full_attention",
                                                            "linear_attention", "mlp"]), "nemotron_h"),
    # Nemotron 3 Nano's: Mamba-2, MoE (E: sigmoid router with its correction bias, relu2 experts, a shared
    # expert), attention; grouped routing and a scaling factor; plus an MTP block (_with_mtp_block)
    "nemotron_moe": ("NemotronH", dict(_MAMBA, head_dim=16, mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=16,
                                       n_groups=2, conv_kernel=4, n_routed_experts=4, num_experts_per_tok=2,
                                       moe_intermediate_size=32, moe_shared_expert_intermediate_size=48,
                                       n_shared_experts=1, routed_scaling_factor=2.5, n_group=2, topk_group=1,
                                       norm_topk_prob=True, layer_norm_epsilon=1e-5,
                                       layers_block_type=["linear_attention", "moe", "full_attention",
                                                          "linear_attention", "moe"]), "nemotron_h_moe"),
    # Nemotron 3 Super's latent MoE: the experts on a 32-wide projection of the hidden state (ffn_latent_down / up)
    "nemotron_latent": ("NemotronH", dict(_MAMBA, head_dim=16, mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=16,
                                          n_groups=2, conv_kernel=4, n_routed_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=32, moe_shared_expert_intermediate_size=48,
                                          n_shared_experts=1, routed_scaling_factor=2.5, moe_latent_size=32,
                                          norm_topk_prob=True, layer_norm_epsilon=1e-5,
                                          layers_block_type=["linear_attention", "moe", "full_attention",
                                                             "linear_attention", "moe"]), "nemotron_h_moe"),
    # Granite 4.0-H Tiny / Small: every layer a mixer and MoE beside a shared SwiGLU MLP; the multipliers
    "granite_moe": ("GraniteMoeHybrid", dict(_MAMBA, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=2,
                                             intermediate_size=32, shared_intermediate_size=48, mamba_n_heads=8,
                                             mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4,
                                             mamba_expand=2, embedding_multiplier=12.0, residual_multiplier=0.22,
                                             attention_multiplier=0.0078125, logits_scaling=8.0,
                                             position_embedding_type="nope", rms_norm_eps=1e-5,
                                             layer_types=["mamba", "attention", "mamba", "mamba"]), "granitehybrid"),
    # Granite 4.0-H Micro: no experts, the shared MLP alone (the converter writes it as ffn_gate / up / down)
    "granite_dense": ("GraniteMoeHybrid", dict(_MAMBA, num_hidden_layers=4, num_local_experts=0, num_experts_per_tok=0,
                                               intermediate_size=48, shared_intermediate_size=48, mamba_n_heads=8,
                                               mamba_d_head=16, mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=4,
                                               mamba_expand=2, embedding_multiplier=12.0, residual_multiplier=0.22,
                                               attention_multiplier=0.0078125, logits_scaling=8.0,
                                               position_embedding_type="nope", rms_norm_eps=1e-5,
                                               layer_types=["mamba", "mamba", "attention", "mamba"]), "granitehybrid"),
}
PATTERN = {"nemotron_dense": "M-*M-", "nemotron_moe": "ME*ME", "nemotron_latent": "ME*ME"}
# converter run as for the released files: its AutoConfig.from_pretrained refused, so it reads config.json
_PRELUDE = r"""
import transformers
def _config_json_as_written(*a, **k):
    raise ValueError("glmbench test: config.json read as written")
transformers.AutoConfig.from_pretrained = _config_json_as_written
"""


def _convert(folder, out, outtype="f16", *, as_written=True):
    """llama.cpp's converter on `folder` (tests/llama_cpp_convert.py's runner; `as_written`: the config.json as
    it is, else parsed by transformers 5 as the converter does by default)."""
    return lc.convert(folder, out, outtype, prelude=_PRELUDE if as_written else "")


def _hf(family):
    torch = pytest.importorskip("torch", reason="the tiny HF models need torch")
    transformers = pytest.importorskip("transformers", reason="the tiny HF models need transformers")
    stem, kw, _ = TINY[family]
    torch.manual_seed(0)
    if not (hasattr(transformers, stem + "Config") and hasattr(transformers, stem + "ForCausalLM")):
        pytest.skip(f"transformers {transformers.__version__} has no {stem}")
    # (a config or model this transformers refuses to build is a failure, not a skip)
    cfg = getattr(transformers, stem + "Config")(**kw)
    model = getattr(transformers, stem + "ForCausalLM")(cfg)
    return cfg, model.float().eval()


def _as_released(folder):
    """config.json as the released checkpoints write it: Nemotron-H's layers as hybrid_override_pattern (M, *,
    -, E) with num_hidden_layers and, in a dense one, no MoE fields (the converter writes a config with
    num_experts_per_tok as nemotron_h_moe); Granite 4.0-H's layer_types as "mamba" / "attention"."""
    p = os.path.join(folder, "config.json")
    with open(p) as f:
        hc = json.load(f)
    if hc["model_type"] == "nemotron_h":
        sym = {"linear_attention": "M", "full_attention": "*", "mlp": "-", "moe": "E"}
        pat = "".join(sym[t] for t in hc.pop("layers_block_type"))
        hc.pop("mtp_layers_block_type", None)
        hc.update(hybrid_override_pattern=pat, num_hidden_layers=len(pat))
        if "E" not in pat:
            for k in ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                      "moe_shared_expert_intermediate_size", "routed_scaling_factor", "n_group", "topk_group",
                      "norm_topk_prob", "moe_latent_size", "moe_shared_expert_overlap"):
                hc.pop(k, None)
    else:
        hc["layer_types"] = [{"linear_attention": "mamba", "full_attention": "attention"}.get(t, t)
                             for t in hc["layer_types"]]
    with open(p, "w") as f:
        json.dump(hc, f, indent=1)


def _with_mtp_block(folder):
    """Nemotron 3's MTP head added to a saved MoE folder (mtp.layers.0: eh_proj, enorm / hnorm and an attention
    sub-layer; mtp.layers.1: a MoE sub-layer and its final norm; here copies of an attention and a MoE block),
    num_nextn_predict_layers = 1: the converter folds it into one trailing block (conversion/nemotron.py
    NemotronHModel), block_count = layers + 1, which glmbench leaves out of the config (skipped bytes)."""
    import torch
    from safetensors.torch import load_file, save_file
    path = os.path.join(folder, "model.safetensors")
    sd = load_file(path)
    with open(os.path.join(folder, "config.json")) as f:
        hc = json.load(f)
    pat, D = hc["hybrid_override_pattern"], hc["hidden_size"]
    for k, v in list(sd.items()):
        for src, dst in ((f"backbone.layers.{pat.index('*')}.", "mtp.layers.0."),
                         (f"backbone.layers.{pat.index('E')}.", "mtp.layers.1.")):
            if k.startswith(src):
                sd[dst + k[len(src):]] = v.clone()
    sd["mtp.layers.0.eh_proj.weight"] = torch.randn(D, 2 * D, generator=torch.Generator().manual_seed(1))
    for n in ("mtp.layers.0.enorm.weight", "mtp.layers.0.hnorm.weight", "mtp.layers.1.final_layernorm.weight"):
        sd[n] = torch.ones(D)
    save_file(sd, path, metadata={"format": "pt"})
    hc["num_nextn_predict_layers"] = 1
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hc, f, indent=1)


def _build(family, tmp):
    cfg, model = _hf(family)
    folder = lc.save_hf(model, cfg, os.path.join(tmp, family))
    _as_released(folder)
    if family == "nemotron_moe":
        _with_mtp_block(folder)
    return folder


# (HF folder, {"f16": path, "q8_0": path}) for a family: the run's families in one converter process
_converted = lc.Conversions(_build, TINY, param="family", prelude=_PRELUDE)

tmp = _converted.fixture("mamba")


_load, _diff = gguf_writer.load_stated, gguf_writer.config_diff


# ---- converted files: the config ---------------------------------------------------------------------
@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("family", list(TINY))
def test_converted_file_config_is_the_hf_config(tmp, family):
    folder, files = _converted(family, tmp)
    want = configs.load(folder)
    assert want.linear_kind == "mamba2" and want.linear_layers
    for kind, path in files.items():
        g = gguf_file.read(path)
        assert g.architecture == TINY[family][2]
        cfg = _load(path)
        assert cfg.cost_shape() == want.cost_shape(), (kind, _diff(cfg, want))
        assert cfg.total_params() == want.total_params() and cfg.active_params() == want.active_params()
        # the converter writes a context of 2**20 for these families (no rope to bound it): the only difference
        assert _diff(cfg, want) == {"max_position_embeddings": (2 ** 20, want.max_position_embeddings)}
        assert cfg.kv_bytes_per_token("f16") == want.kv_bytes_per_token("f16")
        assert cfg.recurrent_state_bytes() == want.recurrent_state_bytes() > 0
        if family in PATTERN:
            assert cfg.hf["hybrid_override_pattern"] == PATTERN[family]
            assert cfg.mixer_layers == want.mixer_layers and cfg.ffn_layers == want.ffn_layers
        else:
            assert cfg.hf["layer_types"] == TINY[family][1]["layer_types"]
            assert cfg.hf["position_embedding_type"] == "nope" and cfg.nope
            assert (cfg.embedding_multiplier, cfg.residual_multiplier, cfg.attention_scale, cfg.logit_scale) == \
                (12.0, 0.22, 0.0078125, 1 / 8.0)


@needs_converter
@pytest.mark.slow
def test_converted_nemotron_moe_routing_and_mtp(tmp):
    """Nemotron 3 Nano's router as the file states it (expert_weights_norm / _scale, expert_group_count /
    _used_count, the correction bias), the shared expert's width, and the MTP block: in block_count and the
    per-layer arrays, out of the config, its bytes skipped."""
    _, files = _converted("nemotron_moe", tmp)
    g = gguf_file.read(files["f16"])
    a = g.architecture
    assert g.get(f"{a}.nextn_predict_layers") == 1 and g.get(f"{a}.block_count") == 6
    assert g.get(f"{a}.attention.head_count_kv").tolist() == [0, 0, 2, 0, 0, 2]
    assert g.get(f"{a}.feed_forward_length").tolist() == [0, 32, 0, 0, 32, 32]
    cfg = _load(files["f16"])
    assert cfg.n_layers == 5 and cfg.moe_layers == (1, 4) and cfg.attention_layers == (2,)
    assert (cfg.router_scoring, cfg.router_bias, cfg.topk_method) == ("sigmoid", True, "noaux_tc")
    assert (cfg.n_routed_experts, cfg.n_experts_per_tok, cfg.moe_intermediate_size) == (4, 2, 32)
    assert (cfg.n_shared_experts, cfg.shared_expert_intermediate_size) == (1, 48)
    assert (cfg.n_group, cfg.topk_group, cfg.norm_topk_prob, cfg.routed_scaling_factor) == (2, 1, True, 2.5)
    assert not cfg.mlp_gated and cfg.n_layer_norms == 1
    fw = cfg.file_weights
    mtp = sum(t.n_bytes for n, t in g.tensors.items() if n.startswith("blk.5."))
    assert mtp > 0 and fw.skipped_bytes == mtp and fw.extra_bytes == 0


# ---- converted files: the bytes -------------------------------------------------------------------------
# each HF-named tensor (configs.tensor_shapes) -> the GGUF tensors holding it, as the converter writes them
# (conversion/mamba.py Mamba2Model, conversion/granite.py, conversion/nemotron.py; src/llama-arch.cpp's names)
_MAMBA_NAMES = {"in_proj.weight": "ssm_in.weight", "conv1d.weight": "ssm_conv1d.weight", "conv1d.bias": "ssm_conv1d.bias",
                "dt_bias": "ssm_dt.bias", "A_log": "ssm_a", "D": "ssm_d", "norm.weight": "ssm_norm.weight",
                "out_proj.weight": "ssm_out.weight"}
_ATTN_NAMES = {"q_proj.weight": "attn_q.weight", "k_proj.weight": "attn_k.weight", "v_proj.weight": "attn_v.weight",
               "o_proj.weight": "attn_output.weight"}
_FFN_NAMES = {"mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
              "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
              "mlp.gate.e_score_correction_bias": "exp_probs_b.bias", "mlp.experts.gate_proj": "ffn_gate_exps.weight",
              "mlp.experts.up_proj": "ffn_up_exps.weight", "mlp.experts.down_proj": "ffn_down_exps.weight",
              "mlp.shared_experts.gate_proj.weight": "ffn_gate_shexp.weight",
              "mlp.shared_experts.up_proj.weight": "ffn_up_shexp.weight",
              "mlp.shared_experts.down_proj.weight": "ffn_down_shexp.weight",
              "mlp.fc1_latent_proj.weight": "ffn_latent_down.weight", "mlp.fc2_latent_proj.weight": "ffn_latent_up.weight",
              "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight"}


def _gguf_of(hf):
    """The GGUF name the converter gives HF (glmbench) tensor name `hf`."""
    if not hf.startswith("model.layers."):
        return {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                "lm_head.weight": "output.weight"}[hf]
    _, _, i, rest = hf.split(".", 3)
    for pre, table in (("linear_attn.", _MAMBA_NAMES), ("self_attn.", _ATTN_NAMES), ("", _FFN_NAMES)):
        if rest.startswith(pre) and rest[len(pre):] in table:
            return f"blk.{i}.{table[rest[len(pre):]]}"
    raise AssertionError(hf)


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("family", list(TINY))
def test_converted_file_bytes_on_the_hf_names(tmp, family):
    """Every stored byte once, on the HF name the config gives it (the MTP block's skipped, nothing extra);
    the Mamba tensors in the converter's shapes (ssm_a / ssm_d [H, 1], the conv [C, K], the gated norm
    [groups, d_inner / groups]); q8_0 quantizes the matrices and keeps the rest f32, as llama.cpp does."""
    _, files = _converted(family, tmp)
    for kind, path in files.items():
        g = gguf_file.read(path)
        cfg = _load(path)
        fw, shapes, ts = cfg.file_weights, cfg.tensor_shapes(), g.tensors
        assert [n for n, _, _ in fw.tensors] == list(shapes)
        by, types = fw.bytes_of(), fw.types()
        for hf in shapes:
            n = _gguf_of(hf)
            assert by[hf] == ts[n].n_bytes and types[hf] == ts[n].type_name, (kind, hf, n)
        assert sum(by.values()) + fw.skipped_bytes == fw.total_bytes == g.tensor_bytes and fw.extra_bytes == 0
        H, P, G = cfg.linear_v_heads, cfg.linear_v_dim, cfg.linear_k_heads
        i = cfg.linear_layers[0]
        assert ts[f"blk.{i}.ssm_a"].shape == ts[f"blk.{i}.ssm_d"].shape == (H, 1)
        assert ts[f"blk.{i}.ssm_norm.weight"].shape == (G, H * P // G)
        assert ts[f"blk.{i}.ssm_conv1d.weight"].shape == (cfg.linear_conv_dim, cfg.linear_conv)
        if kind == "q8_0":
            assert fw.main_type == "Q8_0" and fw.weight_format == "q8_0"
            assert types[f"model.layers.{i}.linear_attn.in_proj.weight"] == "Q8_0"
            assert types[f"model.layers.{i}.linear_attn.conv1d.weight"] == "F32"
        else:
            assert fw.main_type == "F16"


@needs_converter
@pytest.mark.slow
def test_converted_file_priced_end_to_end(tmp):
    """`glmbench sweep --model FILE`: records priced from the file's own bytes."""
    from glmbench.models import checkpoint
    from glmbench.predict import costmodel as cm
    for family in TINY:
        _, files = _converted(family, tmp)
        p = files["q8_0"]
        cfg = _load(p)
        s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
        # the file's bytes, less the MTP block's and (an untied head: llama.cpp keeps it in host memory) the input
        # embedding's
        ts = gguf_file.read(p).tensors
        host = ts["token_embd.weight"].n_bytes if "output.weight" in ts else 0
        assert cm.memory(s, 1024).cards[0].weights == cfg.file_weights.model_bytes - host > 0
        assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0
    gguf_writer.sweep_file(files["q8_0"], tmp, "granite_dense-q8_0")


@needs_converter
@pytest.mark.slow
@pytest.mark.parametrize("family", list(TINY))
def test_converted_file_runs_as_stored(tmp, family):
    """glmbench.Model runs the converter's file: the Mamba-2 tensors back in HF's form (A_log from
    A = -exp(A_log), the reshaped D / norm / conv), q / k un-permuted; the F16 file's logits equal (to
    float32 rounding) the HF folder's run with its matrices in f16, and the Q8_0 file's, run as stored
    (q8_0 blocks), the HF folder's quantized to q8_0 by glmbench (the same blocks: gguf's quantizer)."""
    from glmbench.models import checkpoint
    from glmbench.core.quant import QTensor
    folder, files = _converted(family, tmp)
    ids = np.arange(1, 14) * 7 % 160
    ref_m = checkpoint.load_model(folder, weights="f16", kv="f32", max_context=64)
    ref = ref_m.prefill(ids)
    f16 = checkpoint.load_model(files["f16"], kv="f32", max_context=64)
    got = f16.prefill(ids)
    assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()
    assert np.abs(f16.decode(5) - ref_m.decode(5)).max() <= 1e-4 * np.abs(ref).max()
    q8 = checkpoint.load_model(files["q8_0"], kv="f32", max_context=64)
    lin = q8.layers[q8.config.linear_layers[0]].w["linear_attn.in_proj.weight"]
    assert isinstance(lin, QTensor) and lin.fmt == "q8_0"
    want = checkpoint.load_model(folder, weights="q8_0", kv="f32", max_context=64).prefill(ids)
    assert np.abs(q8.prefill(ids) - want).max() <= 1e-4 * np.abs(want).max()


@needs_converter
@pytest.mark.slow
def test_transformers5_conversion_is_refused_by_name(tmp):
    """The converter's default run under transformers 5 (AutoConfig parses the config: layer types
    'linear_attention' / 'full_attention' / 'mlp', MoE defaults in a dense Nemotron-H) writes metadata that
    makes blocks Mamba-2 which hold attention or MLP tensors (llama.cpp cannot load them): one error naming the
    block, the keys and the cause, not a wrong config."""
    for family, block, held in (("granite_moe", 1, "attn_q"), ("nemotron_dense", 1, "ffn_up")):
        cfg, model = _hf(family)
        raw = lc.save_hf(model, cfg, os.path.join(tmp, family + "-t5"))   # config.json as transformers 5 writes it
        p = _convert(raw, os.path.join(tmp, f"{family}-t5.gguf"), as_written=False)
        a = gguf_file.read(p).architecture
        with pytest.raises(gguf_file.GGUFError) as e:
            configs.load(p)
        msg = str(e.value)
        assert p in msg and f"block {block} is a Mamba-2 layer" in msg and f"'blk.{block}.ssm_in.weight'" in msg
        assert f"'{a}.attention.head_count_kv'" in msg and held in msg and "transformers 5" in msg


@needs_converter
@pytest.mark.slow
def test_converted_file_keys_missing_or_bad(tmp):
    """Each key the reading needs, removed or made inconsistent: a GGUFError naming it (in-memory edits of the
    converted files' metadata); the keys llama.cpp defaults, defaulted as it does."""
    _, files = _converted("nemotron_moe", tmp)
    g = gguf_file.read(files["f16"])
    base = dict(g.metadata)
    a = g.architecture

    hf_with = lc.hf_config_with

    assert hf_with(g, base)["hybrid_override_pattern"] == "ME*ME"
    for k in ("ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size",
              "attention.head_count_kv", "feed_forward_length", "expert_count", "expert_used_count"):
        with pytest.raises(gguf_file.GGUFError, match=f"'{a}.{k}' is missing"):
            hf_with(g, base, **{k: None})
    with pytest.raises(gguf_file.GGUFError, match=f"'{a}.attention.layer_norm_epsilon' is missing"):
        hf_with(g, base, **{"attention.layer_norm_epsilon": None})
    assert hf_with(g, base, **{"attention.layer_norm_rms_epsilon": 1e-6})["layer_norm_epsilon"] == 1e-6
    with pytest.raises(gguf_file.GGUFError, match="has 5 values; .* needs one per block"):
        hf_with(g, base, **{"attention.head_count_kv": np.array([0, 0, 2, 0, 0], np.uint32)})
    with pytest.raises(gguf_file.GGUFError, match="block 2 has both"):
        hf_with(g, base, **{"feed_forward_length": np.array([0, 32, 32, 0, 32, 32], np.uint32)})
    with pytest.raises(gguf_file.GGUFError, match="ssm.inner_size' = 124 is not a multiple"):
        hf_with(g, base, **{"ssm.inner_size": 124})
    # Nemotron 3 Super's latent MoE: its width read
    assert hf_with(g, base, moe_latent_size=1024)["moe_latent_size"] == 1024
    # widths the keys do not state: the tensors' rows; llama.cpp's defaults for the router's keys
    hf = hf_with(g, base, expert_feed_forward_length=None, expert_shared_feed_forward_length=None,
                 expert_weights_norm=None, expert_weights_scale=None, expert_group_count=None,
                 expert_group_used_count=None)
    assert (hf["moe_intermediate_size"], hf["moe_shared_expert_intermediate_size"]) == (32, 48)
    assert (hf["norm_topk_prob"], hf["routed_scaling_factor"], hf["n_group"], hf["topk_group"]) == (False, 1.0, 1, 1)
    # Granite: the layer kinds from head_count_kv; rope iff rope.scaling.finetuned (llama.cpp's default true);
    # its multipliers (attention.scale absent: llama.cpp's 1 / sqrt(head dim)); a dense file's MLP width
    _, files = _converted("granite_dense", tmp)
    g = gguf_file.read(files["f16"])
    base = dict(g.metadata)
    a = g.architecture
    hf = hf_with(g, base)
    assert hf["layer_types"] == ["mamba", "mamba", "attention", "mamba"] and hf["position_embedding_type"] == "nope"
    assert (hf["num_local_experts"], hf["shared_intermediate_size"]) == (0, 48)
    assert hf_with(g, base, **{"rope.scaling.finetuned": True})["position_embedding_type"] == "rope"
    assert hf_with(g, base, **{"rope.scaling.finetuned": None})["position_embedding_type"] == "rope"
    hf = hf_with(g, base, **{"attention.scale": None, "logit_scale": None, "residual_scale": None,
                             "embedding_scale": None})
    assert (hf["attention_multiplier"], hf["logits_scaling"], hf["residual_multiplier"], hf["embedding_multiplier"]) == \
        (0.25, 1.0, 1.0, 1.0)
    assert hf_with(g, base, expert_shared_feed_forward_length=None)["shared_intermediate_size"] == 48
    with pytest.warns(gguf_file.GGUFNotice, match="llama.cpp's loader sizes a dense file's MLP by feed_forward_length"):
        assert hf_with(g, base, feed_forward_length=32)["shared_intermediate_size"] == 48
    with pytest.raises(gguf_file.GGUFError, match=f"'{a}.attention.layer_norm_rms_epsilon' is missing"):
        hf_with(g, base, **{"attention.layer_norm_rms_epsilon": None})
    with pytest.raises(gguf_file.GGUFError, match="no block is a Mamba-2 layer"):
        hf_with(g, base, **{"attention.head_count_kv": np.array([2, 2, 2, 2], np.uint32)})


# ---- converter-free: a file written here ---------------------------------------------------------------
_SYNTH = {
    "nemotron_h": dict(model_type="nemotron_h", vocab_size=128, hidden_size=64, hybrid_override_pattern="M-M*-",
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=96,
                       mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16, conv_kernel=4,
                       layer_norm_epsilon=1e-5, tie_word_embeddings=False),
    "nemotron_h_moe": dict(model_type="nemotron_h", vocab_size=128, hidden_size=64, hybrid_override_pattern="MEM*E",
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16, mamba_num_heads=8,
                           mamba_head_dim=16, n_groups=2, ssm_state_size=16, conv_kernel=4, n_routed_experts=8,
                           num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=64,
                           n_shared_experts=1, routed_scaling_factor=2.5, n_group=1, topk_group=1, norm_topk_prob=True,
                           layer_norm_epsilon=1e-5, tie_word_embeddings=False),
    "granitehybrid": dict(model_type="granitemoehybrid", vocab_size=128, hidden_size=64, num_hidden_layers=4,
                          layer_types=["mamba", "attention", "mamba", "mamba"], num_attention_heads=4,
                          num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2, intermediate_size=32,
                          shared_intermediate_size=48, mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=1,
                          mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, position_embedding_type="nope",
                          embedding_multiplier=12.0, residual_multiplier=0.25, attention_multiplier=0.0078125,
                          logits_scaling=8.0, rms_norm_eps=1e-5, tie_word_embeddings=True),
}


def _write(path, arch, hc, drop=()):
    """A GGUF of HF config `hc` laid out as llama.cpp's converter writes `arch` (keys, per-layer arrays, tensor
    names and shapes; zeros for data, F16 matrices), less the metadata keys in `drop`."""
    cfg = configs.from_hf(hc, "synth")
    L, D = cfg.n_layers, cfg.hidden_size
    w = gguf.GGUFWriter(path, arch)
    meta = {"block_count": L, "context_length": 2 ** 20, "embedding_length": D, "attention.head_count": cfg.n_heads,
            "vocab_size": cfg.vocab_size, "ssm.conv_kernel": cfg.linear_conv, "ssm.state_size": cfg.linear_k_dim,
            "ssm.group_count": cfg.linear_k_heads, "ssm.inner_size": cfg.linear_v_heads * cfg.linear_v_dim,
            "ssm.time_step_rank": cfg.linear_v_heads, "rope.dimension_count": cfg.head_dim}
    kv = [cfg.n_kv_heads if i in cfg.attention_layers else 0 for i in range(L)]
    if arch == "granitehybrid":
        meta.update({"feed_forward_length": cfg.moe_intermediate_size or cfg.intermediate_size,
                     "attention.head_count_kv": kv, "attention.layer_norm_rms_epsilon": cfg.rms_norm_eps,
                     "expert_count": cfg.n_routed_experts, "expert_used_count": cfg.n_experts_per_tok,
                     "expert_shared_feed_forward_length": cfg.shared_expert_intermediate_size or cfg.intermediate_size,
                     "attention.scale": cfg.attention_scale, "embedding_scale": cfg.embedding_multiplier,
                     "residual_scale": cfg.residual_multiplier, "logit_scale": 1 / cfg.logit_scale,
                     "rope.scaling.finetuned": False})
    else:
        F = cfg.moe_intermediate_size if cfg.n_routed_experts else cfg.intermediate_size
        meta.update({"feed_forward_length": [F if cfg.has_ffn(i) else 0 for i in range(L)],
                     "attention.head_count_kv": kv, "attention.layer_norm_epsilon": cfg.rms_norm_eps,
                     "attention.key_length": cfg.head_dim, "attention.value_length": cfg.head_dim,
                     "rope.scaling.finetuned": False})
        if cfg.n_routed_experts:
            meta.update({"expert_count": cfg.n_routed_experts, "expert_used_count": cfg.n_experts_per_tok,
                         "expert_feed_forward_length": F,
                         "expert_shared_feed_forward_length": cfg.shared_expert_intermediate_size,
                         "expert_shared_count": cfg.n_shared_experts, "expert_weights_norm": cfg.norm_topk_prob,
                         "expert_weights_scale": cfg.routed_scaling_factor, "expert_group_count": cfg.n_group,
                         "expert_group_used_count": cfg.topk_group})
    gguf_writer.add_metadata(w, arch, meta, drop)
    for hf, shape in cfg.tensor_shapes().items():
        name = gguf_file.gguf_name(hf, arch, L)
        if hf.endswith(("linear_attn.A_log", "linear_attn.D")):
            shape = (shape[0], 1)
        elif hf.endswith("linear_attn.conv1d.weight"):
            shape = (shape[0], shape[2])
        elif hf.endswith("linear_attn.norm.weight"):
            shape = (cfg.linear_k_heads, shape[0] // cfg.linear_k_heads)
        f16 = len(shape) >= 2 and not hf.endswith(("conv1d.weight", "mlp.gate.weight", ".A_log", ".D", "norm.weight"))
        w.add_tensor(name, np.zeros(shape, np.float16 if f16 else np.float32))
    gguf_writer.finish(w)
    return cfg


@pytest.mark.parametrize("arch", list(_SYNTH))
def test_written_file_reads_as_its_config(tmp_path, arch):
    p = str(tmp_path / f"{arch}.gguf")
    want = _write(p, arch, _SYNTH[arch])
    cfg = _load(p)
    assert cfg.cost_shape() == want.cost_shape(), _diff(cfg, want)
    assert cfg.total_params() == want.total_params()
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and sum(fw.bytes_of().values()) == fw.total_bytes
    assert fw.main_type == "F16"


@pytest.mark.parametrize("arch,key", [
    ("nemotron_h", "ssm.state_size"), ("nemotron_h", "attention.head_count_kv"), ("nemotron_h", "feed_forward_length"),
    ("nemotron_h", "attention.layer_norm_epsilon"), ("nemotron_h_moe", "expert_count"),
    ("nemotron_h_moe", "expert_used_count"), ("granitehybrid", "ssm.time_step_rank"),
    ("granitehybrid", "attention.head_count_kv"), ("granitehybrid", "attention.layer_norm_rms_epsilon"),
    ("granitehybrid", "expert_used_count")])
def test_written_file_missing_key_is_named(tmp_path, arch, key):
    p = str(tmp_path / "bad.gguf")
    _write(p, arch, _SYNTH[arch], drop=(key,))
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    assert p in str(e.value) and f"'{arch}.{key}' is missing" in str(e.value)


def test_mamba_tensor_gguf_names():
    """The Mamba tensors' GGUF names (in_proj and D through Granite's `mamba.` names, A and D without
    `.weight`), for each architecture."""
    for arch in _SYNTH:
        p = "model.layers.3.linear_attn."
        assert [gguf_file.gguf_name(p + n, arch, 5) for n in ("in_proj.weight", "D", "A_log", "dt_bias", "norm.weight",
                                                              "conv1d.weight", "conv1d.bias", "out_proj.weight")] == \
            ["blk.3.ssm_in.weight", "blk.3.ssm_d", "blk.3.ssm_a", "blk.3.ssm_dt.bias", "blk.3.ssm_norm.weight",
             "blk.3.ssm_conv1d.weight", "blk.3.ssm_conv1d.bias", "blk.3.ssm_out.weight"]


def test_written_file_shape_disagreeing_with_the_metadata(tmp_path):
    p = str(tmp_path / "shape.gguf")
    _write(p, "granitehybrid", _SYNTH["granitehybrid"])
    g = gguf_file.read(p)
    g.metadata["granitehybrid.ssm.state_size"] = 32
    cfg = configs.from_hf(gguf_file.hf_config(g), "x")
    with pytest.raises(gguf_file.GGUFError, match=r"'blk.0.ssm_conv1d.weight' has shape \(160, 4\), the config .* expects \(192, 1, 4\)"):
        gguf_file.file_weights(g, cfg.tensor_shapes(), cfg.n_layers)


# ---- llama-bench's names -------------------------------------------------------------------------------
# llama-bench's model column, size and params (llama.cpp's architecture and size label: src/models/nemotron-h.cpp,
# granite-hybrid.cpp load_arch_hparams) -> the built-in and weights
_ROWS = {"nemotron_h_moe 31B.A3.5B Q4_K - Medium |  22.88 GiB |    31.58 B": ("nemotron-3-nano-30b-a3b", "Q4_K_M"),
         "nemotron_h 9B Q8_0             |   8.85 GiB |     8.89 B": ("nemotron-nano-9b-v2", "q8_0"),
         "nemotron_h 31B.A3.5B Q8_0      |   8.06 GiB |     8.10 B": ("nemotron-h-8b", "q8_0"),
         "granitehybrid 32B.A9B Q4_K - Medium |  18.14 GiB |    32.21 B": ("granite-4.0-h-small", "Q4_K_M"),
         "granitehybrid 7B.A1B Q4_K - Medium |   3.94 GiB |     6.94 B": ("granite-4.0-h-tiny", "Q4_K_M"),
         "granitehybrid 3B Q4_K - Medium |   1.81 GiB |     3.19 B": ("granite-4.0-h-micro", "Q4_K_M")}


def test_llama_bench_markdown_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       40.10 ± 0.50")
    # the HF model_types and a config with experts map to llama.cpp's names
    assert [im._arch_of("nemotron_h"), im._arch_of("nemotron_h", True), im._arch_of("granitemoehybrid"),
            im._arch_of("granitemoehybrid", True)] == ["nemotron_h", "nemotron_h_moe", "granitehybrid", "granitehybrid"]
    # the size label alone (no params column): each label names its model, but Nemotron-H 8B's, which llama.cpp
    # prints as "31B.A3.5B" (every 52-layer nemotron_h): no dense 31B built-in, no match rather than a wrong one
    for label, model in (("nemotron_h_moe 31B.A3.5B", "nemotron-3-nano-30b-a3b"), ("nemotron_h 9B", "nemotron-nano-9b-v2"),
                         ("granitehybrid 32B.A9B", "granite-4.0-h-small"), ("granitehybrid 7B.A1B", "granite-4.0-h-tiny"),
                         ("granitehybrid 3B", "granite-4.0-h-micro")):
        assert im.identify_model("/m/model.gguf", f"{label} Q4_K - Medium")[0] == model, label
    assert im.model_candidates("nemotron_h 31B.A3.5B Q8_0")[0] == []
    assert im.model_candidates("nemotron_h 31B.A3.5B Q8_0", 8.10e9)[0] == ["nemotron-h-8b"]
    # the MoE architecture is not the dense one's: Nemotron 3 Nano's count under nemotron_h matches nothing
    assert im.model_candidates("nemotron_h 31B.A3.5B Q4_K - Medium", 31.58e9)[0] == []
    assert im.model_candidates("nemotron_h_moe 31B.A3.5B Q4_K - Medium", 8.10e9)[0] == []


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_llama_bench_csv_and_json_rows_name_the_builtins(tmp_path, fmt):
    """The sample files' real layout (tests/data/formats), their model columns those of these GGUFs."""
    src = os.path.join(ROOT, "tests", "data", "formats", f"llama-bench.{fmt}")
    if not os.path.isfile(src):
        pytest.skip(f"{src} (the format samples) is absent")
    with open(src) as f:
        text = f.read()
    cases = [("/models/NVIDIA-Nemotron-3-Nano-30B-A3B-Q4_K_M.gguf", "nemotron_h_moe 31B.A3.5B Q4_K - Medium",
              31577940288, "nemotron-3-nano-30b-a3b", "Q4_K_M"),
             ("/models/granite-4.0-h-tiny-Q8_0.gguf", "granitehybrid 7B.A1B Q8_0", 6939037248, "granite-4.0-h-tiny",
              "q8_0"),
             ("/models/Nemotron-H-8B-Base-8K-Q8_0.gguf", "nemotron_h 31B.A3.5B Q8_0", 8100852736, "nemotron-h-8b", "q8_0")]
    for i, (fname, mtype, n, model, weights) in enumerate(cases):
        t = (text.replace("/models/GLM-4.7-Flash-Q4_K_M.gguf", fname)
             .replace("deepseek2 30B.A3B Q4_K - Medium", mtype).replace("29943390208", str(n)))
        p = tmp_path / f"lb{i}.{fmt}"
        p.write_text(t)
        recs = im.read(str(p))
        assert recs and {(r["model"], r["weights"]) for r in recs} == {(model, weights)}, mtype
