"""Weight formats: every ggml type's block bytes (against the gguf package), llama.cpp's named mixes
resolved per tensor (hand-computed bytes for a small model), vLLM's fp8/AWQ/GPTQ, names
case-insensitive, and the cost model using the per-tensor types."""
import math

import pytest

from glmbench import vocab
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import sweep as sw


def test_ggml_table_equals_the_gguf_package():
    gguf = pytest.importorskip("gguf")
    ours = {f.ggml_type: f for f in vocab.GGML_TYPES.values()}
    assert len(ours) == len(vocab.GGML_TYPE_TABLE)
    for t, (block, nbytes) in gguf.GGML_QUANT_SIZES.items():
        assert t.value in ours, f"{t.name} (id {t.value}) is missing from vocab.GGML_TYPE_TABLE"
        f = ours[t.value]
        assert (f.name.upper(), f.block, f.block_bytes) == (t.name, block, nbytes)
    assert set(ours) == {t.value for t in gguf.GGML_QUANT_SIZES}


@pytest.mark.parametrize("name,want", [
    ("q4_K", "q4_K"), ("Q4_K", "q4_K"), ("q8_0", "q8_0"), ("Q8_0", "q8_0"), ("IQ4_XS", "iq4_xs"),
    ("iq4_xs", "iq4_xs"), ("mxfp4", "mxfp4"), ("MXFP4", "mxfp4"), ("Q4_K_M", "Q4_K_M"), ("q4_k_m", "Q4_K_M"),
    ("q3_k_s", "Q3_K_S"), ("mix:q2_k", "mix:Q2_K"), ("MIX:Q4_K_M", "Q4_K_M"), ("FP8", "fp8"), ("AWQ", "awq"),
    ("gptq", "gptq"), ("tq1_0", "tq1_0"), ("IQ1_M", "iq1_m"),
])
def test_names_are_case_insensitive(name, want):
    assert vocab.weight_format(name).name == want


def test_unknown_format_lists_the_known():
    with pytest.raises(ValueError, match=r"unknown weight format 'q4_X'.*Q4_K_M"):
        vocab.weight_format("q4_X")
    with pytest.raises(ValueError, match="unknown KV-cache format"):
        vocab.kv_format("q4_K")
    assert vocab.kv_format("Q8_0").name == "q8_0"


def test_block_sizes():
    g = vocab.GGML_TYPES
    assert g["q3_K"].bits_per_weight == pytest.approx(3.4375)
    assert g["iq2_xxs"].bits_per_weight == pytest.approx(2.0625)
    assert g["mxfp4"].nbytes(64) == 34 and g["tq2_0"].nbytes(256) == 66
    assert vocab.row_format(g["iq2_xs"], 96).name == "iq4_nl"      # llama.cpp's fallback
    assert vocab.row_format(g["tq1_0"], 96).name == "q4_0"
    assert vocab.row_format(g["mxfp4"], 48).name == "f16"         # no fallback: kept unquantized


# A small llama: 16 layers (so use_more_bits picks layers 0, 1, 4, 7, 10, 13, 14, 15), GQA 8/2 = 4
SMALL = dict(model_type="llama", vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=16,
             num_attention_heads=8, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-5, tie_word_embeddings=False)
MORE_BITS = {0, 1, 4, 7, 10, 13, 14, 15}
Q4K = {256: 144, 512: 288}      # bytes of one q4_K row of 256 / 512 weights
Q6K = {256: 210, 512: 420}


