"""dots.llm1 (dots1: rednote-hilab's Dots1ForCausalLM, transformers 5.25's modeling_dots1): Qwen3's attention (per-head
q / k RMSNorm before rope, GQA) with DeepSeek-V3's MoE (sigmoid router with e_score_correction_bias, grouped top-k,
norm_topk_prob, routed_scaling_factor, shared experts) after first_k_dense_replace dense layers. Parameter counts
against HF's meta-device models, HF's config-class defaults, the fields refused, GGUF files laid out as llama.cpp's
converter writes them (conversion/dots1.py; written here with the gguf package), HF folders as transformers saves
them, the built-in dots.llm1.inst, llama-bench's rows for it and CudaModel's wiring on the CPU emulator. (Logits
against HF's tiny model: tests/test_model_hf.py; the files llama.cpp's converter makes: tests/test_converted_gguf.py.)"""
import os
import sys

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

# four layers: a dense one, then three MoE (8 experts in 2 groups of which 1 kept, top-2 renormalised, x 2.5) beside
# two shared experts' width
_B = dict(model_type="dots1", vocab_size=128, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
          num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=8,
          num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=1, n_group=2, topk_group=1,
          norm_topk_prob=True, routed_scaling_factor=2.5, rms_norm_eps=1e-5, max_position_embeddings=4096)


def _hc(**kw):
    transformers = pytest.importorskip("transformers")
    d = {k: v for k, v in {**_B, **kw}.items() if k != "model_type" and v is not None}
    return transformers.AutoConfig.for_model("dots1", **d)


# ---- configs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(attention_bias=True), dict(first_k_dense_replace=0, n_shared_experts=1),
                                dict(head_dim=None, num_key_value_heads=4), dict(sliding_window=8, max_window_layers=2),
                                dict(first_k_dense_replace=4)])
def test_parameters_equal_the_hf_model(kw):
    hc = _hc(**kw)
    m, n = hf_meta.meta_model(hc)
    # the routers' e_score_correction_bias: buffers in HF, tensors of the checkpoint (as DeepSeek-V3's)
    n += sum(b.numel() for k, b in m.named_buffers() if k.endswith("e_score_correction_bias"))
    cfg = configs.load(hc.to_dict())
    assert cfg.model_type == "dots1" and cfg.total_params() == n
    ours = cfg.tensor_shapes()
    assert sum(configs._numel(s) for s in ours.values()) == n
    hf = {k: tuple(p.shape) for k, p in m.named_parameters()}
    # every tensor but the experts by HF's own name and shape (HF's gate_up fused, ours stacked apart)
    assert {k: v for k, v in hf.items() if ".mlp.experts." not in k} == \
        {k: v for k, v in ours.items() if ".mlp.experts." not in k and not k.endswith("e_score_correction_bias")}
    fk = kw.get("first_k_dense_replace", 1)
    assert cfg.moe_layers == tuple(range(fk, 4)) and cfg.forward_unsupported() == []
    assert cfg.qk_norm and not cfg.qk_norm_all_heads and ours["model.layers.0.self_attn.q_norm.weight"] == (16,)
    bias = bool(kw.get("attention_bias"))
    assert cfg.attention_bias == cfg.attention_out_bias == bias
    assert ("model.layers.0.self_attn.o_proj.bias" in ours) == bias
    if fk < 4:
        assert (cfg.router_scoring, cfg.router_bias, cfg.topk_method, cfg.n_group, cfg.topk_group) == \
            ("sigmoid", True, "noaux_tc", 2, 1)
        assert cfg.shared_expert_intermediate_size == 32 * kw.get("n_shared_experts", 2)
        assert configs.route_groups(cfg) == dict(n_group=2, topk_group=1, group_score="top2_sum", norm_topk_prob=True)
    # HF's layer_types: sliding from max_window_layers on, where a window is set; none by default
    assert (cfg.windowed_layers, cfg.sliding_window) == (((2, 3), 8) if "max_window_layers" in kw else ((), None))
    s = cm.Setup(cfg, "rtx-3090", weights="Q4_K_M")
    assert cm.decode(s, 100).tok_s > 0 and cm.prefill(s, 64, 10).tok_s > 0


