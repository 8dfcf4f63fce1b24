"""NVIDIA's Llama-Nemotron "DeciLM" (nemotron-nas), EXAONE 3.x (exaone) and ERNIE 4.5 dense (ernie4_5): configs,
parameter counts (DeciLM's by its own formula: transformers 5.25 ships no DeciLM; EXAONE's and ERNIE's against HF's
meta-device models), the per-layer pricing of DeciLM's layers, GGUF files as llama.cpp's converter lays them out
(conversion/deci.py DeciModel, conversion/exaone.py ExaoneModel, conversion/ernie.py Ernie4_5Model), written here with
the gguf package and, where the vendored converter is at hand, converted from tiny folders; llama-bench's names and
the built-ins. DeciLM is priced, not run (configs.PRICED_ONLY); EXAONE and ERNIE 4.5 run (their logits against HF's:
tests/test_model_hf.py)."""
import json

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_meta  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs, gguf_file  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results import importers as im  # noqa: E402


def _att(g=None, *, no_op=False, linear=False):
    return {"n_heads_in_group": g, "no_op": no_op, "replace_with_linear": linear, "sparsify": None}


def _ffn(mult=None, *, no_op=False, linear=False):
    return {"ffn_mult": mult, "no_op": no_op, "replace_with_linear": linear, "sparsify": None}


# six layers, every kind of block: GQA with 2 / 1 / 4 KV heads, attention-free, attention replaced by a linear;
# MLPs 2.625 / 1.3125 / 5.25 x (512, 256, 1024 wide at hidden 256), none, a linear
_BLOCKS = [dict(attention=_att(2), ffn=_ffn(2.625)), dict(attention=_att(no_op=True), ffn=_ffn(1.3125)),
           dict(attention=_att(linear=True), ffn=_ffn(5.25)), dict(attention=_att(4), ffn=_ffn(no_op=True)),
           dict(attention=_att(1), ffn=_ffn(linear=True)), dict(attention=_att(no_op=True), ffn=_ffn(no_op=True))]
_DECI = dict(model_type="nemotron-nas", architectures=["DeciLMForCausalLM"], vocab_size=160, hidden_size=256,
             num_hidden_layers=6, num_attention_heads=4, rms_norm_eps=1e-5, max_position_embeddings=256,
             rope_theta=10000.0, hidden_act="silu", tie_word_embeddings=False, block_configs=_BLOCKS)