def test_q4_k_m_by_hand():
    cfg = configs.load(SMALL)
    types = cfg.tensor_formats("Q4_K_M")
    for i in range(16):
        p = f"model.layers.{i}."
        want = "q6_K" if i in MORE_BITS else "q4_K"
        assert types[p + "self_attn.v_proj.weight"].name == want
        assert types[p + "mlp.down_proj.weight"].name == want
        assert types[p + "self_attn.q_proj.weight"].name == "q4_K"
        assert types[p + "self_attn.o_proj.weight"].name == "q4_K"
        assert types[p + "mlp.up_proj.weight"].name == "q4_K"
        assert types[p + "input_layernorm.weight"].name == "f32"
    assert types["lm_head.weight"].name == "q6_K" and types["model.embed_tokens.weight"].name == "q4_K"
    base = (256 + 64 + 64 + 256) * Q4K[256] + 2 * 512 * Q4K[256] + 256 * Q4K[512] + 2 * 256 * 4
    bump = 64 * (Q6K[256] - Q4K[256]) + 256 * (Q6K[512] - Q4K[512])
    want = 16 * base + len(MORE_BITS) * bump + 1024 * Q4K[256] + 1024 * Q6K[256] + 256 * 4
    assert cfg.weight_bytes("Q4_K_M") == cfg.weight_bytes("q4_k_m") == want
    # the pure type: every matrix q4_K (llama-quantize --pure), output included
    assert cfg.weight_bytes("q4_K") == 16 * base + 2 * 1024 * Q4K[256] + 256 * 4


def test_q3_k_m_and_q2_k_rules():
    cfg = configs.load(SMALL)
    t = cfg.tensor_formats("Q3_K_M")
    p = "model.layers.{}."
    assert [t[p.format(i) + "self_attn.v_proj.weight"].name for i in (0, 1, 2)] == ["q5_K", "q5_K", "q4_K"]
    assert [t[p.format(i) + "mlp.down_proj.weight"].name for i in (0, 1, 15)] == ["q5_K", "q4_K", "q4_K"]
    assert t[p.format(3) + "self_attn.o_proj.weight"].name == "q4_K"
    assert t[p.format(3) + "self_attn.q_proj.weight"].name == "q3_K"
    t = cfg.tensor_formats("mix:Q2_K")
    assert t[p.format(3) + "self_attn.v_proj.weight"].name == "q4_K"     # GQA 4
    assert t[p.format(3) + "mlp.down_proj.weight"].name == "q3_K"
    assert t[p.format(3) + "self_attn.o_proj.weight"].name == "q3_K"
    assert t[p.format(3) + "mlp.gate_proj.weight"].name == "q2_K"
    assert t["lm_head.weight"].name == "q6_K"
    # the pure type Q2_K keeps every matrix q2_K
    assert all(f.name in ("q2_K", "f32") for f in cfg.tensor_formats("Q2_K").values())


def test_tied_embeddings_take_the_output_rule():
    cfg = configs.load({**SMALL, "tie_word_embeddings": True})
    assert cfg.tensor_formats("Q4_K_M")["model.embed_tokens.weight"].name == "q6_K"


def test_mxfp4_moe_and_moe_mixes():
    cfg = configs.load("qwen3-30b-a3b")
    t = cfg.tensor_formats("MXFP4_MOE")
    p = "model.layers.5."
    assert t[p + "mlp.experts.gate_proj"].name == "mxfp4" and t[p + "mlp.experts.down_proj"].name == "mxfp4"
    assert t[p + "self_attn.q_proj.weight"].name == "q8_0" and t["lm_head.weight"].name == "q8_0"
    assert t[p + "mlp.gate.weight"].name == "f32"
    E, F, D = cfg.n_routed_experts, cfg.moe_intermediate_size, cfg.hidden_size
    assert vocab.tensor_nbytes("MXFP4_MOE", p + "mlp.experts.up_proj", (E, F, D), cfg.tensor_context()) \
        == E * F * D // 32 * 17
    # Q4_K_M bumps the stacked experts' ffn_down_exps on the use_more_bits layers too
    t = cfg.tensor_formats("Q4_K_M")
    assert t["model.layers.0.mlp.experts.down_proj"].name == "q6_K"
    assert t["model.layers.7.mlp.experts.down_proj"].name == "q4_K"      # 48 layers: 0-5, 8, 11, ... get more bits
    assert t["model.layers.8.mlp.experts.down_proj"].name == "q6_K"


def test_a_mix_needs_the_model():
    with pytest.raises(ValueError, match="llama.cpp mix"):
        vocab.tensor_format("Q4_K_M", "model.layers.0.self_attn.v_proj.weight", (64, 256))


