"""Arcee AFM (arcee): Llama's layers with an ungated relu2 MLP; Apertus (apertus): Llama's layers with per-head q / k
norms and an ungated MLP whose xIELU activation holds learned parameters per layer (ops.xielu, checked here against
its float64 reference and HF's own XIELUActivation). GGUF files laid out as llama.cpp's converter writes them
(conversion/llama.py ArceeModel: LlamaModel's keys, permuted q / k rows, the rope.scaling keys of YaRN; ApertusModel:
q / k as HF's, the xIELU parameters as the xielu.* metadata arrays), written here with the gguf package so the
metadata reading is tested without llama.cpp's sources (its own converter's files: tests/test_converted_gguf.py),
llama-bench's names for them, what the cost model makes of the built-ins, the HF folders transformers saves, and the
configs' errors. The forward pass against HF's tiny models: tests/test_model_hf.py."""
import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")

import gguf_writer  # noqa: E402
import hf_oracle  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

import glmbench  # noqa: E402
from glmbench.core import ops, reference as ref  # noqa: E402
from glmbench.models import checkpoint, configs, gguf_file  # noqa: E402
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
    # xielu there builds Apertus's activation (ArceeMLP's ACT2FN["xielu"]): its two learned scalars per layer, run
    x = configs.from_hf(dict(_ARCEE, hidden_act="xielu"))
    assert x.xielu and x.forward_unsupported() == [] and x.total_params() == c.total_params() + 4 * 2
    assert "model.layers.3.mlp.act_fn.eps" in x.tensor_shapes()


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
    # llama.cpp's arcee loader (src/models/arcee.cpp) creates no MLP bias: a file holding HF's mlp_bias tensors has
    # tensors it does not create, which llama_model_loader::done_getting_tensors refuses ("wrong number of
    # tensors"); glmbench read and priced it
    p = str(tmp_path / "b.gguf")
    _write_arcee(p, dict(_ARCEE, mlp_bias=True))
    with pytest.raises(gguf_file.GGUFError, match=r"tensor 'blk\.0\.ffn_(up|down)\.bias' is not one llama\.cpp's "
                                                  r"arcee loader creates; .*wrong number of tensors"):
        configs.load(p)


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
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model("arcee")
    _, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    errs = hf_oracle.logit_errors(hf, m, [3, 17, 42, 5, 9, 1], [7, 11])
    assert max(errs) < 1e-4, errs


# ==== Apertus ========================================================================================================
_APERTUS = dict(_BASE, model_type="apertus", rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
_XIELU_HF = dict(alpha_p=np.log(np.expm1(0.8)), alpha_n=np.log(np.expm1(0.3)), beta=0.5, eps=-1e-6)   # HF's init


def test_xielu_matches_its_reference_and_hf():
    """ops.xielu (NumPy float32) against reference.xielu (float64) and HF's XIELUActivation (its Python path, float32),
    from the parameters as HF stores them (alpha_p / alpha_n before their softplus), on both branches, across x = 0
    and the eps clamp, for HF's initial values and others."""
    torch = pytest.importorskip("torch")
    from transformers.activations import XIELUActivation
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4000) * 3, [0.0, -1e-7, 1e-7, -1e-6, -2e-6, -40.0, 40.0]]).astype(np.float32)
    for ap, an in ((None, None), (1.3, -0.4), (-2.0, 2.5)):
        act = XIELUActivation(dtype=torch.float32)
        with torch.no_grad():
            if ap is not None:
                act.alpha_p.fill_(ap)
                act.alpha_n.fill_(an)
        params = [t.detach().numpy() for t in (act.alpha_p, act.alpha_n, act.beta, act.eps)]
        assert params[0].shape == (1,) and params[2].shape == ()     # (how HF holds them: mlp.act_fn.*)
        want = act(torch.from_numpy(x)).detach().numpy()
        got = ops.xielu(x, *params)
        r = ref.xielu(x, *params)
        assert got.dtype == np.float32 and got.shape == x.shape
        scale = np.abs(r).max()
        np.testing.assert_allclose(got, r, rtol=1e-5, atol=1e-6 * scale)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale)
        # the formula by hand at a few points: a_p x^2 + beta x above 0, (expm1(min(x, eps)) - x) a_n + beta x below
        a_p = np.log1p(np.exp(float(params[0][0])))
        a_n = 0.5 + np.log1p(np.exp(float(params[1][0])))
        assert np.isclose(ref.xielu(np.array([2.0]), *params)[0], 4 * a_p + 1.0)
        assert np.isclose(ref.xielu(np.array([-3.0]), *params)[0], (np.expm1(-3.0) + 3.0) * a_n - 1.5)
    # the reference's own MLP: down(xielu(up x))
    up, down = rng.standard_normal((6, 4)), rng.standard_normal((4, 6))
    xm = rng.standard_normal((3, 4))
    np.testing.assert_allclose(ref.xielu_mlp(xm, up, down, *_XIELU_HF.values()),
                               ref.xielu(xm @ up.T, *_XIELU_HF.values()) @ down.T)