def _deci_count(hf):
    """DeciLM's parameters as DeciLMForCausalLM builds them (modeling_decilm.py): embeddings and lm_head, the final
    norm, and per layer a norm and q/k/v/o before a GQA attention (or a norm and one hidden x hidden linear), a norm
    and gate / up / down of _ffn_mult_to_intermediate_size(ffn_mult) before a SwiGLU MLP (or a norm and a linear)."""
    D, H, V = hf["hidden_size"], hf["num_attention_heads"], hf["vocab_size"]
    hd = D // H
    n = V * D * (1 if hf.get("tie_word_embeddings") else 2) + D
    for b in hf["block_configs"]:
        a, f = b["attention"], b["ffn"]
        if not a["no_op"]:
            n += D + (D * D if a["replace_with_linear"] else 2 * D * D + 2 * D * (H // a["n_heads_in_group"]) * hd)
        if f["no_op"]:
            continue
        if f["replace_with_linear"]:
            n += D + D * D
        else:
            width = int(2 * f["ffn_mult"] * D / 3)
            n += D + 3 * D * (width + -width % 256)
    return n


# ---- DeciLM ------------------------------------------------------------------------------------------------------
def test_deci_config_per_layer_shapes_and_count():
    c = configs.from_hf(_DECI)
    assert c.model_type == "nemotron-nas" and configs.FAMILIES["nemotron-nas"] == "gqa"
    assert c.layer_kv_list == (2, 0, 0, 1, 4, 0) and c.layer_intermediates == (512, 256, 1024, 0, 0, 0)
    assert c.attention_layers == c.cache_layers == (0, 3, 4) and c.dense_layers == (0, 1, 2)
    assert (c.linear_attn_layers, c.linear_mlp_layers) == ((2,), (4,))
    assert [c.layer_kv_heads(i) for i in c.attention_layers] == [2, 1, 4] and c.head_dim == 64
    assert c.total_params() == _deci_count(_DECI) == 2_214_144
    shapes = c.tensor_shapes()
    assert sum(configs._numel(s) for s in shapes.values()) == c.total_params()
    # DeciLMDecoderLayer's names: no norm before a no-op block, the linear stand-ins' one matrix each
    assert "model.layers.1.input_layernorm.weight" not in shapes and "model.layers.5.post_attention_layernorm.weight" \
        not in shapes and "model.layers.3.post_attention_layernorm.weight" not in shapes
    assert shapes["model.layers.2.self_attn.linear_attn.weight"] == shapes["model.layers.4.mlp.linear_mlp.weight"] \
        == (256, 256)
    assert shapes["model.layers.3.self_attn.k_proj.weight"] == (64, 256) and \
        shapes["model.layers.4.self_attn.v_proj.weight"] == (256, 256)
    # the cache: only the attention layers, each its own KV heads
    assert c.kv_bytes_per_token("f16") == (2 + 1 + 4) * 2 * 64 * 2
    assert c.forward_unsupported()[-1].endswith("(model_type 'nemotron-nas' is priced, not run)")
    with pytest.raises(ValueError, match="priced, not run"):
        __import__("glmbench").Model(c, weights="f32", max_context=16)
    # biases where the config asks (the attention's q/k/v/o, the SwiGLU MLPs': DeciLM's attention_bias / mlp_bias)
    b = configs.from_hf({**_DECI, "attention_bias": True, "mlp_bias": True})
    assert b.total_params() - c.total_params() == (256 + 2 * 128 + 256 + 256 + 64 * 2 + 256 + 256 * 2 + 256 * 2) + \
        sum(2 * w + 256 for w in (512, 256, 1024))


def test_deci_config_errors():
    for bad, match in (({"block_configs": _BLOCKS[:5]}, r"`block_configs` must list one .* 6 layers"),
                       ({"block_configs": _BLOCKS[:5] + [dict(attention=_att(3), ffn=_ffn(1.0))]},
                        r"`block_configs\[5\].attention.n_heads_in_group` must be a positive divisor"),
                       ({"block_configs": _BLOCKS[:5] + [dict(attention=_att(2), ffn=_ffn())]},
                        r"`block_configs\[5\].ffn.ffn_mult`"),
                       ({"block_configs": _BLOCKS[:5] + [{"attention": _att(2)}]}, r"`block_configs\[5\]` must hold")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_DECI, **bad})


def test_deci_priced_per_layer():
    """Each layer priced at its own shape: a DeciLM whose layers are all alike prices as the Llama of that shape (but
    for its attention's norm, a kernel of its own where Llama's two norms are priced as one op: a few microseconds);
    the mixed one's decode reads every weight once (each KV-head count and MLP width its own ops) and caches only
    its attention layers."""
    same = [dict(attention=_att(2), ffn=_ffn(1.5))] * 4       # 256 x 1.5 x 2 / 3 = 256 wide
    d = configs.from_hf({**_DECI, "num_hidden_layers": 4, "block_configs": same})
    ll = configs.from_hf(dict(model_type="llama", vocab_size=160, hidden_size=256, num_hidden_layers=4,
                              num_attention_heads=4, num_key_value_heads=2, intermediate_size=256, rms_norm_eps=1e-5,
                              max_position_embeddings=256, rope_theta=10000.0))
    assert d.total_params() == ll.total_params()
    for w in ("f16", "Q4_K_M"):
        a, b = cm.Setup(d, "rtx-3090", weights=w), cm.Setup(ll, "rtx-3090", weights=w)
        da, db = cm.decode(a, 100), cm.decode(b, 100)
        assert da.seconds == pytest.approx(db.seconds, rel=1e-3)
        assert sum(op.bytes for op in da.ops) == pytest.approx(sum(op.bytes for op in db.ops), rel=1e-9)
        assert cm.prefill(a, 64, 10).seconds == pytest.approx(cm.prefill(b, 64, 10).seconds, rel=1e-3)
    c = configs.from_hf(_DECI)
    st = cm.Setup(c, "rtx-3090", weights="f16")
    dec = cm.decode(st, 100)
    names = [op.name for op in dec.ops]
    assert names.count("attn.qkv") == 3 and names.count("mlp") == 3      # three KV-head counts, three widths
    assert names.count("attn.linear") == names.count("mlp.linear") == 1
    assert sum(op.count for op in dec.ops if op.name == "norms") == 3 + 3 + 2
    wb = c.weight_bytes("f16")
    assert wb <= sum(op.bytes for op in dec.ops) < 1.1 * wb
    assert cm.prefill(st, 64).tok_s > 0 and cm.memory(st, 100).fits
    # tensor split: every layer's KV heads (4, 2, 1 here) divide or are divided by the cards
    from glmbench.predict import hardware as hw
    assert cm.decode(cm.Setup(c, hw.Rig("rtx-3090", 2), split="tensor", weights="f16"), 100).tok_s > 0
    with pytest.raises(ValueError, match=r"each layer's KV heads .* layers of 3"):
        cm.Setup(configs.from_hf({**_DECI, "hidden_size": 384, "num_attention_heads": 12, "num_hidden_layers": 2,
                                  "block_configs": [dict(attention=_att(2), ffn=_ffn(1.0)),
                                                    dict(attention=_att(4), ffn=_ffn(1.0))]}),
                 hw.Rig("rtx-3090", 2), split="tensor")
    off = cm.Setup(c, "rtx-3090", weights="f16", offload=cm.Offload(n_gpu_layers=3))
    # (three layers in host memory: every layer's own ops still run once, on the host or the card)
    n: dict = {}
    for op in cm.decode(off, 100).ops:
        n[op.name.replace(" (host)", "")] = n.get(op.name.replace(" (host)", ""), 0) + op.count
    assert (n["attn.qkv"], n["mlp"], n["attn.linear"], n["mlp.linear"]) == (3, 3, 1, 1)
    assert n["norms"] == 3 + 3 + 2      # (before each attention, each MLP, each linear stand-in)


def _deci_meta(cfg, hf):
    L = cfg.n_layers
    heads = [0 if b["attention"]["no_op"] else cfg.n_heads for b in hf["block_configs"]]
    return {**gguf_writer.gqa_meta(cfg), "attention.head_count": heads,
            "attention.head_count_kv": list(cfg.layer_kv_list), "feed_forward_length": list(cfg.layer_intermediates),
            "attention.key_length": cfg.head_dim, "attention.value_length": cfg.head_dim,
            "rope.dimension_count": cfg.head_dim, "block_count": L}


# llama.cpp has no linear MLP (gguf's TensorNameMap names no linear_mlp): its files hold no-op / SwiGLU MLPs only
_GG_BLOCKS = _BLOCKS[:4] + [dict(attention=_att(1), ffn=_ffn(2.625)), _BLOCKS[5]]
_GG = {**_DECI, "block_configs": _GG_BLOCKS}


def test_deci_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "deci.gguf")
    want = configs.from_hf(_GG, "synth")
    gguf_writer.write_zero_file(p, want, "deci", _deci_meta(want, _GG))
    cfg, names = gguf_writer.read_back(p, want)
    # the linear attention is llama.cpp's attn_output of layer 2, hidden x hidden; no attention tensors on 1 and 5
    assert "blk.2.attn_output.weight" in names and "blk.2.attn_q.weight" not in names
    assert not {n for n in names if n.startswith(("blk.1.attn", "blk.5."))}
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0
    # errors: a width DeciLM's rounding does not give, a layer with some of the heads
    for key, val, match in (("feed_forward_length", [500, 256, 1024, 0, 512, 0], "500 on layer 0 is no DeciLM width"),
                            ("attention.head_count", [4, 0, 4, 2, 4, 0], "= 2 on layer 3")):
        q = str(tmp_path / f"bad-{key}.gguf")
        gguf_writer.write_zero_file(q, want, "deci", {**_deci_meta(want, _GG), key: val})
        with pytest.raises(gguf_file.GGUFError, match=match):
            configs.load(q)