def test_vllm_formats_by_hand():
    cfg = configs.load(SMALL)
    q = (256, 256)
    name = "model.layers.0.self_attn.q_proj.weight"
    assert vocab.tensor_nbytes("awq", name, q) == 256 * 2 * 66.5 == 34048      # int4 + f16 scale + 4-bit zero per 128
    assert vocab.tensor_nbytes("gptq", name, q) == 34048 + 256 * 4            # + g_idx
    assert vocab.tensor_nbytes("fp8", name, q) == 65536 + 4                   # one f32 scale
    assert vocab.tensor_nbytes("fp8_per_channel", name, q) == 65536 + 256 * 4
    # embeddings, lm_head, norms stay bf16 in a vLLM checkpoint
    t = cfg.tensor_formats("awq")
    assert t["model.embed_tokens.weight"].name == t["lm_head.weight"].name == "bf16"
    assert t["model.norm.weight"].name == "bf16"
    fp8 = cfg.weight_bytes("fp8")
    mats = 16 * 7                                                            # 7 matrices per layer
    n_mat = 16 * ((256 + 64 + 64 + 256) * 256 + 3 * 512 * 256)
    assert fp8 == n_mat + 4 * mats + 2 * 1024 * 256 * 2 + (16 * 2 * 256 + 256) * 2


def test_cost_model_uses_the_mix_per_tensor():
    cfg = configs.load(SMALL)
    rt = cm.load_runtime("typical")
    embed = cfg.tensor_formats("Q4_K_M")["model.embed_tokens.weight"].nbytes(256) * 1024
    host = embed if rt.embeddings_on_host else 0
    s = cm.Setup(cfg, "rtx-3090", weights="q4_k_m")
    assert s.weights == "Q4_K_M"
    assert cm.memory(s, 0).weights == cfg.weight_bytes("Q4_K_M") - host
    # split by layers: each card holds exactly its own layers' types
    two = cm.Setup(cfg, cm.Rig(cm.hardware.get_gpu("rtx-3090"), 2, link_gbps=25), split="layer", weights="Q4_K_M")
    cards = cm.memory(two, 0).cards
    assert sum(c.weights for c in cards) == cfg.weight_bytes("Q4_K_M") - host
    # more bytes than the pure type: a slower memory-bound decode
    pure = cm.Setup(cfg, "rtx-3090", weights="q4_K")
    assert cm.decode(s, 1024).bytes > cm.decode(pure, 1024).bytes
    rec = sw.setup_fields(s)
    assert rec["weights"] == "Q4_K_M" and "approximation" in rec["weights_note"]
    assert "weights_note" not in sw.setup_fields(pure)


@pytest.mark.parametrize("w", ["Q8_0", "IQ4_XS", "mxfp4", "fp8", "awq", "gptq", "Q5_K_M", "IQ2_M", "TQ1_0"])
def test_every_family_of_format_predicts(w):
    s = cm.Setup("glm-4.7-flash", "rtx-3090", weights=w)
    assert cm.decode(s, 4096).tok_s > 0 and cm.prefill(s, 512).tok_s > 0
    assert math.isfinite(cm.memory(s, 4096).total)


def test_a_hybrids_linear_layers_in_a_mix():
    """Qwen3.5's Gated DeltaNet layers as llama.cpp's quantizer types them: q, k, v (attn_qkv) in the
    attn_v-like category (bumped to q6_K on the use_more_bits layers of Q4_K_M, counted with the
    full layers' attn_v, one per layer), the short convolution never quantized (f32), the rest at
    the mix's base type."""
    c = configs.load("qwen3.5-35b-a3b")
    tf = c.tensor_formats("Q4_K_M")
    for i in range(c.n_layers):
        v = (f"model.layers.{i}.linear_attn.in_proj_qkv.weight" if i in c.linear_layers
             else f"model.layers.{i}.self_attn.v_proj.weight")
        assert tf[v].name == ("q6_K" if vocab._use_more_bits(i, c.n_layers) else "q4_K"), v
    lin = c.linear_layers[0]
    for fmt in ("Q4_K_M", "q8_0", "MXFP4_MOE", "IQ2_XS"):
        assert c.tensor_formats(fmt)[f"model.layers.{lin}.linear_attn.conv1d.weight"].name == "f32"
    assert tf[f"model.layers.{lin}.linear_attn.in_proj_z.weight"].name == "q4_K"
    assert tf[f"model.layers.{lin}.linear_attn.out_proj.weight"].name == "q4_K"
    assert tf[f"model.layers.{lin}.linear_attn.A_log"].name == "f32"