def test_defaults_are_the_hf_config_class_defaults():
    """A config.json stating only the sizes HF cannot default reads as HF's Dots1Config fills it in (32 KV heads,
    rms eps 1e-6, MLP 10944 / experts 1408 wide, no dense layer first, top-k not renormalised nor scaled, one group,
    untied, 2048 positions, the 4096 window on no layer: max_window_layers 62)."""
    transformers = pytest.importorskip("transformers")
    bare = dict(model_type="dots1", vocab_size=128, hidden_size=256, num_hidden_layers=2, num_attention_heads=32,
                n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1)
    c = configs.from_hf(bare)
    hf = configs.from_hf(transformers.Dots1Config(**{k: v for k, v in bare.items() if k != "model_type"}).to_dict())
    assert gguf_writer.config_diff(c, hf) == {}
    assert (c.n_kv_heads, c.head_dim, c.rms_norm_eps, c.intermediate_size, c.moe_intermediate_size) == \
        (32, 8, 1e-6, 10944, 1408)
    assert (c.moe_layers, c.norm_topk_prob, c.routed_scaling_factor, c.n_group, c.topk_group) == ((0, 1), False, 1.0, 1, 1)
    assert (c.tie_word_embeddings, c.max_position_embeddings, c.sliding_window, c.windowed_layers, c.rope_theta) == \
        (False, 2048, None, (), 10000.0)


def test_released_config_fields_read_and_errors():
    # the released config.json's fields HF's Dots1 does not read, at the values its code runs: accepted
    for extra in (dict(scoring_func="noaux_tc", topk_method="noaux_tc", moe_layer_freq=1, use_sliding_window=False,
                       sliding_window=None), dict(scoring_func="sigmoid"), dict(num_key_value_heads=None)):
        c = configs.from_hf({**_B, **extra})
        assert c.router_scoring == "sigmoid" and c.moe_layers == (1, 2, 3) and c.windowed_layers == ()
    assert configs.from_hf({**_B, "num_key_value_heads": None}).n_kv_heads == 4    # (HF: None -> the heads)
    # transformers' attribute_map name for the experts' count
    alias = {k: v for k, v in _B.items() if k != "n_routed_experts"}
    assert configs.from_hf({**alias, "num_local_experts": 8}).n_routed_experts == 8
    for bad, match in (({"n_routed_experts": None}, r"`n_routed_experts` must be an integer"),
                       ({"num_experts_per_tok": None}, r"`num_experts_per_tok` must be an integer"),
                       ({"n_shared_experts": None}, r"`n_shared_experts` must be an integer"),
                       ({"scoring_func": "softmax"}, r"`scoring_func` = 'softmax': dots1 routes with sigmoid"),
                       ({"topk_method": "greedy"}, r"`topk_method` = 'greedy': dots1 routes with 'noaux_tc'"),
                       ({"moe_layer_freq": 2}, r"`moe_layer_freq` = 2"),
                       ({"partial_rotary_factor": 0.5}, r"`partial_rotary_factor` = 0.5: HF's Dots1 rotates"),
                       ({"first_k_dense_replace": 5}, r"`first_k_dense_replace` must be in \[0, 4\]"),
                       ({"first_k_dense_replace": None}, r"`first_k_dense_replace` must be an integer"),
                       ({"topk_group": 3}, r"`topk_group`=3 is larger than `n_group`=2"),
                       ({"n_group": 3}, r"`n_group`=3 does not divide the 8 routed experts"),
                       ({"num_experts_per_tok": 9}, r"`num_experts_per_tok`=9 is larger than the 8"),
                       ({"sliding_window": 8, "layer_types": ["full_attention"] * 3}, r"`layer_types` must list"),
                       ({"sliding_window": 8, "max_window_layers": -1}, r"`max_window_layers` must be >= 0"),
                       ({"num_attention_heads": 3}, r"not a multiple of `num_key_value_heads`")):
        with pytest.raises(ValueError, match=match):
            configs.from_hf({**_B, **bad})
    missing = {k: v for k, v in _B.items() if k != "num_experts_per_tok"}
    with pytest.raises(ValueError, match=r"`num_experts_per_tok` is missing \(model_type 'dots1'\)"):
        configs.from_hf(missing)


# ---- GGUF --------------------------------------------------------------------------------------------------------
# conversion/dots1.py Dots1Model (Qwen2MoeModel's keys, conversion/base.py's set_gguf_parameters): the dense MLP's width
# as feed_forward_length, the experts' as expert_feed_forward_length; head_dim stated -> key / value lengths
_MOE_KEYS = {"feed_forward_length": 96, "expert_count": 8, "expert_used_count": 2, "expert_feed_forward_length": 32,
             "expert_shared_count": 2, "leading_dense_block_count": 1, "expert_weights_scale": 2.5,
             "expert_weights_norm": True, "expert_group_count": 2, "expert_group_used_count": 1,
             "expert_gating_func": 2, "attention.key_length": 16, "attention.value_length": 16}


def _write(path, drop=(), hc=None, **extra):
    return gguf_writer.write_synth(path, hc or _B, "dots1", _MOE_KEYS, drop, extra)