def test_deci_converted_file(tmp_path):
    """llama.cpp's converter (conversion/deci.py DeciModel) on a tiny DeciLM folder (config.json with block_configs,
    safetensors by DeciLM's names, random weights): the config read back is the folder's, every byte a tensor of it,
    q / k rows un-permuted per layer's KV heads as the converter permuted them."""
    st = pytest.importorskip("safetensors.numpy")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    d = tmp_path / "hf"
    d.mkdir()
    want = configs.from_hf(_GG, "hf")
    rng = np.random.default_rng(0)
    tensors = {k: rng.standard_normal(s).astype(np.float32) for k, s in want.tensor_shapes().items()}
    st.save_file(tensors, str(d / "model.safetensors"))
    (d / "config.json").write_text(json.dumps(_GG))
    (d / "tokenizer.json").write_text(json.dumps({"model": {"type": "WordLevel", "vocab": {f"<t{i}>": i for i in
                                                                                           range(160)}},
                                                 "added_tokens": []}))
    assert configs.load(str(d)).file_weights.extra_bytes == 0
    f = lc.convert(str(d), tmp_path / "deci.gguf", "f32")
    cfg = configs.load(f)
    assert gguf_writer.config_diff(cfg, want) == {}
    fw = cfg.file_weights
    assert fw.main_type == "F32" and fw.extra_bytes == fw.skipped_bytes == 0
    g = gguf_file.read(f)
    assert g.get("deci.attention.head_count_kv").tolist() == [2, 0, 0, 1, 4, 0]
    assert g.get("deci.feed_forward_length").tolist() == [512, 256, 1024, 0, 512, 0]
    # layer 3's k rows (one KV head) as the converter permuted them, back
    k = np.asarray(g.tensor_data("blk.3.attn_k.weight")).reshape(64, 256)
    np.testing.assert_array_equal(gguf_file.un_permute(k, 1), tensors["model.layers.3.self_attn.k_proj.weight"])
    s = cm.Setup(cfg, "rtx-3090", runtime="llama.cpp")
    assert cm.decode(s, 4096).seconds > 0 and cm.prefill(s, 512, 0).seconds > 0


