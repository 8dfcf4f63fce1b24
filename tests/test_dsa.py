"""DeepSeek Sparse Attention models (configs.DSA_FAMILIES: GLM-5's glm_moe_dsa, DeepSeek-V3.2's deepseek_v32). Priced,
not run (configs.PRICED_ONLY): their configs and parameters against HF transformers' models on the meta device,
tensor by tensor; the cache (the MLA latent plus the indexer's key on layers with an indexer of their own); the
cost of decoding deep in the context (the MLA over the chosen keys on sparse runtimes, over the whole cache on
llama.cpp's masked graph; the indexer over the whole cache everywhere); bad fields named."""
import warnings

import pytest

import glmbench
from glmbench.models import configs
from glmbench.predict import costmodel as cm, hardware

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=100, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=6,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=32,
            q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, index_n_heads=4, index_head_dim=16,
            index_topk=8, first_k_dense_replace=1, n_group=2, topk_group=1)
HF = {"glm_moe_dsa": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM"),
      "deepseek_v32": ("DeepseekV32Config", "DeepseekV32ForCausalLM")}


def _hf(model_type, **kw):
    conf, model = (getattr(transformers, n) for n in HF[model_type])
    hc = conf(**kw)
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hc, model(hc)


def _hf_shapes(m) -> dict:
    """HF's tensors by name -> shape, the experts' fused gate_up_proj split as glmbench names them, with the
    routers' e_score_correction_bias (a buffer, stored in the checkpoint); rope's inv_freq buffers left out."""
    out = {}
    for n, t in list(m.named_parameters()) + list(m.named_buffers()):
        if "rotary_emb" in n:
            continue
        if n.endswith("gate_up_proj"):
            E, F2, D = t.shape
            out[n[: -len("gate_up_proj")] + "gate_proj"] = out[n[: -len("gate_up_proj")] + "up_proj"] = (E, F2 // 2, D)
        else:
            out[n] = tuple(t.shape)
    return out


@pytest.mark.parametrize("model_type,kw", [("glm_moe_dsa", dict(TINY, index_topk_freq=2)), ("deepseek_v32", TINY),
                                           ("glm_moe_dsa", {}), ("deepseek_v32", {})],
                         ids=["glm-tiny-shared", "v32-tiny", "glm-5-defaults", "v32-defaults"])
def test_tensors_equal_hf(model_type, kw):
    """Every tensor of HF's model (meta device) is one of the config's, same name and shape, and no other; GLM's
    "shared" layers (index_topk_freq 2: layers 2 and 4) hold no indexer. The class defaults are the built-ins':
    GLM-5 743.91 B (41.78 B active), DeepSeek-V3.2 671.88 B (38.40 B active), embeddings counted."""
    hc, m = _hf(model_type, **kw)
    cfg = configs.from_hf(hc.to_dict())
    assert cfg.tensor_shapes() == _hf_shapes(m)
    n = sum(p.numel() for p in m.parameters())
    assert cfg.total_params() == n + cfg.n_moe_layers * cfg.n_routed_experts
    assert cfg.index_n_heads == hc.index_n_heads and cfg.index_topk == hc.index_topk
    if kw.get("index_topk_freq"):
        assert cfg.indexer_layers == (0, 1, 3, 5) and not cfg.has_indexer(2)
        assert not any(k.startswith("model.layers.2.self_attn.indexer.") for k in cfg.tensor_shapes())
    if not kw:
        name = {"glm_moe_dsa": "glm-5", "deepseek_v32": "deepseek-v3.2"}[model_type]
        assert cfg.cost_shape() == configs.load(name).cost_shape()
        want = {"glm-5": (743.91, 41.78), "deepseek-v3.2": (671.88, 38.40)}[name]
        assert (round(cfg.total_params() / 1e9, 2), round(cfg.active_params() / 1e9, 2)) == want
        assert cfg.summary()["family"] == "MoE + MLA + DSA"
        assert configs.PRICED_ONLY[model_type] in cfg.forward_unsupported()[-1]


def test_kv_bytes_per_token_include_the_indexer_key():
    """Per token and layer: the MLA latent and rope key (512 + 64) and, on a layer with its own indexer, its key
    (128); GLM's shared layers cache the latent alone."""
    glm, v32 = configs.load("glm-5"), configs.load("deepseek-v3.2")
    assert glm.kv_bytes_per_token("f16") == 78 * (512 + 64 + 128) * 2
    assert v32.kv_bytes_per_token("f16") == 61 * (512 + 64 + 128) * 2
    assert glm.kv_rows_per_layer(0) == [512, 64, 128]
    tiny = configs.from_hf(transformers.GlmMoeDsaConfig(**TINY, index_topk_freq=2).to_dict())
    assert tiny.kv_bytes_per_token("f16") == (6 * (32 + 8) + 4 * 16) * 2
    assert tiny.kv_rows_per_layer(2) == [32, 8] and tiny.kv_rows_per_layer(3) == [32, 8, 16]


@pytest.mark.parametrize("runtime,row", [("llama.cpp", 128 * 2), ("vllm", 128 + 4)])
def test_memory_holds_the_indexer_cache(runtime, row):
    """The cache a context takes: llama.cpp's indexer cache in the cache's K type (f16 here; llama_kv_cache_dsa),
    vLLM's in fp8 with an f32 scale per 128 values; the latent on every card under tensor split."""
    s = cm.Setup(model="glm-5", rig=hardware.Rig(hardware.get_gpu("h200-sxm"), 8), split="tensor", weights="fp8"
                 if runtime == "vllm" else "Q4_K_M", runtime=runtime)
    m0, m1 = cm.memory(s, 1024).cards[0], cm.memory(s, 1024 + 8192).cards[0]
    assert m1.kv - m0.kv == pytest.approx(8192 * 78 * ((512 + 64) * 2 + row), rel=1e-9)


def _attn_seconds(setup, depth):
    b = cm.decode(setup, depth).breakdown()
    return b["attn.core"], b["attn.indexer_score"]


@pytest.mark.parametrize("runtime", ["vllm", "typical", "llama.cpp"])
def test_decode_deep_in_the_context(runtime):
    """From 10K to 100K tokens of context: the indexer scores every cached key everywhere (its time grows
    about with the context); the MLA attends to the 2048 chosen keys where the runtime runs sparse kernels (vLLM,
    the physics profiles: flat past index_topk) and to every cached key where it masks (llama.cpp)."""
    s = cm.Setup(model="glm-5", rig=hardware.Rig(hardware.get_gpu("h200-sxm"), 8), split="tensor",
                 weights="fp8" if runtime != "llama.cpp" else "Q4_K_M", runtime=runtime)
    (core10, idx10), (core100, idx100) = _attn_seconds(s, 10_000), _attn_seconds(s, 100_000)
    assert idx100 > 2.5 * idx10
    if runtime == "llama.cpp":
        assert core100 > 4 * core10
        assert "attn.topk_mask" in cm.decode(s, 100_000).breakdown()
    else:
        assert core100 == pytest.approx(core10, rel=1e-12)
        assert _attn_seconds(s, 1000)[0] < core10          # below index_topk every key is chosen
    assert cm.decode(s, 100_000).seconds > cm.decode(s, 10_000).seconds


def test_sparse_prefill_and_shared_layers():
    """A sparse runtime's prompt past index_topk: each query attends to 2048 keys (the MLA's FLOPs do not grow with
    the depth); GLM's shared layers run no indexer: its ops are counted on the full layers only."""
    s = cm.Setup(model="deepseek-v3.2", rig=hardware.Rig(hardware.get_gpu("h200-sxm"), 8), split="tensor",
                 weights="fp8", runtime="vllm")
    core = lambda d: sum(o.flops for o in cm.prefill(s, 4096, d).ops if o.name == "attn.core")
    assert core(50_000) == pytest.approx(core(100_000), rel=1e-12)
    hc = transformers.GlmMoeDsaConfig(**TINY, index_topk_freq=2).to_dict()
    t = cm.Setup(model=configs.from_hf(hc), rig="h100-sxm", runtime="typical")
    count = lambda name: sum(o.count for o in cm.decode(t, 100).ops if o.name == name)
    assert count("attn.indexer_score") == 4 and count("attn.core") == 6


def test_weight_bytes_exact():
    """The bytes the cost model streams are the checkpoint's, the indexer's tensors included."""
    for name in ("glm-5", "deepseek-v3.2"):
        c = configs.load(name)
        for w in ("bf16", "q8_0"):
            head = sum(v for k, v in cm._weight_table(c, w).items() if k != "layers")
            assert sum(cm._layer_total(c, w)) + head == c.weight_bytes(w)


def test_bad_fields():
    base = transformers.GlmMoeDsaConfig(**TINY).to_dict()
    with pytest.raises(ValueError, match="`index_topk` must be >= 1, got 0"):
        configs.from_hf({**base, "index_topk": 0})
    with pytest.raises(ValueError, match="`index_n_heads` is missing"):
        configs.from_hf({k: v for k, v in base.items() if k != "index_n_heads"})
    with pytest.raises(ValueError, match="`index_head_dim` = 4 is smaller than `qk_rope_head_dim` = 8"):
        configs.from_hf({**base, "index_head_dim": 4})
    with pytest.raises(ValueError, match="`indexer_types` must list"):
        configs.from_hf({**base, "indexer_types": ["full"] * 5})
    with pytest.raises(ValueError, match="`indexer_types` starts with a 'shared' layer"):
        configs.from_hf({**base, "indexer_types": ["shared"] + ["full"] * 5})
    with pytest.raises(ValueError, match="`q_lora_rank` is null"):
        configs.from_hf({**base, "q_lora_rank": None})
    with pytest.raises(ValueError, match="priced, not run"):
        glmbench.Model(configs.from_hf(base), layers=[0], max_context=16)


def test_llama_bench_rows_name_the_builtins():
    """llama-bench prints the architectures as glm-dsa / deepseek32 (src/llama-arch.cpp) with the file's parameters,
    the MTP layer the converter keeps included (GLM-5: 744B.A40B; DeepSeek-V3.2: 685B.A37B): within the params
    tolerance of the built-ins, and never DeepSeek-V3's deepseek2 ones."""
    from glmbench.results import importers as im
    assert (im._arch_of("glm_moe_dsa"), im._arch_of("deepseek_v32")) == ("glm-dsa", "deepseek32")
    assert im.model_candidates("glm-dsa 744B.A40B Q4_K - Medium", 753.9e9)[0] == ["glm-5"]
    assert im.model_candidates("deepseek32 685B.A37B Q4_K - Medium", 684.5e9)[0] == ["deepseek-v3.2"]
    assert "deepseek-v3.2" not in im.model_candidates("deepseek2 671B Q4_K - Medium", 671.0e9)[0]