# HF names that vocab.gguf_tensor_name leaves as they are where gguf-py maps them, on purpose: Qwen3-Next's fused
# in_proj_qkvz, which the converter splits into attn_qkv + attn_gate (conversion/qwen.py), priced as one attn_qkv
# (vocab._HF_TO_GGUF); Gemma 3n / 4's AltUp, LAuReL and per-layer-input matrices, which no rule of
# llama-quant.cpp names but "altup" / "laurel" / "per_layer_model_proj" (vocab.NEVER_QUANTIZED). (per_layer_token_embd
# is named: llama-quant's token_embd rule takes it, mid-2025's as token_embd, 2026's as the tied output.)
_NAME_EXCEPTIONS = {"linear_attn.in_proj_qkvz.weight", "per_layer_input_gate.weight", "per_layer_projection.weight"}


def test_tensor_names_agree_with_gguf_py_for_every_builtin():
    """Each matrix of every built-in model takes, in vocab.gguf_tensor_name, the llama.cpp tensor name that
    gguf-py's own TensorNameMap gives it (the names llama-quant.cpp's per-tensor rules match), where gguf-py
    maps it: the AFMoE attention gate as attn_gate, not an unmapped HF name."""
    gguf = pytest.importorskip("gguf")
    from glmbench.results import importers as im
    arch = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    checked, wrong = 0, []
    for n in configs.builtin_names():
        c = configs.load(n)
        a = im._arch_of(c.model_type, bool(c.n_routed_experts))
        if a not in arch:
            continue
        tmap = gguf.get_tensor_name_map(arch[a], c.n_layers)
        for t, shape in c.tensor_shapes().items():
            g = tmap.get_name(t, try_suffixes=(".weight", ".bias"))
            if (len(shape) < 2 or g is None or t.split(".", 3)[-1] in _NAME_EXCEPTIONS or t in _NAME_EXCEPTIONS
                    or any(w in t for w in vocab.NEVER_QUANTIZED)):
                continue
            ours, layer = vocab.gguf_tensor_name(t)
            full = ours if layer is None else f"blk.{layer}.{ours}"
            checked += 1
            if full not in (g, g + ".weight"):      # (gguf-py names stacked experts without the suffix)
                wrong.append((n, t, full, g))
    assert checked > 5000 and not wrong, wrong[:5]
    assert vocab.gguf_tensor_name("model.layers.3.self_attn.gate_proj.weight") == ("attn_gate.weight", 3)
    assert vocab.gguf_tensor_name("model.layers.0.mlp.shared_expert_gate.weight") == ("ffn_gate_inp_shexp.weight", 0)


def test_a_mix_keeps_what_the_quantizer_never_quantizes():
    """llama-quant.cpp never quantizes Gemma 3n's AltUp and LAuReL matrices or its per-layer model
    projection (`name.find("altup")` and the like): they keep the converted file's 16-bit type in every mix,
    while the layers' own projections take the mix's types."""
    c = configs.load("gemma-3n-e4b")
    for mix in ("Q4_K_M", "Q5_K_S", "mix:IQ2_XS"):
        tf = c.tensor_formats(mix)
        kept = [k for k in tf if any(w in k for w in ("altup", "laurel", "per_layer_model_proj")) and
                len(c.tensor_shapes()[k]) >= 2]
        assert len(kept) > 3 * c.n_layers, kept[:3]
        assert {tf[k].name for k in kept} == {"f16"}, mix
        assert tf["model.layers.5.mlp.up_proj.weight"].name not in ("f16", "f32")
    # a plain type (not a mix) quantizes them as any other matrix whose rows are whole blocks
    assert c.tensor_formats("q8_0")["model.layers.5.laurel.linear_left.weight"].name == "q8_0"