def test_deci_llama_bench_rows_name_no_builtin():
    """llama.cpp labels a deci file by depth alone (src/models/deci.cpp: 80 layers -> "70B"): Llama-3.3-Nemotron-
    Super-49B's row is no Llama 70B, and no built-in (glmbench ships none: its block_configs are not at hand)."""
    assert im._arch_of("nemotron-nas") == "deci"
    assert im.model_candidates("deci 70B Q4_K - Medium", 49.87e9)[0] == []
    assert im.model_candidates("deci 70B Q4_K - Medium")[0] == []


def test_cuda_model_refuses_deci():
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"CudaModel: .* which the CUDA path does not implement"):
        cuda.CudaModel(configs.from_hf(_DECI))


# ---- EXAONE 3.x and ERNIE 4.5 dense ----------------------------------------------------------------------------
_B = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
          num_key_value_heads=2, rms_norm_eps=1e-5, max_position_embeddings=4096, pad_token_id=0, bos_token_id=1,
          eos_token_id=2)


_meta_count = hf_meta.meta_model


@pytest.mark.parametrize("mt,kw", [("exaone", {}), ("exaone", dict(attention_bias=True, tie_word_embeddings=True)),
                                   ("ernie4_5", {}), ("ernie4_5", dict(use_bias=True, head_dim=32))])