def test_written_file_reads_as_its_config(tmp_path):
    p = str(tmp_path / "dots1.gguf")
    want = _write(p)
    _, names = gguf_writer.read_back(p, want)
    assert {"blk.0.ffn_gate.weight", "blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "blk.1.ffn_gate_inp.weight",
            "blk.1.exp_probs_b.bias", "blk.1.ffn_up_exps.weight", "blk.1.ffn_gate_shexp.weight",
            "blk.3.ffn_down_shexp.weight"} <= names
    assert "blk.0.ffn_gate_inp.weight" not in names
    # llama.cpp's rules where the optional keys are missing: no dense layer first, unscaled (its 0), not renormalised,
    # one group
    p2 = str(tmp_path / "bare.gguf")
    _write(p2, hc={**_B, "first_k_dense_replace": 0, "routed_scaling_factor": 1.0, "norm_topk_prob": False,
                   "n_group": 1, "topk_group": 1},
           drop=("leading_dense_block_count", "expert_weights_scale", "expert_weights_norm", "expert_group_count",
                 "expert_group_used_count"))
    c2 = gguf_writer.load_stated(p2)
    assert (c2.moe_layers, c2.routed_scaling_factor, c2.norm_topk_prob, c2.n_group) == ((0, 1, 2, 3), 1.0, False, 1)


def test_file_gating_window_and_missing_keys(tmp_path):
    # no expert_gating_func (the converter writes it only for a config.json stating scoring_func "sigmoid"):
    # HF's sigmoid router, with a notice saying llama.cpp's dots1 needs the key
    p = str(tmp_path / "nogate.gguf")
    want = _write(p, drop=("expert_gating_func",))
    with pytest.warns(gguf_file.GGUFNotice, match=r"no metadata 'dots1.expert_gating_func'; assumed sigmoid"):
        c = configs.load(p)
    assert gguf_writer.config_diff(c, want) == {} and c.router_scoring == "sigmoid"
    assert any("expert_gating_func" in t for t in c.hf["gguf_assumed"])
    p = str(tmp_path / "softmax.gguf")
    _write(p, **{"expert_gating_func": 1})
    with pytest.raises(gguf_file.GGUFError, match=r"'dots1.expert_gating_func' = 1 is not 2 \(sigmoid\)"):
        configs.load(p)
    gguf_writer.check_required_keys(tmp_path, _write, "dots1", ("expert_shared_count", "expert_count",
                                                              "expert_used_count", "expert_feed_forward_length"))
    # a window llama.cpp's dots1 does not read: full attention, as llama.cpp runs it
    p = str(tmp_path / "window.gguf")
    _write(p, **{"attention.sliding_window": 8})
    with pytest.warns(gguf_file.GGUFNotice, match="full attention"):
        c = configs.load(p)
    assert c.windowed_layers == () and c.sliding_window is None


