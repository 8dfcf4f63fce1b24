"""Built-ins written from memory (no network) for families glmbench already prices and, where `Model` runs the
family, runs: Codestral-22B-v0.1 (mistral), Gemma-3-270M (gemma3_text) and Liquid's LFM2 (lfm2, lfm2_moe; priced
only). Each lands on its published parameter count, agrees with HF's meta-device model of its fields, prices, runs
as a tiny model of its own layer pattern where the family runs, and its llama-bench row (llama.cpp's architecture,
size label and params column) names it. docs/SOURCES.md, "Built-in Codestral-22B, Gemma-3-270M and LFM2"."""
import json

import numpy as np
import pytest

import hf_meta
import llama_bench_rows as lb
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.results import importers as im


def _raw(name):
    raw = json.load(open(configs.builtin_path(name)))
    assert "written from memory" in raw["_source"] and "huggingface.co/" in raw["_source"]
    return raw


def _hf_count(name, cls_name):
    transformers = pytest.importorskip("transformers")
    raw = _raw(name)
    hc = getattr(transformers, cls_name)(**{k: v for k, v in raw.items() if not k.startswith("_")})
    return hf_meta.meta_model(hc)[1]


def _priced(c):
    s = cm.Setup(c, "rtx-3090", weights="Q4_K_M", runtime="llama.cpp")
    assert cm.decode(s, 4096).tok_s > 0 and cm.prefill(s, 512, 0).tok_s > 0
    return s


def _tiny(name, **small):
    """The built-in's own fields with small sizes (its layer pattern kept): glmbench.Model runs it with random
    weights, finite logits."""
    import glmbench
    raw = {k: v for k, v in _raw(name).items() if not k.startswith("_")}
    c = configs.from_hf({**raw, **small}, f"{name}-tiny")
    m = glmbench.Model(c, weights="f32", max_context=32)
    assert np.all(np.isfinite(m.prefill(np.arange(9))))
    return c


# ---- Codestral-22B-v0.1 --------------------------------------------------------------------------------------------
def test_codestral_22b():
    c = configs.load("codestral-22b")
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate_size,
            c.vocab_size, c.tie_word_embeddings) == ("mistral", 56, 6144, 48, 8, 128, 16384, 32768, False)
    # the card's 22.2B
    assert c.total_params() == 22_247_282_688 == _hf_count("codestral-22b", "MistralConfig")
    assert c.forward_unsupported() == [] and c.sliding_window is None
    _priced(c)
    t = _tiny("codestral-22b", vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
              num_attention_heads=6, num_key_value_heads=1, head_dim=16)
    assert t.n_heads // t.n_kv_heads == 6


def test_codestral_llama_bench_rows(tmp_path):
    # llama.cpp converts MistralForCausalLM as `llama` and has no size label for 56 dense llama layers ("?B",
    # src/models/llama.cpp): the params column tells it (Mistral-Small-24B's 23.57 B is 6% away)
    assert im._gguf_params(configs.load("codestral-22b")) == 22_247_282_688
    rows = {"llama ?B Q4_K - Medium         |  12.42 GiB |    22.25 B": ("codestral-22b", "Q4_K_M"),
            "llama ?B Q8_0                  |  21.99 GiB |    22.25 B": ("codestral-22b", "q8_0")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |       40.10 ± 0.50")
    assert im.model_candidates("llama ?B Q4_K - Medium", 23.57e9)[0] == ["devstral-small", "mistral-small-24b"]


# ---- Gemma-3-270M --------------------------------------------------------------------------------------------------
def test_gemma_3_270m():
    c = configs.load("gemma-3-270m")
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate_size,
            c.vocab_size, c.tie_word_embeddings, c.sliding_window) == \
        ("gemma3_text", 18, 640, 4, 1, 256, 2048, 262144, True, 512)
    # the other Gemma 3 built-ins' pattern: five windowed layers, then a global one
    g1 = configs.load("gemma-3-1b")
    assert [c.layer_window(i) for i in range(18)] == [g1.layer_window(i) for i in range(18)]
    assert [c.layer_window(i) is None for i in range(18)] == [i % 6 == 5 for i in range(18)]
    # the card's 270M: 170 M of embeddings (262144 x 640 = 167.77 M), 100 M in the layers
    assert c.total_params() == 268_098_176 == _hf_count("gemma-3-270m", "Gemma3TextConfig")
    assert c.total_params() - 262144 * 640 == 100_326_016
    assert c.forward_unsupported() == []
    _priced(c)
    _tiny("gemma-3-270m", vocab_size=256, hidden_size=64, intermediate_size=96, num_attention_heads=4,
          num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16, sliding_window=4)