def test_exaone_ernie_parameters_equal_the_hf_model(mt, kw):
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model(mt, **{**_B, **kw})
    m, n = _meta_count(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == mt and cfg.total_params() == n
    assert {k: tuple(p.shape) for k, p in m.named_parameters()} == \
        {k: v for k, v in cfg.tensor_shapes().items() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    assert cfg.rope_layout == ("interleaved" if mt == "ernie4_5" else "half")
    # ERNIE's use_bias: every projection, the MLP's too (Model refuses an MLP bias; the released models have none)
    assert cfg.forward_unsupported() == (["mlp_bias (biases on the MLP's gate / up / down projections)"]
                                         if kw.get("use_bias") else [])


def test_exaone_released_names(tmp_path):
    """EXAONE 3.x's released config.json names (num_layers, layer_norm_epsilon, activation_function) and checkpoint
    names (transformer.h.N.attn.attention.q_proj, mlp.c_fc_0 ...) read as transformers renames them: every byte counted,
    and the folder runs in Model as HF's LlamaForCausalLM."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    st = pytest.importorskip("safetensors.torch")
    import glmbench
    hc = transformers.AutoConfig.for_model("exaone", **_B)
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc).eval()
    back = {v: k for k, v in ((a, b) for a, b in (
        ("transformer.wte.", "model.embed_tokens."), ("transformer.ln_f.", "model.norm."),
        (".attn.attention.out_proj.", ".self_attn.o_proj."), (".attn.attention.", ".self_attn."),
        (".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm."), (".mlp.c_fc_0.", ".mlp.gate_proj."),
        (".mlp.c_fc_1.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj.")))}
    sd = {}
    for k, v in m.state_dict().items():
        name = k.replace("model.layers.", "transformer.h.")
        for new, old in back.items():
            if new in name and not (new == ".self_attn." and "o_proj" in name):
                name = name.replace(new, old)
        sd[name] = v.contiguous()
    assert "transformer.h.0.attn.attention.out_proj.weight" in sd and "transformer.h.1.mlp.c_fc_0.weight" in sd
    d = tmp_path / "exaone"
    d.mkdir()
    st.save_file(sd, str(d / "model.safetensors"))
    cfg_json = {k: v for k, v in hc.to_dict().items() if k not in ("num_hidden_layers", "rms_norm_eps", "hidden_act")}
    cfg_json.update(num_layers=4, layer_norm_epsilon=1e-5, activation_function="silu",
                    architectures=["ExaoneForCausalLM"])
    (d / "config.json").write_text(json.dumps(cfg_json))
    c = configs.load(str(d))
    assert c.model_type == "exaone" and c.n_layers == 4 and c.rms_norm_eps == 1e-5
    fw = c.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.total_bytes == 4 * sum(p.numel() for p in m.parameters())
    from glmbench.models import checkpoint
    gm = checkpoint.load_model(str(d), weights="f32", kv="f32", max_context=16)
    prompt = [3, 17, 5, 99, 42]
    with torch.no_grad():
        want = m(torch.tensor([prompt])).logits[0].numpy()
    got = gm.prefill(np.array(prompt))
    assert np.max(np.abs(got - want)) < 1e-4 * np.max(np.abs(want))
    assert isinstance(glmbench.Model, type)


_SYNTH = {"exaone": dict(_B, model_type="exaone"), "ernie4_5": dict(_B, model_type="ernie4_5", head_dim=16)}


@pytest.mark.parametrize("mt", list(_SYNTH))
def test_exaone_ernie_written_file_reads_as_its_config(tmp_path, mt):
    p = str(tmp_path / f"{mt}.gguf")
    want = configs.from_hf(_SYNTH[mt], "synth")
    gguf_writer.write_zero_file(p, want, mt, gguf_writer.gqa_meta(want))
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {} and cfg.model_type == mt


def test_ernie_converted_file(tmp_path):
    """llama.cpp's converter (conversion/ernie.py Ernie4_5Model) on a tiny HF ERNIE 4.5: HF's config back, every
    byte a tensor of it; q / k rows as HF's (not permuted: llama.cpp's NORM rope is HF's interleaved pairs)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    hc = transformers.AutoConfig.for_model("ernie4_5", **{k: v for k, v in _SYNTH["ernie4_5"].items()
                                                          if k != "model_type"})
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc)
    f = lc.convert(lc.save_hf(m, hc, tmp_path / "hf"), tmp_path / "ernie.gguf", "f32")
    cfg = configs.load(f)
    assert gguf_writer.config_diff(cfg, configs.from_hf(hc.to_dict(), "hf")) == {}
    fw = cfg.file_weights
    assert fw.main_type == "F32" and fw.extra_bytes == fw.skipped_bytes == 0
    g = gguf_file.read(f)
    np.testing.assert_array_equal(np.asarray(g.tensor_data("blk.1.attn_k.weight")).reshape(32, 64),
                                  m.state_dict()["model.layers.1.self_attn.k_proj.weight"].numpy())
    # and Model runs the file: HF's logits
    from glmbench.models import checkpoint
    gm = checkpoint.load_model(f, kv="f32", max_context=16)
    prompt = [3, 17, 5, 99, 42]
    with torch.no_grad():
        want = m.eval()(torch.tensor([prompt])).logits[0].numpy()
    assert np.max(np.abs(gm.prefill(np.array(prompt)) - want)) < 1e-4 * np.max(np.abs(want))


# ---- ERNIE 4.5 MoE's interleaved MoE layers ----------------------------------------------------------------------
_ERNIE_MOE = dict(_B, num_hidden_layers=6, intermediate_size=128, moe_intermediate_size=32, moe_num_experts=4,
                  moe_k=2, moe_num_shared_experts=2, moe_layer_start_index=1)