# ---- HF folders as transformers saves them -----------------------------------------------------------------------
@pytest.mark.slow
def test_hf_folder_as_saved_counts_every_byte_and_runs_with_hf_logits(tmp_path):
    """transformers 5.25 saves the experts one by one (mlp.experts.N.gate_proj.weight: its qwen2_moe conversion
    reversed) and the routers' correction biases: every byte of the folder is a tensor of the config, and
    glmbench.Model runs the folder (checkpoint.load_model) with HF's logits, a prefill and decode steps."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from glmbench.models import checkpoint
    hc = _hc(attention_bias=True)
    m = hf_oracle.random_model(hc)
    d = str(tmp_path / "hf")
    m.save_pretrained(d)
    names = set(checkpoint.read_safetensors(os.path.join(d, "model.safetensors")))
    assert {"model.layers.1.mlp.experts.7.down_proj.weight", "model.layers.1.mlp.gate.e_score_correction_bias",
            "model.layers.1.mlp.shared_experts.up_proj.weight", "model.layers.0.self_attn.o_proj.bias"} <= names
    cfg = configs.load(d)
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and fw.main_type == "F32"
    assert fw.total_bytes == 4 * cfg.total_params()
    gm = checkpoint.load_model(d, kv="f32", max_context=16)
    prompt, steps = [3, 17, 5, 99, 42, 7], [11, 64, 2]
    errs = hf_oracle.logit_errors(m, gm, prompt, steps)
    assert max(errs) < 1e-4, errs


# ---- the built-in ------------------------------------------------------------------------------------------------
def test_builtin_priced():
    c = configs.load("dots.llm1.inst")
    # the card's 142B total / 14B activated (llama.cpp: 62 layers -> "142B"); HF's meta model: tests/test_configs.py
    assert (c.total_params(), c.active_params()) == (142_774_381_696, 14_016_588_928)
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim) == ("dots1", 62, 4096, 32, 32, 128)
    assert (c.n_routed_experts, c.n_experts_per_tok, c.moe_intermediate_size, c.shared_expert_intermediate_size) == \
        (128, 6, 1408, 2816)
    assert c.moe_layers == tuple(range(1, 62)) and c.intermediate_size == 10944 and c.qk_norm
    assert (c.router_scoring, c.router_bias, c.norm_topk_prob, c.routed_scaling_factor) == ("sigmoid", True, True, 2.5)
    assert c.windowed_layers == () and c.sliding_window is None and c.forward_unsupported() == []
    assert c.kv_bytes_per_token("f16") == 62 * 32 * (128 + 128) * 2
    st = cm.Setup(c, "h200-sxm", weights="Q4_K_M")
    d = cm.decode(st, 100)
    assert d.tok_s > 0 and cm.prefill(st, 512).tok_s > 0 and cm.memory(st, 4096).fits
    # decode reads the attention, the dense layer, the shared experts and the experts a token picks, not all of them
    assert sum(op.bytes for op in d.ops) < 0.15 * c.weight_bytes("Q4_K_M")
    # 88 GiB of Q4_K_M weights: not on one 24 GB card
    assert not cm.memory(cm.Setup(c, "rtx-3090", weights="Q4_K_M"), 4096).fits


# ---- llama-bench's rows (src/models/dots1.cpp: 62 layers -> LLM_TYPE_142B) -----------------------------------------
# (the sizes are glmbench's own weight bytes of the built-in in those formats, not a recorded run's)
_ROWS = {"dots1 142B Q4_K - Medium        |  87.99 GiB |   142.77 B": ("dots.llm1.inst", "Q4_K_M"),
         "dots1 142B Q8_0                 | 141.37 GiB |   142.77 B": ("dots.llm1.inst", "q8_0")}


def test_llama_bench_rows_name_the_builtin(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       30.10 ± 0.50")
    assert im._arch_of("dots1") == "dots1"
    assert im._gguf_params(configs.load("dots.llm1.inst")) == 142_774_381_696
    # the size label alone (no params column): llama.cpp's 142B within the label's tolerance
    assert im.model_candidates("dots1 142B Q4_K - Medium")[0] == ["dots.llm1.inst"]
    # the HF id and the file names people give it
    assert im.names_in("rednote-hilab/dots.llm1.inst") == ["dots.llm1.inst"]
    assert im.names_in("dots.llm1.inst-UD-Q4_K_XL-00001-of-00002.gguf") == ["dots.llm1.inst"]
    assert im.identify_model("/m/dots.llm1.inst-Q4_K_M.gguf", "dots1 142B Q4_K - Medium")[0] == "dots.llm1.inst"
    # another architecture's row of that size is not it
    assert "dots.llm1.inst" not in im.model_candidates("qwen3moe 142B Q4_K - Medium", 142.77e9)[0]


# ---- CudaModel -----------------------------------------------------------------------------------------------------
def test_cuda_model_refuses_a_windowed_dots1_before_touching_a_gpu():
    """glmbench.cuda.CudaModel's attention is full causal: a dots1 config with sliding layers (max_window_layers below
    the depth) is refused before anything reaches a GPU (none here); glmbench.Model runs it on the CPU."""
    from glmbench import cuda
    with pytest.raises(ValueError, match=r"CudaModel: .*dots1.* which the CUDA path does not implement"):
        cuda.CudaModel(configs.from_hf({**_B, "sliding_window": 8, "max_window_layers": 2}))


def test_emulated_cuda_model_runs_dots1_as_the_c_core_model():
    """dots1's layer is one CudaModel has (per-head q / k norms before rope, the grouped sigmoid MoE with the correction
    bias and shared experts): its wiring on the CPU emulator of glmbench.cuda._cuda (tests/cuda_emulator.py: each op
    glmbench.core.reference on bf16 bits, NOT the CUDA kernels) against glmbench.Model on the same weights, to bf16
    accuracy."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cuda_emulator
    from glmbench import cuda
    from glmbench.models.model import Model
    restore = cuda_emulator.install()
    try:
        cfg = configs.from_hf({**_B, "attention_bias": True}, "tiny-dots1")
        m = cuda.CudaModel(cfg, max_context=32, seed=3)
        m.pin_routing()
        cpu = Model(cfg, state_dict=m.host_weights(), weights="bf16", kv="f32", max_context=32)
        toks = [5, 17, 3, 88, 41]
        rel = lambda a, b: float(np.max(np.abs(np.asarray(a, np.float64) - b)) / np.max(np.abs(b)))  # noqa: E731
        assert rel(m.prefill(toks).to_numpy(), cpu.prefill(np.array(toks))) < 5e-2
        assert rel(m.decode(7).to_numpy()[0], cpu.decode(7)) < 5e-2
    finally:
        cuda.set_poison(False)
        restore()