def test_gemma_3_270m_llama_bench_rows(tmp_path):
    # llama.cpp labels 18 gemma3 layers 270M (src/models/gemma3.cpp); llama-bench prints a count under 1e9 in M
    rows = {"gemma3 270M Q8_0               | 271.81 MiB |   268.10 M": ("gemma-3-270m", "q8_0"),
            "gemma3 270M Q4_K - Medium      | 241.41 MiB |   268.10 M": ("gemma-3-270m", "Q4_K_M")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |      400.10 ± 0.50")
    assert im.model_candidates("gemma3 270M Q8_0")[0] == ["gemma-3-270m"]


# ---- LFM2 (priced, not run) ----------------------------------------------------------------------------------------
# (built-in, layers, hidden, heads, MLP width after HF's rule, attention layers, the card's count)
_LFM2 = [("lfm2-350m", 16, 1024, 16, 4608, (2, 5, 8, 10, 12, 14), 354_483_968),
         ("lfm2-700m", 16, 1536, 24, 6912, (2, 5, 8, 10, 12, 14), 742_489_344),
         ("lfm2-1.2b", 16, 2048, 32, 8192, (2, 5, 8, 10, 12, 14), 1_170_340_608),
         ("lfm2-2.6b", 30, 2048, 32, 10752, (2, 6, 10, 14, 18, 22, 26, 29), 2_569_272_320)]


@pytest.mark.parametrize("name, L, D, H, F, attn, count", _LFM2)
def test_lfm2_dense(name, L, D, H, F, attn, count):
    c = configs.load(name)
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate_size,
            c.vocab_size, c.tie_word_embeddings) == ("lfm2", L, D, H, 8, D // H, F, 65536, True)
    assert c.attention_layers == attn and c.linear_layers == tuple(i for i in range(L) if i not in attn)
    # the card's count, to the parameter, and HF's model of the released field names (block_ff_dim, tie_embedding)
    assert c.total_params() == count == _hf_count(name, "Lfm2Config")
    assert c.kv_bytes_per_token("f16") == len(attn) * 8 * 2 * (D // H) * 2
    assert c.recurrent_state_bytes() == len(c.linear_layers) * 2 * D * 4     # (conv_L_cache - 1) x hidden, f32
    assert c.forward_unsupported()     # priced, not run: no C op for the short convolution yet
    s = _priced(c)
    m = cm.memory(s, 1024).cards[0]
    assert m.kv == 1024 * c.kv_bytes_per_token("f16") + c.recurrent_state_bytes()


def test_lfm2_8b_a1b():
    c = configs.load("lfm2-8b-a1b")
    assert (c.model_type, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.intermediate_size,
            c.moe_intermediate_size, c.n_routed_experts, c.n_experts_per_tok, c.vocab_size, c.tie_word_embeddings) == \
        ("lfm2_moe", 24, 2048, 32, 8, 7168, 1792, 32, 4, 65536, True)
    assert c.attention_layers == (2, 6, 10, 14, 18, 21) and c.moe_layers == tuple(range(2, 24))
    # the card's 8.3B total / 1.5B active; HF counts the 22 routers' expert_bias (a buffer the checkpoint and the
    # GGUF store, exp_probs_b) apart
    assert c.total_params() == 8_339_930_560 == _hf_count("lfm2-8b-a1b", "Lfm2MoeConfig") + 22 * 32
    assert round(c.active_params() / 1e9, 2) == 1.56
    assert c.forward_unsupported()
    _priced(c)


def test_lfm2_llama_bench_rows(tmp_path):
    # llama.cpp's lfm2 labels by the MLP's width (4608 -> 350M, 6912 -> 700M, 8192 -> 1.2B, 10752 -> 2.6B), lfm2moe by
    # the layer count (24 -> 8B.A1B): src/models/lfm2.cpp, lfm2moe.cpp; the params column is each built-in's count
    rows = {"lfm2 350M Q4_K - Medium        | 217.73 MiB |   354.48 M": ("lfm2-350m", "Q4_K_M"),
            "lfm2 700M Q4_K - Medium        | 447.89 MiB |   742.49 M": ("lfm2-700m", "Q4_K_M"),
            "lfm2 1.2B Q4_K - Medium        | 694.99 MiB |     1.17 B": ("lfm2-1.2b", "Q4_K_M"),
            "lfm2 1.2B Q8_0                 |   1.16 GiB |     1.17 B": ("lfm2-1.2b", "q8_0"),
            "lfm2 2.6B Q4_K - Medium        |   1.45 GiB |     2.57 B": ("lfm2-2.6b", "Q4_K_M"),
            "lfm2moe 8B.A1B Q4_K - Medium   |   4.70 GiB |     8.34 B": ("lfm2-8b-a1b", "Q4_K_M")}
    lb.check_rows_name_builtins(tmp_path, rows, "CUDA       |  99 |         1 |           tg128 |      200.10 ± 0.50")
    for name, *_ in _LFM2:
        assert im._gguf_params(configs.load(name)) == configs.load(name).total_params()
        assert im.model_candidates(f"lfm2 {name.split('-')[1].upper()} Q4_K - Medium")[0] == [name]
