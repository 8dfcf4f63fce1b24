"""Gemma 4 (gemma4_text; the gemma4 multimodal wrapper's text_config) read and priced: the global layers' own
head dim and KV heads (k = v where attention_k_eq_v), the kv-shared layers (no k / v projection, no cache of
their own), per-layer embeddings (PLE), the double-wide MLP and the MoE beside the dense MLP. Parameter counts
equal HF transformers' Gemma4ForCausalLM built on the meta device; cache bytes by hand."""
import json
import warnings

import pytest

from glmbench.models import configs
from glmbench.predict import costmodel as cm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Gemma4TextConfig"):
    pytest.skip("transformers without Gemma 4", allow_module_level=True)

BUILTINS = ["gemma-4-e2b", "gemma-4-e4b", "gemma-4-26b-a4b", "gemma-4-31b"]


def _hf_count(hfcfg) -> int:
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(p.numel() for p in transformers.Gemma4ForCausalLM(hfcfg).parameters())


def _builtin_hf(name):
    d = json.load(open(configs.builtin_path(name)))
    return transformers.Gemma4TextConfig(**{k: v for k, v in d.items()
                                            if not k.startswith("_") and k not in ("model_type", "architectures")})


TINY = {
    # E2B-like: one KV head, PLE, kv-shared layers, double-wide MLP on them, 4 sliding : 1 full
    "ple-shared": dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=10, num_attention_heads=4,
                       num_key_value_heads=1, head_dim=8, global_head_dim=16, sliding_window=6,
                       hidden_size_per_layer_input=4, vocab_size_per_layer_input=96, num_kv_shared_layers=4,
                       use_double_wide_mlp=True,
                       layer_types=["sliding_attention"] * 4 + ["full_attention"] + ["sliding_attention"] * 4
                       + ["full_attention"]),
    # 26B-A4B-like: k = v global layers with their own KV heads, MoE beside the dense MLP, no PLE
    "moe-keqv": dict(vocab_size=96, hidden_size=32, intermediate_size=24, num_hidden_layers=6, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1,
                     attention_k_eq_v=True, sliding_window=6, hidden_size_per_layer_input=0, enable_moe_block=True,
                     num_experts=8, top_k_experts=2, moe_intermediate_size=12),
}


@pytest.mark.parametrize("case", list(TINY))
def test_tiny_counts_equal_hf_and_saved_config_rereads(case):
    hc = transformers.Gemma4TextConfig(**TINY[case])
    cfg = configs.from_hf(hc.to_dict(), case)        # (HF's saved form: per_layer_config, not global_head_dim)
    assert cfg.total_params() == _hf_count(hc)
    again = configs.from_hf({**TINY[case], "model_type": "gemma4_text"}, case)
    assert again.cost_shape() == cfg.cost_shape()
    # the multimodal wrapper's text_config reads the same
    wrapped = configs.from_hf({"model_type": "gemma4", "text_config": {**TINY[case], "model_type": "gemma4_text"}})
    assert wrapped.cost_shape() == cfg.cost_shape()


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_counts_equal_hf(name):
    assert configs.load(name).total_params() == _hf_count(_builtin_hf(name))


@pytest.mark.parametrize("name,total,active,layers,kv_layers", [
    # the model cards' sizes (26B-A4B: 25.2B total, 3.8B active; 31B: 30.7B; E2B: 2.3B "effective", i.e.
    # without the per-layer table) and llama.cpp's layer counts (src/models/gemma4.cpp: 35 -> E2B, 42 ->
    # E4B, 30 -> 26B.A4B, 60 -> 31B)
    ("gemma-4-26b-a4b", 25.2, 3.8, 30, 30),
    ("gemma-4-31b", 30.7, 30.7, 60, 60),
    ("gemma-4-e2b", 4.6, 4.6, 35, 15),
    ("gemma-4-e4b", 7.5, 7.5, 42, 24),
])
def test_builtins(name, total, active, layers, kv_layers):
    c = configs.load(name)
    assert round(c.total_params() / 1e9, 1) == total and round(c.active_params() / 1e9, 1) == active
    assert c.n_layers == layers and c.n_kv_layers == kv_layers and len(c.attention_layers) == layers
    assert c.layer_head_dim(c.n_layers - 1) == 512 and c.layer_head_dim(0) == 256
    if name == "gemma-4-e2b":
        assert round((c.total_params() - c.ple_vocab * c.n_layers * c.ple_size) / 1e9, 1) == 2.3