@pytest.mark.parametrize("kw", [{}, dict(moe_layer_interval=2), dict(moe_layer_interval=2, moe_layer_end_index=3),
                                dict(moe_layer_interval=3, moe_layer_start_index=0), dict(moe_layer_end_index=4)])
def test_ernie_moe_layers_are_hfs(kw):
    """Ernie4_5_MoeDecoderLayer: experts where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <=
    moe_layer_end_index, a dense MLP of intermediate_size elsewhere: the same layers, tensors and count as HF's model
    (ERNIE 4.5 MoE is priced, not run: configs.PRICED_ONLY)."""
    transformers = pytest.importorskip("transformers")
    hc = transformers.AutoConfig.for_model("ernie4_5_moe", **{**_ERNIE_MOE, **kw})
    m, n = _meta_count(hc)
    cfg = configs.load(hc.to_dict())
    assert cfg.moe_layers == tuple(i for i, layer in enumerate(m.model.layers) if hasattr(layer.mlp, "experts"))
    assert cfg.total_params() == n
    dense = {k: tuple(p.shape) for k, p in m.named_parameters() if ".mlp.experts." not in k and ".mlp.gate." not in k}
    assert dense == {k: v for k, v in cfg.tensor_shapes().items() if k in dense}


@pytest.mark.parametrize("interval", [1, 2])
def test_ernie_moe_converted_with_an_interval(tmp_path, interval):
    """llama.cpp's converter (conversion/ernie.py Ernie4_5MoeModel) writes moe_layer_interval as
    interleave_moe_layer_step and the off-step layers' dense MLP; llama.cpp's loader (src/models/ernie4-5.cpp)
    requires experts on every layer past leading_dense_block_count, so an interval of 2 is a file it refuses:
    glmbench refuses it naming the key (it read the routers and priced HF's model). Interval 1 reads as HF's."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import llama_cpp_convert as lc
    if lc.source() is None:
        pytest.skip(lc.skip_reason())
    hc = transformers.AutoConfig.for_model("ernie4_5_moe", **{**_ERNIE_MOE, "num_hidden_layers": 4,
                                                              "moe_layer_interval": interval})
    torch.manual_seed(0)
    m = transformers.AutoModelForCausalLM.from_config(hc)
    f = lc.convert(lc.save_hf(m, hc, tmp_path / "hf"), tmp_path / "ernie.gguf", "f32")
    g = gguf_file.read(f)
    assert g.get("ernie4_5-moe.interleave_moe_layer_step") == interval
    if interval == 1:
        cfg = configs.load(f)
        assert gguf_writer.config_diff(cfg, configs.from_hf(hc.to_dict(), "hf")) == {}
        assert cfg.moe_layers == (1, 2, 3) and cfg.file_weights.extra_bytes == 0
        return
    assert "blk.2.ffn_up.weight" in g.tensors and "blk.2.ffn_gate_inp.weight" not in g.tensors
    with pytest.raises(gguf_file.GGUFError, match=r"'ernie4_5-moe\.interleave_moe_layer_step' = 2 .* its graph runs "
                                                  r"layer 2 as a dense MLP, which it never created"):
        configs.load(f)


def test_exaone_ernie_builtins_priced():
    # the cards' counts without embeddings (30.95B, 6.98B, 2.14B) and totals (32B, 7.8B, 2.4B; ERNIE-4.5-0.3B: 0.36B)
    want = {"exaone-3.5-32b": (32_003_200_000, 30_954_624_000, 64 * 8 * 256 * 2),
            "exaone-3.5-7.8b": (7_818_448_896, 6_979_588_096, 32 * 8 * 256 * 2),
            "exaone-3.5-2.4b": (2_405_327_360, 2_143_183_360, 30 * 8 * 160 * 2),
            "ernie-4.5-0.3b": (360_748_032, 254_841_856, 18 * 2 * 256 * 2)}
    for n, (total, body, kv) in want.items():
        c = configs.load(n)
        assert (c.total_params(), c.total_params() - c.embedding_params(), c.kv_bytes_per_token("f16")) == \
            (total, body, kv), n
        assert c.forward_unsupported() == [], n
        s = cm.Setup(c, "rtx-3090", weights="Q4_K_M")
        assert cm.decode(s, 100).tok_s > 0 and cm.prefill(s, 512).tok_s > 0
    # EXAONE 3.5 2.4B's 80-wide heads: no q8_0 cache (llama.cpp views each head, ggml_row_size asserts)
    with pytest.raises(ValueError, match="no whole number of its blocks; use f16"):
        cm.Setup("exaone-3.5-2.4b", "rtx-3090", kv="q8_0")
    assert configs.load("ernie-4.5-0.3b").rope_layout == "interleaved"
    assert configs.load("exaone-3.5-32b").rope_type == "llama3"


@pytest.mark.slow
def test_exaone_ernie_builtins_equal_hf_meta_models():
    transformers = pytest.importorskip("transformers")
    for n, mt in (("exaone-3.5-32b", "exaone"), ("exaone-3.5-7.8b", "exaone"), ("exaone-3.5-2.4b", "exaone"),
                  ("ernie-4.5-0.3b", "ernie4_5")):
        c = configs.load(n)
        hf = {k: v for k, v in c.hf.items() if not k.startswith("_") and k not in ("architectures", "model_type")}
        assert _meta_count(transformers.AutoConfig.for_model(mt, **hf))[1] == c.total_params(), n


_ROWS = {"exaone ?B Q4_K - Medium         |  18.01 GiB |    32.00 B": ("exaone-3.5-32b", "Q4_K_M"),
         "exaone 8B Q4_K - Medium         |   4.44 GiB |     7.82 B": ("exaone-3.5-7.8b", "Q4_K_M"),
         "exaone ?B Q8_0                  |   2.38 GiB |     2.41 B": ("exaone-3.5-2.4b", "q8_0"),
         "ernie4_5 0.3B Q8_0              | 366.47 MiB |   360.75 M": ("ernie-4.5-0.3b", "q8_0")}


def test_exaone_ernie_llama_bench_rows_name_the_builtins(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       50.10 ± 0.50")
    assert [im._arch_of(t) for t in ("exaone", "ernie4_5", "ernie4_5_moe")] == ["exaone", "ernie4_5", "ernie4_5-moe"]
    # the size labels alone: EXAONE 7.8B's "8B" (32 layers), ERNIE's "0.3B" (18 layers)
    assert im.model_candidates("exaone 8B Q4_K - Medium")[0] == ["exaone-3.5-7.8b"]
    assert im.model_candidates("ernie4_5 0.3B Q8_0")[0] == ["ernie-4.5-0.3b"]
    assert im.model_candidates("ernie4_5-moe 21B.A3B Q4_K - Medium")[0] == ["ernie-4.5-21b-a3b"]


@pytest.mark.parametrize("mt", ["ernie4_5", "ernie4_5_moe"])
def test_ernie_rope_layout_is_hfs(mt):
    """Both ERNIE 4.5 families rotate pairs (2i, 2i + 1) (their apply_rotary_pos_emb repeat_interleaves cos / sin):
    the config's rope, applied by the float64 reference, equals HF's own function on the same vectors."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    import importlib
    from glmbench.core import reference
    hf = importlib.import_module(f"transformers.models.{mt}.modeling_{mt}")
    kw = dict(moe_num_experts=4, moe_k=2, moe_intermediate_size=32) if mt == "ernie4_5_moe" else {}
    hc = transformers.AutoConfig.for_model(mt, **{**_B, **kw})
    cfg = configs.load(hc.to_dict())
    T, H, D = 5, hc.num_attention_heads, cfg.head_dim
    x = np.random.default_rng(0).standard_normal((T, H, D))
    pos = np.arange(T) * 7
    want = reference.rope(x, pos, **cfg.layer_rope(0))
    rot = hf.__dict__[[n for n in hf.__dict__ if n.endswith("RotaryEmbedding")][0]](hc)
    xt = torch.tensor(x, dtype=torch.float64).transpose(0, 1)[None]          # [1, H, T, D]
    cos, sin = rot(xt.float(), torch.tensor(pos)[None])
    got, _ = hf.apply_rotary_pos_emb(xt, xt, cos.double(), sin.double())
    got = got[0].transpose(0, 1).numpy()
    assert cfg.rope_layout == "interleaved"
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
