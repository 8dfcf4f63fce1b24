"""GGUF files of llama.cpp's DeepSeek Sparse Attention architectures (glm-dsa: GLM-5; deepseek32: DeepSeek-V3.2),
laid out as its converter writes them (conversion/glm.py GlmMoeDsaModel, conversion/deepseek.py DeepseekV32Model,
both on DeepseekV2Model): a tiny written file reads back as the HF config it was written from."""
import numpy as np
import pytest

from glmbench.models import configs, gguf_file

gguf = pytest.importorskip("gguf", reason="GGUF tests need the gguf package")
transformers = pytest.importorskip("transformers")
import gguf_writer  # noqa: E402

TINY = dict(vocab_size=100, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=6,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=32,
            q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, index_n_heads=4, index_head_dim=16,
            index_topk=8, first_k_dense_replace=1, n_group=2, topk_group=1, max_position_embeddings=4096,
            rope_parameters={"rope_theta": 10000.0, "rope_type": "default"})
ARCH = {"glm_moe_dsa": "glm-dsa", "deepseek_v32": "deepseek32"}


def _hf(model_type, **kw):
    cls = transformers.GlmMoeDsaConfig if model_type == "glm_moe_dsa" else transformers.DeepseekV32Config
    return cls(**{**TINY, **kw}).to_dict()


def _write(path, hc, drop=(), types=True):
    """A GGUF of HF config dict `hc` with the converter's keys (DeepseekV2Model's MLA and MoE keys, the indexer's
    head_count / key_length / top_k, glm-dsa's indexer.types as bools) and tensors (kv_b_proj split into attn_k_b
    [H, R, Dn] and attn_v_b [H, Dv, R]), zeros for data, F16 matrices; less the metadata keys in `drop` (and
    without indexer.types where `types` is False)."""
    cfg = configs.from_hf(hc, "synth")
    arch = ARCH[cfg.model_type]
    L, H, R, Dr, Dn, Dv = (cfg.n_layers, cfg.n_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim,
                           cfg.v_head_dim)
    w = gguf.GGUFWriter(path, arch)
    meta = {"block_count": L, "context_length": cfg.max_position_embeddings, "embedding_length": cfg.hidden_size,
            "feed_forward_length": cfg.intermediate_size, "attention.head_count": H, "attention.head_count_kv": 1,
            "attention.layer_norm_rms_epsilon": cfg.rms_norm_eps, "vocab_size": cfg.vocab_size,
            "attention.q_lora_rank": cfg.q_lora_rank, "attention.kv_lora_rank": R, "attention.key_length": R + Dr,
            "attention.value_length": R, "attention.key_length_mla": Dn + Dr, "attention.value_length_mla": Dv,
            "rope.dimension_count": Dr, "rope.freq_base": float(cfg.rope_theta),
            "leading_dense_block_count": cfg.first_k_dense_replace, "expert_count": cfg.n_routed_experts,
            "expert_used_count": cfg.n_experts_per_tok, "expert_feed_forward_length": cfg.moe_intermediate_size,
            "expert_shared_count": cfg.n_shared_experts, "expert_weights_scale": float(cfg.routed_scaling_factor),
            "expert_weights_norm": cfg.norm_topk_prob, "expert_gating_func": 2, "expert_group_count": cfg.n_group,
            "expert_group_used_count": cfg.topk_group, "attention.indexer.head_count": cfg.index_n_heads,
            "attention.indexer.key_length": cfg.index_head_dim, "attention.indexer.top_k": cfg.index_topk}
    if arch == "glm-dsa" and types:
        meta["attention.indexer.types"] = [cfg.has_indexer(i) for i in range(L)]
    gguf_writer.add_metadata(w, arch, meta, drop)
    for hf, shape in cfg.tensor_shapes().items():
        name = gguf_file.gguf_name(hf, arch, L)
        parts = [(name, shape)]
        if hf.endswith("kv_b_proj.weight"):
            parts = [(name.replace("attn_kv_b", "attn_k_b"), (H, R, Dn)), (name.replace("attn_kv_b", "attn_v_b"), (H, Dv, R))]
        for n, s in parts:
            w.add_tensor(n, np.zeros(s, np.float16 if len(s) >= 2 and "ffn_gate_inp" not in n else np.float32))
    gguf_writer.finish(w)
    return cfg


@pytest.mark.parametrize("model_type,kw", [("glm_moe_dsa", dict(index_topk_freq=2)), ("glm_moe_dsa", {}),
                                           ("deepseek_v32", {})])
def test_written_file_reads_as_its_config(tmp_path, model_type, kw):
    p = str(tmp_path / "f.gguf")
    want = _write(p, _hf(model_type, **kw))
    cfg = gguf_writer.load_stated(p)
    assert gguf_writer.config_diff(cfg, want) == {}, gguf_writer.config_diff(cfg, want)
    assert cfg.cost_shape() == want.cost_shape() and cfg.total_params() == want.total_params()
    assert cfg.hf["gguf_architecture"] == ARCH[model_type] and cfg.model_type == model_type
    fw = cfg.file_weights
    assert fw.extra_bytes == fw.skipped_bytes == 0 and sum(fw.bytes_of().values()) == fw.total_bytes
    # the indexer's tensors are the file's, on the full layers only
    full = cfg.indexer_layers
    assert (full == (0, 1, 3, 5)) == bool(kw) and all(f"model.layers.{i}.self_attn.indexer.wq_b.weight" in fw.bytes_of()
                                                      for i in full)


def test_glm_dsa_without_types_follows_llama_cpp(tmp_path):
    """glm-dsa files without attention.indexer.types: every layer full below a 1M-token native context (GLM-5, 5.1),
    else GLM-5.2's default pattern (src/models/glm-dsa.cpp GLM_5_2_DEFAULT_INDEXER_TYPES)."""
    p = str(tmp_path / "old.gguf")
    _write(p, _hf("glm_moe_dsa"), types=False)
    assert configs.load(p).indexer_layers == tuple(range(6))
    q = str(tmp_path / "long.gguf")
    _write(q, _hf("glm_moe_dsa", max_position_embeddings=gguf_file.GLM_5_2_CONTEXT,
                  indexer_types=["full", "full", "full", "shared", "shared", "shared"]), types=False)
    assert configs.load(q).indexer_layers == (0, 1, 2)


@pytest.mark.parametrize("key", ["attention.indexer.head_count", "attention.indexer.key_length",
                                 "attention.indexer.top_k"])
def test_missing_indexer_key_is_named(tmp_path, key):
    p = str(tmp_path / "bad.gguf")
    _write(p, _hf("deepseek_v32"), drop=(key,))
    with pytest.raises(gguf_file.GGUFError) as e:
        configs.load(p)
    assert p in str(e.value) and f"'deepseek32.{key}' is missing" in str(e.value)


def test_bad_gating_and_types_are_named(tmp_path):
    p = str(tmp_path / "g.gguf")
    _write(p, _hf("glm_moe_dsa"))
    g = gguf_file.read(p)
    g.metadata["glm-dsa.expert_gating_func"] = 1
    with pytest.raises(gguf_file.GGUFError, match=r"'glm-dsa.expert_gating_func' = 1 is not 2 \(sigmoid\)"):
        gguf_file.hf_config(g)
    g.metadata["glm-dsa.expert_gating_func"] = 2
    g.metadata["glm-dsa.attention.indexer.types"] = np.array([True, False, True])
    with pytest.raises(gguf_file.GGUFError, match=r"'glm-dsa.attention.indexer.types' has 3 values for 6 layers"):
        gguf_file.hf_config(g)