def test_cache_bytes_by_hand():
    """f16 cache per token: each caching layer's K and V rows (a global layer: its KV heads x 512)."""
    c = configs.load("gemma-4-31b")          # 50 sliding (16 x 256), 10 global (4 x 512), k = v stored as K and V
    assert c.kv_bytes_per_token("f16") == 50 * 16 * 256 * 2 * 2 + 10 * 4 * 512 * 2 * 2
    assert c.kv_bytes_per_token("f16", windowed=False) == 10 * 4 * 512 * 2 * 2
    e2 = configs.load("gemma-4-e2b")         # 15 caching layers (12 sliding, 3 global), one KV head
    assert e2.cache_layers == tuple(range(15))
    assert e2.kv_bytes_per_token("f16") == 12 * 256 * 2 * 2 + 3 * 512 * 2 * 2
    # a kv-shared layer attends over the last earlier layer of its kind
    assert e2.kv_source(34) == 14 and e2.kv_source(33) == 13 and e2.kv_source(15) == 13
    assert e2.layer_intermediate(14) == 6144 and e2.layer_intermediate(15) == 12288
    shapes = e2.tensor_shapes()
    assert "model.layers.20.self_attn.k_proj.weight" not in shapes and "model.layers.20.self_attn.q_proj.weight" in shapes
    m = configs.load("gemma-4-26b-a4b").tensor_shapes()
    assert "model.layers.5.self_attn.v_proj.weight" not in m and m["model.layers.5.self_attn.k_proj.weight"] == (1024, 2816)
    assert m["model.layers.4.self_attn.v_proj.weight"] == (2048, 2816)


def test_priced_kv_shared_layers_write_no_cache():
    """The cost model: a kv-shared layer projects only q (no k / v, no cache write) and attends over its
    source's cache; memory holds only the caching layers' cache."""
    s = cm.Setup(model="gemma-4-e2b", weights="q8_0", runtime="typical")
    step = cm.decode(s, 8192)
    writes = [c for c in step.ops if c.name == "attn.kv_write"]
    assert sum(c.count for c in writes) == 15
    assert sum(c.count for c in step.ops if c.name == "attn.core") == 35
    cells = cm.window_cells(65536, 512, s.n_ubatch)
    c = configs.load("gemma-4-e2b")
    want = c.kv_bytes_per_token("f16", windowed=False) * 65536 + c.kv_bytes_per_token("f16", windowed=True) * cells
    assert cm.memory(s, 65536).cards[0].kv == want
    # the per-layer embeddings are priced (the per-layer gate / projection in every layer, the input once)
    assert sum(c.count for c in step.ops if c.name == "ple.layer") == 35
    assert sum(c.count for c in step.ops if c.name == "ple.input_proj") == 1


def test_global_layers_priced_with_their_geometry():
    """Deep decode reads the global layers' 512-wide cache: 31B's attention bytes at depth grow by its global
    cache per token (the windowed layers stop at the window)."""
    s = cm.Setup(model="gemma-4-31b", weights="q4_0", runtime="typical")
    a, b = cm.decode(s, 65536), cm.decode(s, 131072)
    core = lambda st: sum(c.bytes for c in st.ops if c.name == "attn.core")
    c = configs.load("gemma-4-31b")
    assert core(b) - core(a) == pytest.approx(c.kv_bytes_per_token("f16", windowed=False) * 65536, rel=0.01)


@pytest.mark.parametrize("bad,msg", [
    (dict(num_kv_shared_layers=10), "leaves no layer"),
    (dict(per_layer_config={"4": {"head_dim": 16}, "9": {"head_dim": 32}}), "different head_dims"),
    (dict(per_layer_config={"0": {"head_dim": 16}}), "overrides a sliding-window layer"),
    (dict(attention_k_eq_v=True, num_global_key_value_heads=3), "not a multiple"),
])
def test_bad_configs(bad, msg):
    d = {**TINY["ple-shared"], "model_type": "gemma4_text", **bad}
    with pytest.raises(ValueError, match=msg):
        configs.from_hf(d)