def test_xielu_bad_parameters_are_named():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"`alpha_p` must be one number"):
        ops.xielu(x, np.zeros(2), 0.0, 0.5, -1e-6)
    with pytest.raises(ValueError, match=r"`eps` must be finite"):
        ops.xielu(x, 0.0, 0.0, 0.5, float("nan"))
    with pytest.raises(TypeError, match=r"`beta` must be a number"):
        ops.xielu(x, 0.0, 0.0, "half", -1e-6)
    with pytest.raises(TypeError, match=r"`x` must be a numpy.ndarray"):
        ops.xielu([1.0], 0.0, 0.0, 0.5, -1e-6)
    # bfloat16 bits (a bf16 checkpoint's parameters as stored) read as their values
    bits = np.array([0.5], np.float32).view(np.uint32) >> 16
    np.testing.assert_allclose(ops.xielu(np.ones(1, np.float32), 0.0, 0.0, bits.astype(np.uint16), -1e-6),
                               ops.xielu(np.ones(1, np.float32), 0.0, 0.0, 0.5, -1e-6))


def test_apertus_config():
    c = configs.from_hf(_APERTUS)
    assert not c.mlp_gated and c.xielu and c.qk_norm and not c.qk_norm_all_heads and c.forward_unsupported() == []
    shapes = c.tensor_shapes()
    p = "model.layers.0."
    # HF's names: attention_layernorm / feedforward_layernorm, per-head q / k norms, the xIELU's four tensors
    assert shapes[p + "attention_layernorm.weight"] == shapes[p + "feedforward_layernorm.weight"] == (64,)
    assert p + "input_layernorm.weight" not in shapes and p + "mlp.gate_proj.weight" not in shapes
    assert shapes[p + "self_attn.q_norm.weight"] == shapes[p + "self_attn.k_norm.weight"] == (16,)
    assert (shapes[p + "mlp.act_fn.alpha_p"], shapes[p + "mlp.act_fn.alpha_n"]) == ((1,), (1,))
    assert (shapes[p + "mlp.act_fn.beta"], shapes[p + "mlp.act_fn.eps"]) == ((), ())
    # parameters: the two learned scalars per layer counted, the two buffers not (as HF's model.parameters())
    assert c.total_params() == 2 * 128 * 64 + 64 + 4 * (64 * 192 + 2 * 16 + 2 * 64 * 96 + 2 * 64 + 2)
    assert sum(configs._numel(s) for s in shapes.values()) == c.total_params() + 4 * 2
    # ApertusConfig's defaults: xielu, KV heads = heads, and without any rope field llama3 by base 12e6 -- a bare
    # rope_theta changes nothing there (transformers 5.25's ApertusConfig ignores it), a v4 rope_scaling keeps its own
    d = configs.from_hf({k: v for k, v in _APERTUS.items() if k not in ("num_key_value_heads", "rope_parameters")})
    assert (d.hidden_act, d.n_kv_heads, d.rope_type, d.rope_theta) == ("xielu", 4, "llama3", 12e6)
    assert d.rope_scaling["factor"] == 8.0 and d.rope_scaling["original_max_position_embeddings"] == 8192
    bare = {k: v for k, v in _APERTUS.items() if k != "rope_parameters"}
    assert configs.from_hf({**bare, "rope_theta": 5e5}).rope_theta == 12e6
    v4 = configs.from_hf({**bare, "rope_theta": 5e5, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    assert (v4.rope_type, v4.rope_theta) == ("linear", 5e5)
    # relu2 in Apertus's MLP runs (no xIELU tensors); silu there is refused by the forward pass, priced
    r = configs.from_hf(dict(_APERTUS, hidden_act="relu2"))
    assert not r.xielu and r.forward_unsupported() == [] and "model.layers.0.mlp.act_fn.beta" not in r.tensor_shapes()
    assert r.total_params() == c.total_params() - 4 * 2
    assert configs.from_hf(dict(_APERTUS, hidden_act="silu")).forward_unsupported()
    # ApertusMLP has no bias whatever mlp_bias says; attention_bias biases q / k / v / o
    assert configs.from_hf(dict(_APERTUS, mlp_bias=True)).total_params() == c.total_params()
    b = configs.from_hf(dict(_APERTUS, attention_bias=True))
    assert b.total_params() == c.total_params() + 4 * (64 + 32 + 32 + 64)


def test_apertus_config_defaults_match_hfs():
    """The rope ApertusConfig builds where a config states none (or only rope_theta) is the one read here."""
    transformers = pytest.importorskip("transformers")
    for extra in ({}, {"rope_theta": 5e5}):
        hc = transformers.ApertusConfig(**{k: v for k, v in _APERTUS.items() if k not in ("model_type", "rope_parameters")},
                                        **extra)
        ours = configs.from_hf({k: v for k, v in _APERTUS.items() if k != "rope_parameters"} | extra)
        rp = hc.rope_parameters
        assert (ours.rope_type, ours.rope_theta) == (rp["rope_type"], rp["rope_theta"])
        assert all(ours.rope_scaling[k] == rp[k] for k in ("factor", "original_max_position_embeddings",
                                                            "low_freq_factor", "high_freq_factor"))


def test_apertus_bad_configs_are_named():
    with pytest.raises(ValueError, match=r"`hidden_act` must be a string"):
        configs.from_hf(dict(_APERTUS, hidden_act=["xielu"]))
    with pytest.raises(ValueError, match=r"`hidden_size`"):
        configs.from_hf({k: v for k, v in _APERTUS.items() if k != "hidden_size"})
    with pytest.raises(ValueError, match=r"`attention_bias` must be true or false"):
        configs.from_hf(dict(_APERTUS, attention_bias=1))
    with pytest.raises(ValueError, match=r"`rope_theta`"):
        configs.from_hf(dict(_APERTUS, rope_parameters={"rope_type": "default", "rope_theta": -1.0}))


def test_apertus_runs_op_by_op_with_its_xielu_and_cuda_refuses_it():
    """Every layer runs forward_py (the ungated MLP has no C layer); a random model's xIELU takes HF's initial values;
    a layer's own xIELU parameters are the ones it applies; CudaModel refuses the config before touching a GPU."""
    cfg = configs.from_hf(dict(_APERTUS, vocab_size=64))
    m = glmbench.Model(cfg, weights="f32", max_context=16)
    assert [layer.runs_in_c(1) for layer in m.layers] == [False] * 4
    w = m.layers[0].w
    assert float(w["mlp.act_fn.alpha_p"][0]) == pytest.approx(np.log(np.expm1(0.8)))
    assert float(w["mlp.act_fn.beta"]) == 0.5 and w["mlp.act_fn.eps"].shape == ()
    assert "input_layernorm.weight" in w and "attention_layernorm.weight" not in w   # (HF's norm names, read as Llama's)
    a = m.prefill(np.arange(6))
    assert np.all(np.isfinite(a))
    h = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    want = ref.xielu_mlp(h, w["mlp.up_proj.weight"], w["mlp.down_proj.weight"], *_XIELU_HF.values())
    np.testing.assert_allclose(m.layers[0]._dense_mlp(h), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    w["mlp.act_fn.alpha_n"] = np.array([2.0], np.float32)
    assert not np.allclose(m.layers[0]._dense_mlp(h), want, rtol=1e-3)
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"an ungated MLP"):
        cuda.CudaModel(cfg)


# ---- GGUF ------------------------------------------------------------------------------------------------------------
def _write_apertus(path, hc, xielu=None, drop=(), rope_freqs=None):
    """A GGUF of HF config `hc` as conversion/llama.py ApertusModel writes one: LlamaModel's keys, every tensor but the
    xIELU's (zeros: matrices F16, 1-D F32), the xIELU parameters as the xielu.* arrays (`xielu`: {name: values} to
    write instead of HF's initial values; keys in `drop` left out), a rope_freqs tensor where given."""
    cfg = configs.from_hf(hc, "synth")
    L = cfg.n_layers
    w = gguf.GGUFWriter(path, "apertus")
    gguf_writer.add_metadata(w, "apertus", gguf_writer.gqa_meta(cfg))
    vals = {k: [float(v)] * L for k, v in _XIELU_HF.items()}
    vals.update(xielu or {})
    for name, key in gguf_file.XIELU_KEYS.items():
        if name not in drop:
            w.add_array(key, vals[name]) if isinstance(vals[name], list) else w.add_float32(key, vals[name])
    for hf, shape in cfg.tensor_shapes().items():
        if ".mlp.act_fn." in hf:
            continue
        name = gguf_file.gguf_name(hf, "apertus", L)
        assert name is not None, hf
        w.add_tensor(name, np.zeros(shape, np.float16 if len(shape) >= 2 else np.float32))
    if rope_freqs is not None:
        w.add_tensor("rope_freqs.weight", np.asarray(rope_freqs, np.float32))
    gguf_writer.finish(w)
    return cfg


def test_apertus_written_file_reads_as_its_config_and_its_xielu(tmp_path):
    p = str(tmp_path / "apertus.gguf")
    want = _write_apertus(p, _APERTUS, xielu={"alpha_p": [0.1, 0.2, 0.3, 0.4]})
    cfg = gguf_writer.check_reads_as(p, want)
    assert gguf_writer.config_diff(cfg, want) == {}
    assert cfg.xielu and cfg.rope_type == "default" and cfg.rope_theta == 10000.0   # (not ApertusConfig's llama3)
    names = {n for n, _, _ in cfg.file_weights.tensors}
    assert "model.layers.0.attention_layernorm.weight" in names and "model.layers.0.mlp.act_fn.alpha_p" not in names
    # the xIELU parameters, metadata in the file, are the state dict's tensors in HF's shapes
    _, sd = checkpoint.state_dict(p)
    assert [float(sd[f"model.layers.{i}.mlp.act_fn.alpha_p"][0]) for i in range(4)] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert sd["model.layers.3.mlp.act_fn.beta"].shape == () and float(sd["model.layers.3.mlp.act_fn.beta"]) == 0.5
    # one number for every layer (llama.cpp's get_key_or_arr)
    p1 = str(tmp_path / "one.gguf")
    _write_apertus(p1, _APERTUS, xielu={"eps": -2e-6})
    _, sd = checkpoint.state_dict(p1)
    assert [float(sd[f"model.layers.{i}.mlp.act_fn.eps"]) for i in range(4)] == pytest.approx([-2e-6] * 4)
    # llama3 rope as the converter writes it: the rope_freqs tensor
    p2 = str(tmp_path / "l3.gguf")
    _write_apertus(p2, _APERTUS, rope_freqs=[1.0] * 4 + [8.0] * 4)
    c2 = gguf_writer.load_stated(p2)
    assert c2.rope_type == "freq_factors" and c2.file_weights.extra_bytes == 8 * 4


@pytest.mark.parametrize("xielu,drop,match", [
    (None, ("beta",), r"metadata 'xielu.beta' is missing"),
    ({"alpha_n": [0.1, 0.2]}, (), r"metadata 'xielu.alpha_n' has 2 values; 'apertus.block_count' = 4"),
    ({"alpha_p": [0.1, float("nan"), 0.1, 0.1]}, (), r"metadata 'xielu.alpha_p' must hold finite numbers"),
])
def test_apertus_file_xielu_errors_name_the_key(tmp_path, xielu, drop, match):
    p = str(tmp_path / "bad.gguf")
    _write_apertus(p, _APERTUS, xielu=xielu, drop=drop)
    with pytest.raises(gguf_file.GGUFError, match=match) as e:
        configs.load(p)
    assert p in str(e.value)


# ---- llama-bench's names (src/models/apertus.cpp: 32 layers -> "8B", other depths "?B") -----------------------------
def test_apertus_llama_bench_rows_name_the_builtins(tmp_path):
    rows = {"apertus 8B Q4_K - Medium       |   4.71 GiB |     8.05 B": ("apertus-8b", "Q4_K_M"),
            "apertus ?B Q4_K - Medium       |  39.92 GiB |    70.60 B": ("apertus-70b", "Q4_K_M")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |       30.10 ± 0.50")
    assert im._arch_of("apertus") == "apertus"
    assert im.identify_model("/m/model.gguf", "apertus 8B Q4_K - Medium")[0] == "apertus-8b"
    # 70B's rows have no size label to go by: the params column, or nothing
    assert im.model_candidates("apertus ?B Q4_K - Medium")[0] == []
    assert im.model_candidates("apertus ?B Q8_0", 70.6e9)[0] == ["apertus-70b"]


# ---- the built-ins priced ------------------------------------------------------------------------------------------
def test_apertus_builtins_priced():
    e, s = configs.load("apertus-8b"), configs.load("apertus-70b")
    for c, L, total in ((e, 32, 8_053_338_176), (s, 80, 70_599_864_480)):
        assert c.model_type == "apertus" and c.xielu and c.qk_norm and c.rope_type == "llama3" and c.n_layers == L
        assert c.total_params() == total and c.kv_bytes_per_token("f16") == L * 8 * 256 * 2
        assert c.forward_unsupported() == []
        st = cm.Setup(c, "h200-sxm", weights="Q4_K_M")
        d = cm.decode(st, 100)
        assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0
        assert 0.9 * c.weight_bytes("Q4_K_M") < sum(op.bytes for op in d.ops) < c.weight_bytes("Q4_K_M")
    # the 70B's Q4_K_M fits one 80 GB card with room for a long context; the 8B's decode is the faster
    st = cm.Setup(s, "h100-sxm", weights="Q4_K_M")
    assert cm.memory(st, 32768).fits
    assert cm.decode(cm.Setup(e, "h100-sxm", weights="Q4_K_M"), 100).tok_s > 5 * cm.decode(st, 100).tok_s


@pytest.mark.slow
def test_apertus_hf_folder_as_saved_runs_and_is_counted(tmp_path):
    """A folder transformers 5 saves (its xIELU buffers beta / eps too) read by checkpoint.load_model: every stored
    byte on a tensor of the config, logits as HF's."""
    pytest.importorskip("torch")
    from test_model_hf import tiny_hf_model
    _, hf = tiny_hf_model("apertus")
    fw, m = hf_oracle.saved_and_loaded(hf, tmp_path)
    assert "model.layers.1.mlp.act_fn.eps" in fw.bytes_of()
    errs = hf_oracle.logit_errors(hf, m, [3, 17, 42, 5, 9, 1], [7, 11])
    assert max(errs) < 1e-4, errs
