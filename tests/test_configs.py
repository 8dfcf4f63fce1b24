import json

import numpy as np
import pytest

from glmbench.models import configs
from glmbench import vocab

ALL = ["afm-4.5b", "apertus-70b", "apertus-8b", "codellama-34b", "codestral-22b", "command-a", "command-r",
       "command-r-08-2024", "command-r-plus", "command-r7b", "deepseek-r1", "deepseek-r1-distill-llama-70b",
       "deepseek-r1-distill-llama-8b", "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-32b",
       "deepseek-r1-distill-qwen-7b", "deepseek-v2-lite", "deepseek-v3", "deepseek-v3.1", "deepseek-v3.2",
       "devstral-small", "dots.llm1.inst", "ernie-4.5-0.3b", "ernie-4.5-21b-a3b", "exaone-3.5-2.4b",
       "exaone-3.5-32b", "exaone-3.5-7.8b", "exaone-4.0-32b", "gemma-2-27b", "gemma-2-2b", "gemma-2-9b", "gemma-2b",
       "gemma-3-12b", "gemma-3-1b", "gemma-3-270m", "gemma-3-27b", "gemma-3-4b", "gemma-3n-e2b", "gemma-3n-e4b",
       "gemma-4-26b-a4b", "gemma-4-31b", "gemma-4-e2b", "gemma-4-e4b", "gemma-7b", "glm-4-32b", "glm-4-9b",
       "glm-4-9b-chat", "glm-4.5", "glm-4.5-air", "glm-4.6", "glm-4.7-flash", "glm-5", "gpt-oss-120b", "gpt-oss-20b",
       "granite-3.1-3b-a800m-instruct", "granite-3.3-8b-instruct", "granite-4.0-h-micro", "granite-4.0-h-small",
       "granite-4.0-h-tiny", "hunyuan-a13b", "internlm3-8b", "kimi-k2", "kimi-linear-48b-a3b", "lfm2-1.2b",
       "lfm2-2.6b", "lfm2-350m", "lfm2-700m", "lfm2-8b-a1b", "llama-2-13b", "llama-2-70b", "llama-2-7b",
       "llama-3-70b", "llama-3-8b", "llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b", "llama-3.1-minitron-4b",
       "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b", "llama-4-maverick", "llama-4-scout", "minimax-m2",
       "minimax-m2.1", "mistral-7b", "mistral-large", "mistral-nemo", "mistral-small-24b", "mixtral-8x22b",
       "mixtral-8x7b", "nemotron-3-nano-30b-a3b", "nemotron-h-8b", "nemotron-mini-4b", "nemotron-nano-9b-v2",
       "olmo-2-1124-7b", "olmo-3-7b", "olmoe-1b-7b-0924", "phi-3-mini", "phi-3.5-moe", "phi-4", "phi-4-mini",
       "qwen1.5-moe-a2.7b", "qwen2-57b-a14b", "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-14b", "qwen2.5-32b",
       "qwen2.5-3b", "qwen2.5-72b", "qwen2.5-7b", "qwen2.5-coder-32b", "qwen2.5-coder-7b", "qwen3-0.6b",
       "qwen3-1.7b", "qwen3-14b", "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-4b", "qwen3-8b",
       "qwen3-coder-30b-a3b", "qwen3-coder-480b-a35b", "qwen3-next-80b-a3b", "qwen3.5-122b-a10b", "qwen3.5-27b",
       "qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "qwen3.5-9b", "qwq-32b", "seed-oss-36b", "smollm3-3b", "trinity-mini",
       "yi-34b"]


def test_builtin_names():
    assert configs.builtin_names() == ALL
    for n in ALL:
        assert configs.load(n).name == n
    assert configs.load("GLM-4.7-Flash").name == "glm-4.7-flash"


# KV bytes per token, by hand: layers x values cached per token and layer x bytes per value.
KV_F16 = {
    "glm-4.7-flash": 47 * (512 + 64) * 2,             # 54,144 (docs/SOURCES.md §2)
    "deepseek-v2-lite": 27 * (512 + 64) * 2,          # 31,104
    "qwen3-32b": 64 * 8 * (128 + 128) * 2,            # 262,144 = 256 KiB
    "seed-oss-36b": 64 * 8 * (128 + 128) * 2,         # 262,144
    "mistral-small-24b": 40 * 8 * (128 + 128) * 2,    # 163,840 = 160 KiB
    "qwen3-30b-a3b": 48 * 4 * (128 + 128) * 2,        # 98,304
    # Gemma 3: every layer caches (windowed layers only their last 1024 tokens: see below)
    "gemma-3-27b": 62 * 16 * (128 + 128) * 2,         # 507,904
    # Gemma 4: the windowed layers' KV heads x 256 and the global layers' x 512; E2B / E4B cache in their
    # first 15 / 24 layers only (the rest share), 26B-A4B / 31B's global layers hold 2 / 4 KV heads
    "gemma-4-e2b": (12 * 1 * 256 + 3 * 1 * 512) * 2 * 2,
    "gemma-4-e4b": (20 * 2 * 256 + 4 * 2 * 512) * 2 * 2,
    "gemma-4-26b-a4b": (25 * 8 * 256 + 5 * 2 * 512) * 2 * 2,
    "gemma-4-31b": (50 * 16 * 256 + 10 * 4 * 512) * 2 * 2,
    # Gemma 3n: the first 20 layers cache (E4B's last 15, E2B's last 10 share), 2 KV heads x 256
    "gemma-3n-e4b": 20 * 2 * (256 + 256) * 2,         # 40,960
    "gemma-3n-e2b": 20 * 2 * (256 + 256) * 2,
    "gemma-3-12b": 48 * 8 * (256 + 256) * 2,          # 393,216
    "gemma-3-4b": 34 * 4 * (256 + 256) * 2,           # 139,264
    "llama-2-7b": 32 * 32 * (128 + 128) * 2,          # 524,288 = 512 KiB (MHA: 32 KV heads)
    "llama-3-8b": 32 * 8 * (128 + 128) * 2,           # 131,072 = 128 KiB
    "llama-3.1-8b": 32 * 8 * (128 + 128) * 2,
    "llama-3-70b": 80 * 8 * (128 + 128) * 2,          # 327,680 = 320 KiB
    "llama-3.3-70b": 80 * 8 * (128 + 128) * 2,
    "qwen3-8b": 36 * 8 * (128 + 128) * 2,             # 147,456
    "qwen3-14b": 40 * 8 * (128 + 128) * 2,            # 163,840
    "qwen2.5-coder-7b": 28 * 4 * (128 + 128) * 2,     # 57,344
    "qwen3-coder-30b-a3b": 48 * 4 * (128 + 128) * 2,  # 98,304
    "qwen3-235b-a22b": 94 * 4 * (128 + 128) * 2,      # 192,512
    "glm-4.5-air": 46 * 8 * (128 + 128) * 2,          # 188,416 (the MTP layer not counted)
    "deepseek-v3": 61 * (512 + 64) * 2,               # 70,272 (MLA latent + rope key)
    # GPT-OSS: every layer caches (the windowed half only their last 128 tokens)
    "gpt-oss-20b": 24 * 8 * (64 + 64) * 2,            # 49,152
    "gpt-oss-120b": 36 * 8 * (64 + 64) * 2,           # 73,728
    # catalog built-ins for published results (docs/SOURCES.md, "Built-in models of issue 22")
    "llama-2-13b": 40 * 40 * (128 + 128) * 2,         # 819,200 = 800 KiB (MHA)
    "llama-2-70b": 80 * 8 * (128 + 128) * 2,          # 327,680
    "llama-3.1-405b": 126 * 8 * (128 + 128) * 2,      # 516,096
    "llama-3.2-1b": 16 * 8 * (64 + 64) * 2,           # 32,768 (head_dim 64)
    "llama-3.2-3b": 28 * 8 * (128 + 128) * 2,         # 114,688
    "mistral-7b": 32 * 8 * (128 + 128) * 2,           # 131,072
    "mistral-large": 88 * 8 * (128 + 128) * 2,      # 360,448
    "mistral-nemo": 40 * 8 * (128 + 128) * 2,         # 163,840
    "mixtral-8x7b": 32 * 8 * (128 + 128) * 2,         # 131,072
    "mixtral-8x22b": 56 * 8 * (128 + 128) * 2,        # 229,376
    "phi-4": 40 * 10 * (128 + 128) * 2,               # 204,800
    "phi-3-mini": 32 * 32 * (96 + 96) * 2,            # 393,216 (MHA, head_dim 96)
    "phi-4-mini": 32 * 8 * (128 + 128) * 2,           # 131,072 (24 heads of 128, 8 KV heads)
    # fine-tunes named as people name them, on the layers of a built-in above
    "llama-3.1-70b": 80 * 8 * (128 + 128) * 2, "deepseek-r1-distill-llama-70b": 80 * 8 * (128 + 128) * 2,
    "deepseek-r1-distill-llama-8b": 32 * 8 * (128 + 128) * 2,
    "qwen2.5-7b": 28 * 4 * (128 + 128) * 2, "deepseek-r1-distill-qwen-7b": 28 * 4 * (128 + 128) * 2,
    "deepseek-r1-distill-qwen-14b": 48 * 8 * (128 + 128) * 2,
    "qwen2.5-coder-32b": 64 * 8 * (128 + 128) * 2, "qwq-32b": 64 * 8 * (128 + 128) * 2,
    "deepseek-r1-distill-qwen-32b": 64 * 8 * (128 + 128) * 2,
    "devstral-small": 40 * 8 * (128 + 128) * 2,
    "deepseek-r1": 61 * (512 + 64) * 2, "deepseek-v3.1": 61 * (512 + 64) * 2, "kimi-k2": 61 * (512 + 64) * 2,
    "glm-4.6": 92 * 8 * (128 + 128) * 2,
    # DSA: the MLA latent plus each layer's lightning-indexer key (128 wide, every layer a full indexer)
    "glm-5": 78 * (512 + 64 + 128) * 2, "deepseek-v3.2": 61 * (512 + 64 + 128) * 2,
    "qwen2.5-0.5b": 24 * 2 * (64 + 64) * 2,           # 12,288 (896 / 14 heads = head_dim 64)
    "qwen2.5-1.5b": 28 * 2 * (128 + 128) * 2,         # 28,672
    "qwen2.5-3b": 36 * 2 * (128 + 128) * 2,           # 36,864
    "qwen2.5-14b": 48 * 8 * (128 + 128) * 2,          # 196,608
    "qwen2.5-32b": 64 * 8 * (128 + 128) * 2,          # 262,144
    "qwen2.5-72b": 80 * 8 * (128 + 128) * 2,          # 327,680
    "qwen3-0.6b": 28 * 8 * (128 + 128) * 2,           # 114,688
    "qwen3-1.7b": 28 * 8 * (128 + 128) * 2,
    "qwen3-4b": 36 * 8 * (128 + 128) * 2,             # 147,456
    "qwen3-coder-480b-a35b": 62 * 8 * (128 + 128) * 2,  # 253,952
    "glm-4.5": 92 * 8 * (128 + 128) * 2,              # 376,832 (the MTP layer not counted)
    # Gemma 2 (even layers windowed to 4096) and Gemma 3 1B (five of six to 512): every layer caches
    "gemma-2-2b": 26 * 4 * (256 + 256) * 2,           # 106,496
    "gemma-2-9b": 42 * 8 * (256 + 256) * 2,           # 344,064
    "gemma-2-27b": 46 * 16 * (128 + 128) * 2,         # 376,832
    "gemma-3-1b": 26 * 1 * (256 + 256) * 2,           # 26,624
    # families priced, not run (configs.PRICED_ONLY)
    "glm-4-32b": 61 * 2 * (128 + 128) * 2,            # 62,464 (2 KV heads)
    "glm-4-9b": 40 * 2 * (128 + 128) * 2,             # 40,960
    "llama-4-scout": 48 * 8 * (128 + 128) * 2,        # 196,608 (36 chunked layers keep their last 8192 + ubatch)
    "llama-4-maverick": 48 * 8 * (128 + 128) * 2,
    "minimax-m2": 62 * 8 * (128 + 128) * 2,           # 253,952
    "minimax-m2.1": 62 * 8 * (128 + 128) * 2,
    "ernie-4.5-21b-a3b": 28 * 4 * (128 + 128) * 2,    # 57,344
    "qwen2-57b-a14b": 28 * 4 * (128 + 128) * 2,       # 57,344
    "qwen1.5-moe-a2.7b": 24 * 16 * (128 + 128) * 2,   # 196,608 (MHA)
    "hunyuan-a13b": 32 * 8 * (128 + 128) * 2,         # 131,072
    "phi-3.5-moe": 32 * 8 * (128 + 128) * 2,          # 131,072
    "dots.llm1.inst": 62 * 32 * (128 + 128) * 2,     # 1,015,808: MHA, 32 KV heads of 4096 / 32
    # hybrids: only the full-attention layers (one in four) cache; the linear ones hold a fixed state
    "qwen3-next-80b-a3b": 12 * 2 * (256 + 256) * 2,   # 24,576
    "qwen3.5-35b-a3b": 10 * 2 * (256 + 256) * 2,      # 20,480
    "qwen3.5-122b-a10b": 12 * 2 * (256 + 256) * 2,    # 24,576
    "qwen3.5-397b-a17b": 15 * 2 * (256 + 256) * 2,    # 30,720
    "qwen3.5-27b": 16 * 4 * (256 + 256) * 2,          # 65,536
    "qwen3.5-9b": 8 * 4 * (256 + 256) * 2,            # 32,768
    # Mamba-2 hybrids: only the attention blocks cache (Nemotron-H's "*" blocks, Granite's 4 of 40)
    "nemotron-3-nano-30b-a3b": 6 * 2 * (128 + 128) * 2,  # 6,144
    "nemotron-h-8b": 4 * 8 * (128 + 128) * 2,         # 16,384
    "nemotron-nano-9b-v2": 4 * 8 * (128 + 128) * 2,   # 16,384
    "granite-4.0-h-small": 4 * 8 * (128 + 128) * 2,   # 16,384
    "granite-4.0-h-tiny": 4 * 4 * (128 + 128) * 2,    # 8,192
    "granite-4.0-h-micro": 4 * 8 * (64 + 64) * 2,     # 8,192
    "olmoe-1b-7b-0924": 16 * 16 * (128 + 128) * 2,    # 131,072: 16 KV heads (no GQA) of 2048 / 16
    "granite-3.3-8b-instruct": 40 * 8 * (128 + 128) * 2,        # 163,840
    "granite-3.1-3b-a800m-instruct": 32 * 8 * (64 + 64) * 2,    # 65,536: head dim 1536 / 24
    # OLMo 2 / 3 7B: MHA, 32 KV heads of 128 (OLMo 3's sliding layers cache their last 4096 + ubatch); SmolLM3-3B:
    # 4 KV heads of 128; EXAONE 4.0 32B: 8 of 128 (three of four layers windowed)
    "olmo-2-1124-7b": 32 * 32 * (128 + 128) * 2, "olmo-3-7b": 32 * 32 * (128 + 128) * 2,    # 524,288
    "smollm3-3b": 36 * 4 * (128 + 128) * 2,           # 73,728
    "exaone-4.0-32b": 64 * 8 * (128 + 128) * 2,       # 262,144
    "exaone-3.5-32b": 64 * 8 * (128 + 128) * 2,       # 262,144
    "exaone-3.5-7.8b": 32 * 8 * (128 + 128) * 2,      # 131,072
    "exaone-3.5-2.4b": 30 * 8 * (80 + 80) * 2,        # 76,800
    "ernie-4.5-0.3b": 18 * 2 * (128 + 128) * 2,       # 18,432
    "afm-4.5b": 36 * 4 * (128 + 128) * 2,             # 73,728: AFM-4.5B's 4 KV heads of 128
    "apertus-8b": 32 * 8 * (128 + 128) * 2,           # 131,072: 8 KV heads of 128
    "apertus-70b": 80 * 8 * (128 + 128) * 2,          # 327,680
    # Gemma 1: the 2B's MQA, one KV head of 256; the 7B's MHA, 16 KV heads of 256 (hidden 3072 / 16 = 192 is not it)
    "gemma-2b": 18 * 1 * (256 + 256) * 2,             # 18,432
    "gemma-7b": 28 * 16 * (256 + 256) * 2,            # 458,752
    "glm-4-9b-chat": 40 * 2 * (128 + 128) * 2,        # 40,960: 2 KV heads of 128
    "internlm3-8b": 48 * 2 * (128 + 128) * 2,         # 49,152: 2 KV heads of 128
    "nemotron-mini-4b": 32 * 8 * (128 + 128) * 2,     # 131,072: 8 KV heads of 128
    "llama-3.1-minitron-4b": 32 * 8 * (128 + 128) * 2,  # 131,072
    "codellama-34b": 48 * 8 * (128 + 128) * 2,        # 196,608: 8 KV heads of 128
    "yi-34b": 60 * 8 * (128 + 128) * 2,               # 245,760: 8 KV heads of 128
    "trinity-mini": 32 * 4 * (128 + 128) * 2,         # 65,536: 4 KV heads of 128 on every layer (windowed or not)
    "kimi-linear-48b-a3b": 6 * (512 + 64) * 2,        # 6,912: its 6 MLA layers of 27
    # Cohere: Command-R (v01) is MHA, 64 KV heads of 128 (1.25 MiB per token); Command-A and R7B window
    # three of every four layers (every layer caches, the windowed ones their last 4096 + ubatch)
    "command-r": 40 * 64 * (128 + 128) * 2,           # 1,310,720
    "command-r-08-2024": 40 * 8 * (128 + 128) * 2,    # 163,840
    "command-r-plus": 64 * 8 * (128 + 128) * 2,       # 262,144
    "command-a": 64 * 8 * (128 + 128) * 2,            # 262,144
    "command-r7b": 32 * 8 * (128 + 128) * 2,          # 131,072
    # built in from memory (docs/SOURCES.md, "Built-in Codestral-22B, Gemma-3-270M and LFM2")
    "codestral-22b": 56 * 8 * (128 + 128) * 2,        # 229,376: 8 KV heads of 128
    "gemma-3-270m": 18 * 1 * (256 + 256) * 2,         # 18,432: Gemma 3 1B's one KV head of 256 (windowed or not)
    # LFM2: only the attention layers cache (6 of 16, 8 of 30, 6 of 24), 8 KV heads of hidden / heads; the conv
    # layers hold a fixed state
    "lfm2-350m": 6 * 8 * (64 + 64) * 2,               # 12,288: 1024 / 16 heads = 64
    "lfm2-700m": 6 * 8 * (64 + 64) * 2,               # 1536 / 24 = 64
    "lfm2-1.2b": 6 * 8 * (64 + 64) * 2,               # 2048 / 32 = 64
    "lfm2-2.6b": 8 * 8 * (64 + 64) * 2,               # 16,384
    "lfm2-8b-a1b": 6 * 8 * (64 + 64) * 2,             # 12,288
}


def test_llama_2_7b():
    # meta-llama/Llama-2-7b-hf: 6.74 B parameters (llama-bench prints "6.74 B" for it)
    c = configs.load("llama-2-7b")
    assert (c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim) == (32, 4096, 32, 32, 128)
    assert round(c.total_params() / 1e9, 2) == 6.74 and c.attention == "gqa" and not c.n_routed_experts


@pytest.mark.parametrize("name", ALL)
def test_kv_bytes_per_token_every_builtin(name):
    c = configs.load(name)
    assert c.kv_bytes_per_token("f16") == KV_F16[name]
    assert c.kv_bytes_per_token("bf16") == KV_F16[name]
    assert c.kv_bytes_per_token("f32") == 2 * KV_F16[name]


def test_kv_bytes_quantized_by_rows():
    glm = configs.load("glm-4.7-flash")
    assert glm.kv_bytes_per_token() == 54144
    # q8_0: latent row 512 = 16 blocks, rope row 64 = 2 blocks, 34 bytes each
    assert glm.kv_bytes_per_token("q8_0") == 47 * (16 + 2) * 34 == 28764
    assert glm.kv_bytes_per_token("q4_0") == 47 * (16 + 2) * 18
    q = configs.load("qwen3-32b")
    # q8_0: 8 K rows + 8 V rows of 128 = 4 blocks each
    assert q.kv_bytes_per_token("q8_0") == 64 * 16 * 4 * 34 == 139264
    # GLM without the latent trick: 20 heads x (256 K + 256 V) x 2 bytes x 47 layers = 940 KiB
    assert glm.kv_bytes_per_token("f16", expanded=True) == 47 * 20 * 512 * 2 == 940 * 1024
    assert glm.kv_elems_per_token_per_layer() == 576
    assert q.kv_elems_per_token_per_layer() == 2048


def test_glm_fields():
    c = configs.load("glm-4.7-flash")
    assert (c.attention, c.n_layers, c.hidden_size, c.n_heads, c.head_dim) == ("mla", 47, 2048, 20, 256)
    assert (c.q_lora_rank, c.kv_lora_rank, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim) == (768, 512, 192, 64, 256)
    assert (c.n_routed_experts, c.n_experts_per_tok, c.n_shared_experts) == (64, 4, 1)
    assert c.shared_expert_intermediate_size == 1536 and c.moe_intermediate_size == 1536
    assert c.first_k_dense_replace == 1 and not c.is_moe_layer(0) and c.is_moe_layer(1) and c.is_moe_layer(46)
    assert (c.router_scoring, c.router_bias, c.norm_topk_prob, c.routed_scaling_factor) == ("sigmoid", True, True, 1.8)
    assert (c.rope_layout, c.rope_dim, c.rope_theta) == ("interleaved", 64, 1e6)
    assert c.rms_norm_eps == 1e-5 and c.latent_norm_eps == 1e-6
    assert c.softmax_scale == 1 / 16
    assert not c.tie_word_embeddings
    with pytest.raises(ValueError, match="layer index"):
        c.is_moe_layer(47)


def test_other_families_fields():
    d = configs.load("deepseek-v2-lite")
    assert d.q_lora_rank is None and d.router_scoring == "softmax" and not d.router_bias
    assert d.n_shared_experts == 2 and d.shared_expert_intermediate_size == 2 * 1408
    assert "q_proj.weight" in d._attention_tensors() and "q_a_proj.weight" not in d._attention_tensors()
    # YaRN mscale: 0.1 * 0.707 * ln(40) + 1, squared, on 1/sqrt(192)
    m = 0.1 * 0.707 * __import__("math").log(40) + 1
    assert d.softmax_scale == pytest.approx(192 ** -0.5 * m * m)
    q = configs.load("qwen3-32b")
    assert q.qk_norm and q.rope_layout == "half" and q.rope_dim == 128 and q.n_routed_experts == 0
    s = configs.load("seed-oss-36b")
    assert s.attention_bias and not s.attention_out_bias and not s.qk_norm
    assert "q_proj.bias" in s._attention_tensors() and "o_proj.bias" not in s._attention_tensors()
    m3 = configs.load("qwen3-30b-a3b")
    assert m3.n_moe_layers == 48 and m3.n_shared_experts == 0 and m3.norm_topk_prob
    assert configs.load("mistral-small-24b").sliding_window is None


def test_glm_params_by_hand():
    c = configs.load("glm-4.7-flash")
    D, V = 2048, 154880
    attn = (D * 768 + 768 + 768 * 20 * 256          # q_a, q_a_layernorm, q_b
            + D * 576 + 512 + 512 * 20 * (192 + 256)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b
            + 20 * 256 * D)                           # o_proj
    expert = 3 * D * 1536
    moe = 64 * D + 64 + 64 * expert + expert          # router, score bias, 64 routed, 1 shared
    total = 2 * V * D + D + 47 * (attn + 2 * D) + 3 * D * 10240 + 46 * moe
    assert c.attention_params() == attn
    assert c.total_params() == total == 29_943_393_920
    active = total - 46 * (64 - 4) * expert
    assert c.active_params() == active
    assert c.active_params(embeddings=False) == active - 2 * V * D
    assert sum(configs._numel(s) for s in c.tensor_shapes().values()) == total


def test_qwen3_32b_params_and_bytes_by_hand():
    c = configs.load("qwen3-32b")
    D, V, L = 5120, 151936, 64
    attn = D * 64 * 128 + 2 * D * 8 * 128 + 64 * 128 * D + 2 * 128
    vectors = D + L * (2 * D + 2 * 128)              # final norm, layer norms, q/k norms
    total = 2 * V * D + D + L * (attn + 2 * D + 3 * D * 25600)
    assert c.total_params() == c.active_params() == total == 32_762_123_264
    assert c.weight_bytes("bf16") == (total - vectors) * 2 + vectors * 4
    # every row is a whole number of q8_0 blocks: 34 bytes per 32 weights
    assert c.weight_bytes("q8_0") == (total - vectors) // 32 * 34 + vectors * 4


def test_weight_bytes_fallback_rows():
    c = configs.load("deepseek-v2-lite")
    # 1408- and 10944-wide down_proj rows are not whole 256-blocks: llama.cpp stores them q5_0
    assert vocab.row_format(vocab.weight_format("q4_K"), 1408).name == "q5_0"
    assert vocab.row_format(vocab.weight_format("q4_K"), 2048).name == "q4_K"
    assert vocab.row_format(vocab.weight_format("q4_0"), 100).name == "f16"
    D, L, E = 2048, 27, 64
    # routed down_proj (1408 wide) and the dense layer's (10944) are stored q5_0; the shared
    # experts' down_proj is 2 x 1408 = 2816 = 11 x 256 wide, so it stays q4_K
    fb_cols = E * D * 1408 * 26 + D * 10944
    router = 26 * E * D                                             # kept f32
    vectors = D + L * (2 * D + 512)
    q4k = c.total_params() - fb_cols - router - vectors
    assert c.weight_bytes("q4_K") == q4k // 256 * 144 + fb_cols // 32 * 22 + (router + vectors) * 4


def test_load_path_and_dict(tmp_path):
    hf = json.load(open(configs.builtin_path("qwen3-32b")))
    p = tmp_path / "mymodel" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(hf))
    a, b, c = configs.load(str(p)), configs.load(p.parent), configs.load(hf)
    assert a.name == b.name == "mymodel"
    assert a == b == configs.load("qwen3-32b").__class__(**{**configs.load("qwen3-32b").__dict__, "name": "mymodel"})
    assert c.total_params() == a.total_params()
    assert configs.load(a) is a
    # transformers v5 layout: rope_theta inside rope_parameters
    v5 = {k: v for k, v in hf.items() if k != "rope_theta"}
    v5["rope_parameters"] = {"rope_type": "default", "rope_theta": 5e5}
    assert configs.load(v5).rope_theta == 5e5
    # HF defaults for behavioural fields
    d = {k: v for k, v in hf.items() if k not in ("rms_norm_eps", "tie_word_embeddings", "rope_theta")}
    c2 = configs.load(d)
    assert (c2.rms_norm_eps, c2.tie_word_embeddings, c2.rope_theta) == (1e-6, False, 10000.0)
    # the input dict is not modified
    assert "rope_theta" not in d and d == {k: v for k, v in hf.items() if k not in ("rms_norm_eps", "tie_word_embeddings", "rope_theta")}


def test_tied_embeddings_counted_once():
    hf = json.load(open(configs.builtin_path("qwen3-32b")))
    untied = configs.load(hf)
    tied = configs.load({**hf, "tie_word_embeddings": True})
    assert untied.total_params() - tied.total_params() == 151936 * 5120
    assert "lm_head.weight" not in tied.tensor_shapes()


def test_qwen3_moe_sparse_layers():
    hf = json.load(open(configs.builtin_path("qwen3-30b-a3b")))
    c = configs.load({**hf, "decoder_sparse_step": 2, "mlp_only_layers": [1]})
    # sparse iff (i + 1) % 2 == 0 and i not in [1]: 3, 5, 7, ... 47
    assert c.moe_layers == tuple(range(3, 48, 2))
    assert c.n_dense_layers == 48 - 23


def test_qwen3_moe_head_dim_defaults_to_hidden_over_heads():
    # Qwen3MoeConfig has no head_dim default (Qwen3Config's is 128): a config.json without one has
    # hidden_size / num_attention_heads, as HF's Qwen3MoeAttention builds it
    raw = {k: v for k, v in json.load(open(configs.builtin_path("qwen3-30b-a3b"))).items() if k != "head_dim"}
    c = configs.load(raw)
    assert c.head_dim == 2048 // 32 == 64
    assert configs.load("qwen3-30b-a3b").head_dim == 128      # the released file states 128
    assert configs.load({**raw, "model_type": "qwen3", "intermediate_size": 6144}).head_dim == 128


def _bad(name, **changes):
    hf = json.load(open(configs.builtin_path(name)))
    for k, v in changes.items():
        if v is KeyError:
            hf.pop(k)
        else:
            hf[k] = v
    return hf


@pytest.mark.parametrize("name,changes,match", [
    ("qwen3-32b", {"model_type": "gpt2"}, r"model_type.*'gpt2'"),
    ("qwen3-32b", {"model_type": KeyError}, r"model_type.*None"),
    ("qwen3-32b", {"hidden_size": KeyError}, r"`hidden_size` is missing"),
    ("qwen3-32b", {"num_attention_heads": 60}, r"`num_attention_heads`=60 .*`num_key_value_heads`=8"),
    ("qwen3-32b", {"num_hidden_layers": 0}, r"`num_hidden_layers` must be >= 1, got 0"),
    ("qwen3-32b", {"hidden_size": "big"}, r"`hidden_size` must be an integer, got 'big'"),
    ("qwen3-32b", {"rms_norm_eps": -1}, r"`rms_norm_eps` must be > 0, got -1"),
    ("qwen3-32b", {"rope_theta": float("inf")}, r"`rope_theta` must be a finite positive number, got inf"),
    ("qwen3-32b", {"partial_rotary_factor": 1.5}, r"`partial_rotary_factor`.*1.5"),
    ("qwen3-32b", {"hidden_act": 3}, r"`hidden_act` must be a string"),
    ("qwen3-32b", {"use_sliding_window": True, "sliding_window": 4096, "layer_types": ["x"]}, r"`layer_types`"),
    ("qwen3-32b", {"intermediate_size": KeyError}, r"`intermediate_size`"),
    ("mistral-small-24b", {"head_dim": KeyError, "num_attention_heads": 48, "num_key_value_heads": 8},
     r"`hidden_size`=5120 is not a multiple of `num_attention_heads`=48"),
    ("glm-4.7-flash", {"num_experts_per_tok": 65}, r"`num_experts_per_tok`=65 .* 64 routed experts"),
    ("glm-4.7-flash", {"kv_lora_rank": KeyError}, r"`kv_lora_rank` is missing"),
    ("glm-4.7-flash", {"qk_rope_head_dim": 63}, r"`qk_rope_head_dim` must be even"),
    ("glm-4.7-flash", {"n_group": 3}, r"`n_group`=3 does not divide"),
    ("glm-4.7-flash", {"n_group": 8, "topk_group": 9}, r"`topk_group`=9 is larger than `n_group`=8"),
    ("glm-4.7-flash", {"topk_method": "greedy"}, r"`topk_method` = 'greedy'"),
    ("glm-4.7-flash", {"mlp_layer_types": ["dense"]}, r"`mlp_layer_types`"),
    ("qwen3-30b-a3b", {"num_experts_per_tok": 129}, r"`num_experts_per_tok`=129"),
    ("qwen3-30b-a3b", {"mlp_only_layers": "none"}, r"`mlp_only_layers`"),
    ("deepseek-v2-lite", {"scoring_func": "sigmoid"}, r"`scoring_func` = 'sigmoid'"),
    ("deepseek-v2-lite", {"rope_scaling": "yarn"}, r"`rope_scaling`"),
    # the priced families
    ("llama-4-maverick", {"moe_layers": [1, 48]}, r"`moe_layers` must list layer indices in \[0, 48\)"),
    ("llama-4-scout", {"no_rope_layers": [1, 0]}, r"`no_rope_layers` must list 0/1 for each of 48 layers"),
    ("llama-4-scout", {"num_experts_per_tok": 17}, r"`num_experts_per_tok`=17 is larger than the 16"),
    ("llama-4-scout", {"rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 4.0,
                                        "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}},
     r"`rope_scaling.high_freq_factor`=1.0 must be >= `low_freq_factor`=4.0"),
    ("minimax-m2", {"rotary_dim": 256}, r"`rotary_dim`=256 is larger than head_dim=128"),
    ("ernie-4.5-21b-a3b", {"moe_k": 0}, r"`moe_k` must be >= 1"),
    ("ernie-4.5-21b-a3b", {"moe_layer_end_index": -2}, r"`moe_layer_end_index` must be >= -1"),
    ("qwen2-57b-a14b", {"shared_expert_intermediate_size": -1}, r"`shared_expert_intermediate_size` must be >= 0"),
    ("glm-4-32b", {"partial_rotary_factor": 0}, r"`partial_rotary_factor`"),
    # hybrids
    ("qwen3.5-35b-a3b", {"linear_num_value_heads": 24}, r"`linear_num_value_heads`=24 is not a multiple of "
                                                       r"`linear_num_key_heads`=16"),
    ("qwen3.5-35b-a3b", {"layer_types": ["linear_attention"] * 39}, r"`layer_types` must list 'linear_attention'"),
    ("qwen3.5-35b-a3b", {"layer_types": ["sliding_attention"] * 40}, r"`layer_types` must list 'linear_attention'"),
    ("qwen3.5-35b-a3b", {"layer_types": ["linear_attention"] * 40}, r"all 40 layers linear attention"),
    ("qwen3.5-35b-a3b", {"full_attention_interval": 0}, r"`full_attention_interval` must be >= 1"),
    ("qwen3.5-27b", {"linear_key_head_dim": KeyError, "linear_value_head_dim": "128"},
     r"`linear_value_head_dim` must be an integer"),
    ("qwen3-next-80b-a3b", {"linear_conv_kernel_dim": 0}, r"`linear_conv_kernel_dim` must be >= 1"),
    ("qwen3-next-80b-a3b", {"shared_expert_intermediate_size": -1}, r"`shared_expert_intermediate_size` must be >= 0"),
    ("command-r", {"layer_norm_eps": 0}, r"`layer_norm_eps` must be > 0"),
    ("command-r", {"num_key_value_heads": 7}, r"`num_attention_heads`=64 is not a multiple of `num_key_value_heads`=7"),
    ("command-a", {"sliding_window_pattern": 0}, r"`sliding_window_pattern` must be >= 1"),
    ("command-a", {"layer_types": ["sliding_attention"] * 3}, r"`layer_types`"),
])
def test_bad_configs(name, changes, match):
    with pytest.raises(ValueError, match=match):
        configs.load(_bad(name, **changes))


def test_bad_sources(tmp_path):
    with pytest.raises(ValueError, match="neither a built-in"):
        configs.load("no-such-model")
    with pytest.raises(TypeError, match="int"):
        configs.load(3)
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        configs.load(str(p))


def test_models_table():
    rows = configs.models_table()
    assert [r["name"] for r in rows] == ALL
    glm = rows[ALL.index("glm-4.7-flash")]
    assert glm["family"] == "MoE + MLA" and glm["n_layers"] == 47
    assert glm["kv_bytes_per_token"] == {"f32": 108288, "f16": 54144, "bf16": 54144, "q8_0": 28764, "q4_0": 15228}
    assert rows[ALL.index("qwen3-32b")]["family"] == "dense GQA"
    # (EXAONE 3.5 2.4B's 80-wide heads are no whole number of q8_0 / q4_0 blocks: those formats left out)
    assert set(rows[ALL.index("exaone-3.5-2.4b")]["kv_bytes_per_token"]) == {"f32", "f16", "bf16"}
    json.dumps(rows)   # the CLI prints it as JSON


@pytest.mark.parametrize("name", ALL)
@pytest.mark.slow
def test_total_params_match_hf_transformers(name):
    # oracle 2: build the HF model on the meta device (no memory, no weights) and count
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d = {k: v for k, v in json.load(open(configs.builtin_path(name))).items() if not k.startswith("_")}
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**d))
    n = sum(p.numel() for p in m.parameters())
    # GLM's e_score_correction_bias (LFM2-MoE's expert_bias) is a buffer in HF, a checkpoint tensor for us
    n += sum(b.numel() for k, b in m.named_buffers() if k.endswith(("e_score_correction_bias", "expert_bias")))
    assert configs.load(name).total_params() == n


# Gemma 3 built-ins (docs/SOURCES.md): the published text_config fields, 5 windowed layers to 1 global
GEMMA = {"gemma-3-27b": (62, 5376, 32, 16, 128, 21504, 168, 27_009_346_304),
         "gemma-3-12b": (48, 3840, 16, 8, 256, 15360, 256, 11_766_034_176),
         "gemma-3-4b": (34, 2560, 8, 4, 256, 10240, 256, 3_880_263_168)}


@pytest.mark.parametrize("name", sorted(GEMMA))
def test_gemma3_builtins(name):
    L, D, H, Hk, Dh, F, qpas, params = GEMMA[name]
    c = configs.load(name)
    assert (c.model_type, c.attention, c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.head_dim,
            c.intermediate_size) == ("gemma3_text", "gqa", L, D, H, Hk, Dh, F)
    assert c.sliding_window == 1024 and c.rope_theta == 1e6 and c.max_position_embeddings == 131072
    assert c.rope_scaling == {"factor": 8.0, "rope_type": "linear"} and c.tie_word_embeddings
    # layers 5, 11, 17, ... are global; the other five of every six attend to 1024 tokens
    assert c.windowed_layers == tuple(i for i in range(L) if (i + 1) % 6 != 0)
    raw = json.load(open(configs.builtin_path(name)))
    assert raw["query_pre_attn_scalar"] == qpas and raw["rope_local_base_freq"] == 10000.0
    assert raw["sliding_window_pattern"] == 6 and len(raw["layer_types"]) == L
    # the text model's parameters as llama.cpp prints them for the GGUF (3.88 B, 11.77 B, 27.01 B)
    assert c.total_params() == params
    assert round(params / 1e9, 2) == {"gemma-3-27b": 27.01, "gemma-3-12b": 11.77, "gemma-3-4b": 3.88}[name]


# Built-ins of issue 23 (docs/SOURCES.md, "Built-in models of issue 23"): total (and active)
# parameters as each model card publishes them, in billions; glmbench's count within 2%. Cards
# count active parameters with the embeddings (Qwen, DeepSeek) or without (GLM-4.5-Air): the third
# entry says which.
PUBLISHED = {
    "llama-3-8b": (8.03, None, None), "llama-3-70b": (70.55, None, None),   # llama-bench's "8.03 B", "70.55 B"
    "llama-3.1-8b": (8.03, None, None), "llama-3.3-70b": (70.6, None, None),
    "qwen3-8b": (8.2, None, None), "qwen3-14b": (14.8, None, None), "qwen2.5-coder-7b": (7.61, None, None),
    "qwen3-235b-a22b": (235, 22, True), "qwen3-coder-30b-a3b": (30.5, 3.3, True),
    "glm-4.5-air": (106, 12, False), "deepseek-v3": (671, 37, True),         # DeepSeek-V3: without its 14B MTP module
    # GLM-5's card: 744B total, 40B active (without its MTP layer); DeepSeek-V3.2: V3's 671B plus a 0.85B indexer
    "glm-5": (744, 40, False), "deepseek-v3.2": (671, None, None),
    "gpt-oss-20b": (20.91, None, None), "gpt-oss-120b": (116.83, None, None),
    # catalog built-ins for published results: llama-bench's params column where it is well known
    # ("13.02 B", "68.98 B", "1.24 B", "3.21 B"), else the model card's count
    "llama-2-13b": (13.02, None, None), "llama-2-70b": (68.98, None, None), "llama-3.1-405b": (405, None, None),
    "llama-3.2-1b": (1.24, None, None), "llama-3.2-3b": (3.21, None, None),
    "mistral-7b": (7.25, None, None), "mistral-nemo": (12.2, None, None), "mistral-large": (123, None, None),
    "mixtral-8x7b": (46.7, 12.9, True), "mixtral-8x22b": (141, 39, True),   # llama-bench's "46.70 B" for 8x7B
    "phi-4": (14.7, None, None), "phi-3-mini": (3.8, None, None),
    "phi-4-mini": (3.84, None, None),   # the hub's 3.84 B (the card's 3.8B): tied, 200064 tokens
    "llama-3.1-70b": (70.6, None, None), "deepseek-r1-distill-llama-70b": (70.6, None, None),
    "deepseek-r1-distill-llama-8b": (8.03, None, None), "qwen2.5-7b": (7.61, None, None),
    "deepseek-r1-distill-qwen-7b": (7.62, None, None), "deepseek-r1-distill-qwen-14b": (14.8, None, None),
    "qwen2.5-coder-32b": (32.8, None, None), "qwq-32b": (32.5, None, None), "deepseek-r1-distill-qwen-32b": (32.8, None, None),
    "devstral-small": (23.6, None, None),
    "deepseek-r1": (671, 37, True), "deepseek-v3.1": (671, 37, True), "glm-4.6": (355, 32, False),
    "kimi-k2": (1030, None, None),   # the hub's 1.03T; the card's "32B activated" is rounded (32.9 B here with embeddings)
    "qwen2.5-0.5b": (0.49, None, None), "qwen2.5-1.5b": (1.54, None, None), "qwen2.5-3b": (3.09, None, None),
    "qwen2.5-14b": (14.7, None, None), "qwen2.5-32b": (32.5, None, None), "qwen2.5-72b": (72.7, None, None),
    "qwen3-0.6b": (0.6, None, None), "qwen3-1.7b": (1.7, None, None), "qwen3-4b": (4.0, None, None),
    "qwen3-coder-480b-a35b": (480, 35, True), "glm-4.5": (355, 32, False),
    "gemma-2-2b": (2.61, None, None), "gemma-2-9b": (9.24, None, None), "gemma-2-27b": (27.2, None, None),
    "gemma-3-1b": (1.0, None, None),
    # families priced, not run: llama-bench's params column ("32.57 B" GLM-4-32B, "107.77 B" Llama 4
    # Scout, "228.69 B" MiniMax-M2, "21.83 B" ERNIE-4.5-21B-A3B) or the model card's count; active with
    # the embeddings (Llama 4's "17B active", Qwen2's "A14B", Qwen1.5-MoE's "2.7B"); MiniMax-M2's "10B"
    # and ERNIE's "3B" active are rounded past 2% and not checked
    "glm-4-32b": (32.57, None, None), "glm-4-9b": (9.4, None, None),
    "llama-4-scout": (107.77, 17, True), "llama-4-maverick": (400, 17, True),
    "minimax-m2": (228.69, None, None), "minimax-m2.1": (228.69, None, None), "ernie-4.5-21b-a3b": (21.83, None, None),
    "qwen2-57b-a14b": (57.41, 14, True), "qwen1.5-moe-a2.7b": (14.3, 2.7, True),
    # hybrids: the names' sizes (the 397B card counts its vision tower too); the active sizes in the
    # names ("A3B", "A10B", "A17B": 3.25 B without the embeddings for Qwen3-Next, 3.45 B, 9.77 B and
    # 17.35 B with them for Qwen3.5) are rounded, some past 2%, and not checked
    "qwen3-next-80b-a3b": (80, None, None), "qwen3.5-35b-a3b": (35, None, None), "qwen3.5-122b-a10b": (122, None, None),
    "qwen3.5-397b-a17b": (397, None, None), "qwen3.5-27b": (27, None, None), "qwen3.5-9b": (9, None, None),
    # Cohere: llama-bench's "34.98 B" for command-r 35B, the names' sizes for the others (R7B: 8.03 B)
    "command-r": (34.98, None, None), "command-r-08-2024": (32, None, None), "command-r-plus": (104, None, None),
    "command-a": (111, None, None), "command-r7b": (8.03, None, None),
    # OLMoE-1B-7B: the card's 6.9 B total, 1.3 B active (with the embeddings; llama-bench "6.92 B"); Granite 3.3
    # 8B's card 8.17 B; Granite 3.1 3B-A800M's name, 800 M active without the embeddings
    "olmoe-1b-7b-0924": (6.9, 1.3, True), "granite-3.3-8b-instruct": (8.17, None, None),
    "granite-3.1-3b-a800m-instruct": (3.3, 0.8, False),
    # OLMo 2 7B's card 7.30 B (OLMo 3 7B: the name's 7B); SmolLM3's name, 3B (llama-bench "3.08 B"); EXAONE 4.0
    # 32B's card 32.0 B, 30.95 B without the embeddings
    "olmo-2-1124-7b": (7.30, None, None), "olmo-3-7b": (7.3, None, None), "smollm3-3b": (3.08, None, None),
    "exaone-4.0-32b": (32.0, 30.95, False),
    # EXAONE 3.5's cards: 30.95 B / 6.98 B / 2.14 B without the embeddings (32B / 7.8B / 2.4B with them); ERNIE-4.5-0.3B's
    # 0.36 B
    "exaone-3.5-32b": (32.0, 30.95, False), "exaone-3.5-7.8b": (7.82, 6.98, False),
    "exaone-3.5-2.4b": (2.41, 2.14, False), "ernie-4.5-0.3b": (0.36, None, None),
    # dots.llm1's card: 142B total, 14B activated (with the embeddings; llama.cpp: 62 layers -> 142B)
    "dots.llm1.inst": (142, 14, True),
    # AFM-4.5B: the name's 4.5B is its size class; the repository's count, 4.62 B (as recalled), is the one checked
    "afm-4.5b": (4.62, None, None),
    # Apertus 8B / 70B: the names' 8B and 70B (8.05 B and 70.60 B here)
    "apertus-8b": (8.05, None, None), "apertus-70b": (70.6, None, None),
    # Gemma 1's published counts (tied embeddings counted once): 2.51 B, 8.54 B
    "gemma-2b": (2.51, None, None), "gemma-7b": (8.54, None, None),
    # GLM-4-9B-Chat's card 9.4B (llama-bench "9.40 B")
    "glm-4-9b-chat": (9.4, None, None),
    # InternLM3-8B: 8.80 B (llama-bench's params column for its file; the card's "8B" is rounded past 2%)
    "internlm3-8b": (8.80, None, None),
    # Trinity Mini: the card's 26B total (26.12 B here); its "3B active" lies between the counts with and without the
    # embeddings (3.47 B / 2.65 B: tests/test_afmoe_nemotron.py checks that)
    "trinity-mini": (26.0, None, None),
    # Nemotron-Mini-4B-Instruct and Llama-3.1-Minitron-4B-Width: the repositories' 4.19B and 4.51B
    "nemotron-mini-4b": (4.19, None, None), "llama-3.1-minitron-4b": (4.51, None, None),
    # CodeLlama-34B and Yi-34B (written from memory): the published 33.7B and 34.4B
    "codellama-34b": (33.7, None, None), "yi-34b": (34.4, None, None),
    # Codestral-22B-v0.1: the card's 22.2B (22.25 B here)
    "codestral-22b": (22.2, None, None),
    # Gemma-3-270M: the card's 270M (268.10 M here: 170 M of embeddings, 100 M in the layers)
    "gemma-3-270m": (0.27, None, None),
    # LFM2: the cards' counts (354,483,968, 742,489,344, 1,170,340,608 and 2,569,272,320, each matched to the parameter
    # by tests/test_builtins_recalled.py); LFM2-8B-A1B's 8.3B total (8.34 B here); its "1.5B active" is rounded
    # past 2% (1.56 B with the embeddings) and not checked here
    "lfm2-350m": (0.354, None, None), "lfm2-700m": (0.742, None, None), "lfm2-1.2b": (1.17, None, None),
    "lfm2-2.6b": (2.57, None, None), "lfm2-8b-a1b": (8.34, None, None),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_issue23_builtins_match_published_parameter_counts(name):
    total, active, with_embeddings = PUBLISHED[name]
    c = configs.load(name)
    assert abs(c.total_params() / 1e9 / total - 1) < 0.02
    if active is not None:
        assert abs(c.active_params(embeddings=with_embeddings) / 1e9 / active - 1) < 0.02
    raw = json.load(open(configs.builtin_path(name)))
    assert "huggingface.co/" in raw["_source"]


def test_issue23_builtins_structure():
    v3 = configs.load("deepseek-v3")
    assert (v3.attention, v3.router_scoring, v3.topk_method, v3.n_group, v3.topk_group, v3.first_k_dense_replace) == \
        ("mla", "sigmoid", "noaux_tc", 8, 4, 3)
    assert v3.rope_type == "yarn" and v3.n_layers == 61
    oss = configs.load("gpt-oss-20b")
    assert oss.windowed_layers == tuple(range(0, 24, 2)) and oss.sliding_window == 128
    assert (oss.n_routed_experts, oss.n_experts_per_tok, oss.expert_bias, oss.attention_sinks) == (32, 4, True, True)
    air = configs.load("glm-4.5-air")
    assert (air.model_type, air.rope_dim, air.head_dim, air.n_layers, air.router_scoring) == ("glm4_moe", 64, 128, 46, "sigmoid")
    l31 = configs.load("llama-3.1-8b")
    assert l31.rope_type == "llama3" and l31.max_position_embeddings == 131072
    assert configs.load("llama-3-8b").rope_type == "default"


def test_glm_flash_states_its_router():
    raw = json.load(open(configs.builtin_path("glm-4.7-flash")))
    assert raw["scoring_func"] == "sigmoid" and raw["topk_method"] == "noaux_tc"
    c = configs.load("glm-4.7-flash")
    assert c.router_scoring == "sigmoid" and c.router_bias
    with pytest.raises(ValueError, match="scoring_func"):
        configs.load({**{k: v for k, v in raw.items() if not k.startswith("_")}, "scoring_func": "softmax"})


def test_kimi_k2_config_reads_as_deepseek_v3():
    # Kimi-K2's published config.json says model_type "kimi_k2" (remote code: DeepSeek-V3's)
    raw = {k: v for k, v in json.load(open(configs.builtin_path("kimi-k2"))).items() if not k.startswith("_")}
    c = configs.load({**raw, "model_type": "kimi_k2"})
    assert c.model_type == "deepseek_v3" and c.attention == "mla" and c.n_routed_experts == 384
    assert c.total_params() == configs.load("kimi-k2").total_params()
    assert (c.n_heads, c.first_k_dense_replace, c.n_group, c.topk_group) == (64, 1, 1, 1)


# Families priced, not run (configs.PRICED_ONLY): each built from HF transformers' own tiny model of
# the family (oracle: the parameter count of the model HF builds) and read for its structure.
def _hf_tiny(family):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    small = dict(vocab_size=64, hidden_size=32, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if family == "glm4":
        hc, M = transformers.Glm4Config(**small, head_dim=8, intermediate_size=48), transformers.Glm4ForCausalLM
    elif family == "llama4_text":
        hc = transformers.Llama4TextConfig(**small, head_dim=8, intermediate_size=16, intermediate_size_mlp=48,
                                           num_local_experts=4, interleave_moe_layer_step=2, moe_layers=None,
                                           attention_chunk_size=16)
        M = transformers.Llama4ForCausalLM
    elif family == "minimax_m2":
        hc = transformers.MiniMaxM2Config(**small, head_dim=8, intermediate_size=16, num_local_experts=4,
                                          num_experts_per_tok=2)
        M = transformers.MiniMaxM2ForCausalLM
    elif family == "ernie4_5_moe":
        hc = transformers.Ernie4_5_MoeConfig(**small, intermediate_size=48, moe_intermediate_size=16, moe_num_experts=4,
                                             moe_k=2, moe_num_shared_experts=2, moe_layer_start_index=1,
                                             moe_layer_end_index=6)
        M = transformers.Ernie4_5_MoeForCausalLM
    elif family in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"):
        lin = dict(head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                   linear_value_head_dim=8, linear_conv_kernel_dim=4,
                   layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention",
                                "full_attention", "linear_attention", "linear_attention", "full_attention"])
        if family == "qwen3_next":
            hc = transformers.Qwen3NextConfig(**small, **lin, intermediate_size=48, moe_intermediate_size=16,
                                              num_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=24,
                                              mlp_only_layers=[2])
            M = transformers.Qwen3NextForCausalLM
        elif family == "qwen3_5_text":
            hc, M = transformers.Qwen3_5TextConfig(**small, **lin, intermediate_size=48), transformers.Qwen3_5ForCausalLM
        else:
            hc = transformers.Qwen3_5MoeTextConfig(**small, **lin, moe_intermediate_size=16, num_experts=4,
                                                   num_experts_per_tok=2, shared_expert_intermediate_size=24)
            M = transformers.Qwen3_5MoeForCausalLM
    elif family == "kimi_linear":
        hc = transformers.KimiLinearConfig(**{**small, "num_key_value_heads": 4}, kv_lora_rank=16, qk_rope_head_dim=4,
                                           qk_nope_head_dim=8, v_head_dim=8, linear_head_dim=8, linear_num_heads=4,
                                           num_experts=4, num_experts_per_token=2, moe_intermediate_size=16,
                                           intermediate_size=48, num_expert_group=1, topk_group=1,
                                           layer_types=["linear_attention", "linear_attention", "linear_attention",
                                                        "full_attention"] * 2,
                                           mlp_layer_types=["dense"] + ["sparse"] * 7)
        M = transformers.KimiLinearForCausalLM
    elif family == "ministral3":
        hc = transformers.Ministral3Config(**small, head_dim=8, intermediate_size=48)
        M = transformers.Ministral3ForCausalLM
    elif family == "gemma4_text":
        hc = transformers.Gemma4TextConfig(**small, head_dim=8, global_head_dim=16, num_global_key_value_heads=1,
                                           attention_k_eq_v=True, intermediate_size=48, sliding_window=16,
                                           hidden_size_per_layer_input=4, vocab_size_per_layer_input=64,
                                           num_kv_shared_layers=2, enable_moe_block=True, num_experts=4,
                                           top_k_experts=2, moe_intermediate_size=16)
        M = transformers.Gemma4ForCausalLM
    elif family == "gemma3n_text":   # AltUp, LAuReL, PLE; the last 3 layers share the cache of layer 3
        hc = transformers.Gemma3nTextConfig(**small, head_dim=8, intermediate_size=48, sliding_window=16,
                                            hidden_size_per_layer_input=4, vocab_size_per_layer_input=64,
                                            num_kv_shared_layers=3, laurel_rank=4)
        M = transformers.Gemma3nForCausalLM
    elif family in ("hunyuan_v1_dense", "hunyuan_v1_moe"):   # q / k norms after rope; experts beside a shared MLP
        if family == "hunyuan_v1_dense":
            hc, M = transformers.HunYuanDenseV1Config(**small, head_dim=8, intermediate_size=48), \
                transformers.HunYuanDenseV1ForCausalLM
        else:
            hc = transformers.HunYuanMoEV1Config(**small, head_dim=8, intermediate_size=16, num_experts=4, moe_topk=2)
            M = transformers.HunYuanMoEV1ForCausalLM
    elif family == "phimoe":   # biased LayerNorms, q/k/v/o and lm_head biases, every layer MoE
        hc = transformers.PhimoeConfig(**small, head_dim=8, intermediate_size=16, num_local_experts=4,
                                       num_experts_per_tok=2, attention_bias=True, lm_head_bias=True)
        M = transformers.PhimoeForCausalLM
    elif family == "falcon_h1":   # attention and Mamba-2 in every layer (a gated norm weight: mamba_rms_norm)
        hc = transformers.FalconH1Config(**small, head_dim=8, intermediate_size=48, mamba_d_ssm=32, mamba_n_heads=4,
                                         mamba_n_groups=2, mamba_d_state=8, mamba_rms_norm=True)
        M = transformers.FalconH1ForCausalLM
    elif family in ("lfm2", "lfm2_moe"):   # gated short convolutions beside GQA (layer_types)
        lt = ["conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv", "full_attention"]
        if family == "lfm2":
            hc = transformers.Lfm2Config(**small, intermediate_size=48, layer_types=lt, block_multiple_of=16)
            M = transformers.Lfm2ForCausalLM
        else:
            hc = transformers.Lfm2MoeConfig(**small, intermediate_size=48, moe_intermediate_size=16, num_experts=4,
                                            num_experts_per_tok=2, num_dense_layers=1, layer_types=lt)
            M = transformers.Lfm2MoeForCausalLM
    elif family in ("glm_moe_dsa", "deepseek_v32"):   # MLA + MoE + the lightning indexer (DSA)
        dsa = dict(**{**small, "num_key_value_heads": 4}, q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8,
                   qk_nope_head_dim=8, v_head_dim=8, intermediate_size=48, moe_intermediate_size=16, n_routed_experts=4,
                   num_experts_per_tok=2, index_n_heads=2, index_head_dim=8, index_topk=4, first_k_dense_replace=1)
        if family == "glm_moe_dsa":
            hc, M = transformers.GlmMoeDsaConfig(**dsa), transformers.GlmMoeDsaForCausalLM
        else:
            hc = transformers.DeepseekV32Config(**dsa, n_group=1, topk_group=1)
            M = transformers.DeepseekV32ForCausalLM
    elif family == "cohere":
        hc = transformers.CohereConfig(**small, intermediate_size=48, use_qk_norm=True)
        M = transformers.CohereForCausalLM
    elif family == "cohere2":
        hc = transformers.Cohere2Config(**small, intermediate_size=48, sliding_window=16)
        M = transformers.Cohere2ForCausalLM
    else:
        hc = transformers.Qwen2MoeConfig(**small, intermediate_size=48, moe_intermediate_size=16, num_experts=4,
                                         num_experts_per_tok=2, shared_expert_intermediate_size=24, mlp_only_layers=[2])
        M = transformers.Qwen2MoeForCausalLM
    return hc.to_dict(), M(hc)


# (DeciLM, nemotron-nas: transformers 5.25 ships none; counted by DeciLM's own formula in tests/test_deci_exaone_ernie.py)
@pytest.mark.parametrize("family", sorted(set(configs.PRICED_ONLY) - {"nemotron-nas"}) + list(configs.LAYERNORM_FAMILIES)
                         + list(configs.LINEAR_FAMILIES) + list(configs.GEMMA4_FAMILIES)
                         + ["hunyuan_v1_dense", "hunyuan_v1_moe", "phimoe"])
def test_priced_families_match_hf_parameter_counts(family):
    d, m = _hf_tiny(family)
    c = configs.from_hf(d)
    n = sum(p.numel() for p in m.parameters())
    # the routers' correction biases, buffers HF's checkpoints store (DeepSeek's, LFM2-MoE's expert_bias)
    n += sum(b.numel() for k, b in m.named_buffers() if k.endswith(("e_score_correction_bias", "expert_bias")))
    assert c.total_params() == n
    # every HF parameter tensor has its count in ours (names differ: fused gate_up, stacked experts)
    # (Gemma 4's layer_scalar, a buffer HF's checkpoint stores, is a tensor of ours)
    scalars = sum(b.numel() for k, b in m.named_buffers() if k.endswith("layer_scalar"))
    assert sum(configs._numel(s) for s in c.tensor_shapes().values()) == n + scalars
    if family in configs.PRICED_ONLY:
        assert c.forward_unsupported() and configs.PRICED_ONLY[c.model_type] in c.forward_unsupported()[-1]
    elif family in configs.LAYERNORM_FAMILIES:   # Cohere's families run in Model (tests/test_model_hf.py)
        assert c.forward_unsupported() == [] and c.layer_norm and c.n_layer_norms == 1
    else:   # so do the hybrids, Hunyuan and Phi-3.5-MoE
        assert c.forward_unsupported() == []
    expect_moe = {"glm4": (), "llama4_text": (1, 3, 5, 7), "minimax_m2": tuple(range(8)),
                  "ernie4_5_moe": (1, 2, 3, 4, 5, 6), "qwen2_moe": (0, 1, 3, 4, 5, 6, 7),
                  "qwen3_next": (0, 1, 3, 4, 5, 6, 7), "qwen3_5_text": (), "qwen3_5_moe_text": tuple(range(8)),
                  "cohere": (), "cohere2": (), "kimi_linear": tuple(range(1, 8)),
                  "gemma4_text": tuple(range(8)), "ministral3": (), "falcon_h1": (),
                  "glm_moe_dsa": tuple(range(1, 8)), "deepseek_v32": tuple(range(1, 8)),
                  "lfm2": (), "lfm2_moe": tuple(range(1, 8)), "gemma3n_text": (),
                  "hunyuan_v1_dense": (), "hunyuan_v1_moe": tuple(range(8)), "phimoe": tuple(range(8))}[family]
    assert c.moe_layers == expect_moe
    if family in configs.LINEAR_FAMILIES:   # the layer_types' linear layers; the others cache
        assert c.linear_layers == (0, 2, 3, 5, 6) and c.attention_layers == (1, 4, 7) and c.attn_output_gate
        assert c.kv_bytes_per_token("f16") == 3 * 2 * (8 + 8) * 2
        # per linear layer: 3 steps of 2*2*8 + 4*8 conv channels and 4 heads' 8 x 8 states, f32
        assert c.recurrent_state_bytes() == 5 * 4 * (3 * 64 + 4 * 8 * 8)
        # every tensor HF builds, by name (our experts stacked, HF's gate_up fused)
        names = {k for k, _ in m.named_parameters() if ".experts." not in k and "shared_expert" not in k}
        ours = {k for k in c.tensor_shapes() if ".experts." not in k and "shared_expert" not in k}
        assert names == ours
    if family == "llama4_text":   # rope layers chunked (every 4th global), one shared expert, dense MLP 48 wide
        assert c.windowed_layers == (0, 1, 2, 4, 5, 6) and c.window_chunked and c.sliding_window == 16
        assert (c.n_experts_per_tok, c.shared_expert_intermediate_size, c.intermediate_size) == (1, 16, 48)
    elif family == "cohere2":     # every 4th layer global, the others windowed (sliding_window_pattern 4)
        assert c.windowed_layers == (0, 1, 2, 4, 5, 6) and not c.window_chunked and c.sliding_window == 16
    elif family == "gemma4_text":  # 5 sliding : 1 full, the last layer full; the last 2 share layers 4 and 5's cache
        assert c.windowed_layers == (0, 1, 2, 3, 4, 6) and c.cache_layers == tuple(range(6))
        assert (c.kv_source(6), c.kv_source(7)) == (4, 5) and c.shared_expert_intermediate_size == 48
        assert c.kv_bytes_per_token("f16") == (5 * 2 * 8 + 1 * 16) * 2 * 2
    elif family == "gemma3n_text":  # every 5th layer full; the last 3 (windowed) share layer 3's cache
        assert c.windowed_layers == (0, 1, 2, 3, 5, 6, 7) and c.cache_layers == tuple(range(5))
        assert [c.kv_source(i) for i in (5, 6, 7)] == [3, 3, 3] and c.kv_bytes_per_token("f16") == 5 * 2 * 16 * 2
    else:
        assert not c.window_chunked and not c.windowed_layers


def test_priced_families_refused_by_the_forward_pass():
    from glmbench.models.model import Model
    with pytest.raises(ValueError, match="priced, not run"):
        Model("glm-4-9b")


def test_llama4_builtins():
    s, m = configs.load("llama-4-scout"), configs.load("llama-4-maverick")
    assert (s.n_routed_experts, m.n_routed_experts, s.n_moe_layers, m.n_moe_layers) == (16, 128, 48, 24)
    assert m.moe_layers == tuple(range(1, 48, 2)) and m.intermediate_size == 16384
    for c in (s, m):   # the rope layers chunked to 8192, every 4th layer global
        assert c.window_chunked and c.sliding_window == 8192
        assert c.windowed_layers == tuple(i for i in range(48) if (i + 1) % 4)
    # Scout's llama3 rope scaling has low_freq_factor == high_freq_factor (1.0): no blended band; the
    # frequencies as HF computes them (float32)
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    hc = transformers.Llama4TextConfig(rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=16.0,
                                                            high_freq_factor=1.0, low_freq_factor=1.0,
                                                            original_max_position_embeddings=8192))
    inv, _ = ROPE_INIT_FUNCTIONS["llama3"](hc, "cpu")
    np.testing.assert_allclose(s.rope_inv_freq(), inv.double().numpy(), rtol=1e-6)
    plain = 1.0 / 500000.0 ** (np.arange(0, 128, 2) / 128)
    r = plain / s.rope_inv_freq()        # each pair kept (1) or divided by the factor (16), none between
    assert np.all(np.isclose(r, 1, rtol=1e-9) | np.isclose(r, 16, rtol=1e-9))
    assert np.isclose(r, 16, rtol=1e-9).sum() == (2 * np.pi / plain > 8192).sum() > 0


def test_minimax_m2_and_glm4_structure():
    mm = configs.load("minimax-m2")
    assert (mm.rope_dim, mm.head_dim, mm.router_scoring, mm.router_bias, mm.qk_norm_all_heads) == \
        (64, 128, "sigmoid", True, True)
    assert mm.tensor_shapes()["model.layers.0.self_attn.q_norm.weight"] == (48 * 128,)
    g = configs.load("glm-4-32b")
    assert (g.rope_dim, g.rope_layout, g.attention_bias, g.attention_out_bias, g.n_layer_norms) == \
        (64, "interleaved", True, False, 4)
    assert "model.layers.0.post_mlp_layernorm.weight" in g.tensor_shapes()
    q = configs.load("qwen2-57b-a14b")
    assert q.shared_expert_gate and q.tensor_shapes()["model.layers.0.mlp.shared_expert_gate.weight"] == (1, 3584)
    with pytest.raises(ValueError, match="use_bias"):
        configs.from_hf(dict(json.load(open(configs.builtin_path("ernie-4.5-21b-a3b"))), use_bias=True))
    with pytest.raises(ValueError, match="shared_intermediate_size"):
        configs.from_hf(dict(json.load(open(configs.builtin_path("minimax-m2"))), shared_intermediate_size=512))


def test_mistral3_wrapper_reads_its_text_model():
    """Mistral Small 3.1 / 3.2 (model_type mistral3): the text_config's own family, Mistral's by default
    (Mistral3Config); Ministral 3's text model (ministral3) is Mistral's layers without a window, priced only
    (its attention temperature past original_max_position_embeddings is not in Model)."""
    text = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8, vocab_size=100)
    m = configs.from_hf({"model_type": "mistral3", "text_config": {**text, "sliding_window": None}})
    assert m.model_type == "mistral" and m.sliding_window is None and m.forward_unsupported() == []
    assert m.total_params() == configs.from_hf({**text, "model_type": "mistral", "sliding_window": None}).total_params()
    yarn = {"type": "yarn", "rope_theta": 1e6, "factor": 16.0, "original_max_position_embeddings": 16384,
            "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}
    mi = configs.from_hf({"model_type": "mistral3", "text_config": {**text, "model_type": "ministral3",
                                                                    "rope_parameters": yarn}})
    assert mi.model_type == "ministral3" and mi.sliding_window is None and mi.head_dim == 128 and mi.rope_type == "yarn"
    assert "llama_4_scaling_beta" in mi.forward_unsupported()[-1]


# the multimodal wrappers (configs._WRAPPERS), tiny: HF builds the wrapper model from these (AutoConfig.for_model)
_TXT = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=8, intermediate_size=48)
_LIN = dict(linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
            layer_types=["linear_attention", "full_attention"])
_QVIS = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=16, out_hidden_size=32)
_WRAPPED = {
    "mistral3": dict(model_type="mistral3", text_config=dict(model_type="mistral", **_TXT)),
    "gemma3": dict(model_type="gemma3", text_config=dict(model_type="gemma3_text", **_TXT), mm_tokens_per_image=4,
                   vision_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                                      image_size=28, patch_size=14)),
    "llama4": dict(model_type="llama4", text_config=dict(model_type="llama4_text", **_TXT, intermediate_size_mlp=48,
                                                         num_local_experts=2),
                   vision_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                                      image_size=28, patch_size=14, vision_output_dim=32, projector_input_dim=32,
                                      projector_output_dim=32)),
    "qwen3_5": dict(model_type="qwen3_5", text_config=dict(model_type="qwen3_5_text", **_TXT, **_LIN),
                    vision_config=_QVIS),
    "qwen3_5_moe": dict(model_type="qwen3_5_moe", vision_config=_QVIS,
                        text_config=dict(model_type="qwen3_5_moe_text", **_TXT, **_LIN, num_experts=2,
                                         num_experts_per_tok=1, moe_intermediate_size=8,
                                         shared_expert_intermediate_size=8)),
    "gemma4": dict(model_type="gemma4", text_config=dict(model_type="gemma4_text", **_TXT, global_head_dim=16,
                                                         hidden_size_per_layer_input=0,
                                                         vocab_size_per_layer_input=64)),
}


def _wrapped(mt, top, text):
    d = json.loads(json.dumps(_WRAPPED[mt]))
    if top is not KeyError:         # (KeyError: the field absent)
        d["tie_word_embeddings"] = top
    if text is not KeyError:
        d["text_config"]["tie_word_embeddings"] = text
    return d


@pytest.mark.parametrize("mt", sorted(_WRAPPED))
def test_wrapper_ties_as_hf_does(mt):
    """A wrapper config's top-level tie_word_embeddings against its text_config's: transformers 5.25 ties by the
    wrapper's field (all but Llama 4, whose text model ties by its own); glmbench prices the lm_head the same way
    (oracle: the HF wrapper model built from the config, its output embedding the input's or not)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    for top, text in ((True, False), (False, True)):
        d = _wrapped(mt, top, text)
        with torch.device("meta"):
            m = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.for_model(**d))
        hf_tied = m.get_output_embeddings().weight is m.get_input_embeddings().weight
        c = configs.from_hf(d)
        assert c.tie_word_embeddings == hf_tied == (text if mt == "llama4" else top), (mt, top, text)
        assert ("lm_head.weight" in c.tensor_shapes()) == (not hf_tied)


@pytest.mark.parametrize("mt", sorted(_WRAPPED))
def test_wrapper_tie_absent_at_top_level_takes_the_text_configs(mt):
    # (a transformers 4 file: Mistral Small 3.1's config.json states neither, its checkpoint holds an lm_head)
    for text in (True, False):
        assert configs.from_hf(_wrapped(mt, KeyError, text)).tie_word_embeddings == text
    assert not configs.from_hf(_wrapped("mistral3", KeyError, KeyError)).tie_word_embeddings  # MistralConfig's default
    assert configs.from_hf(_wrapped("gemma3", KeyError, KeyError)).tie_word_embeddings        # Gemma3TextConfig's


@pytest.mark.parametrize("bad", [None, "false", 0])
def test_wrapper_top_level_tie_must_be_a_bool(bad):
    with pytest.raises(ValueError, match=r"`tie_word_embeddings` \(top level of the 'gemma3' config\)"):
        configs.from_hf(_wrapped("gemma3", bad, True))


_MLP_BIAS_TINY = {
    "llama": dict(_TXT),
    "seed_oss": dict(_TXT),
    "deepseek_v2": dict(_TXT, num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=4,
                        qk_nope_head_dim=8, v_head_dim=8, n_routed_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=16, n_shared_experts=2, first_k_dense_replace=1),
    "granite": dict(_TXT),
    "exaone": dict(_TXT),       # (HF's LlamaForCausalLM)
    "arcee": dict(_TXT),        # (ArceeMLP: up and down biased, no gate)
}


# (DeciLM, nemotron-nas: transformers 5.25 ships none; its MLP biases: tests/test_deci_exaone_ernie.py. InternLM3, whose
# config refuses an MLP bias without the attention's: tests/test_gemma1_glm_internlm3.py; Nemotron's biased MLP Model
# runs: tests/test_model_hf.py, tests/test_afmoe_nemotron.py)
@pytest.mark.parametrize("mt", [m for m in configs.MLP_BIAS_FAMILIES if m not in ("nemotron-nas", "internlm3", "nemotron")])
def test_mlp_bias_is_priced_as_hf_builds_it(mt):
    """mlp_bias (LlamaMLP / SeedOssMLP / DeepseekV2MLP / GraniteMLP: gate, up and down biased; DeepSeek-V2's shared experts
    are such an MLP, its routed experts are not): the biases counted, tensor by tensor, as HF builds them; Model
    refuses the config (its MLP adds no bias) rather than run it without them."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    d = dict(_MLP_BIAS_TINY[mt], model_type=mt)
    assert not configs.from_hf(d).mlp_bias       # (HF's default: false)
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**{**d, "mlp_bias": True}))
    c = configs.from_hf({**d, "mlp_bias": True})
    assert c.mlp_bias and c.total_params() == sum(p.numel() for p in m.parameters())
    hf_biases = {k: tuple(p.shape) for k, p in m.named_parameters() if ".mlp." in k and k.endswith(".bias")}
    ours = {k: s for k, s in c.tensor_shapes().items() if ".mlp." in k and k.endswith(".bias")}
    assert hf_biases and ours == hf_biases
    assert c.total_params() > configs.from_hf(d).total_params()
    assert any("mlp_bias" in x for x in c.forward_unsupported())
    from glmbench.models.model import Model
    with pytest.raises(ValueError, match="mlp_bias"):
        Model(c)


def test_mlp_bias_must_be_a_bool():
    with pytest.raises(ValueError, match=r"`mlp_bias` must be true or false, got 'yes'"):
        configs.from_hf(dict(_TXT, model_type="llama", mlp_bias="yes"))


@pytest.mark.parametrize("name", ["glm-4.7-flash", "deepseek-v2-lite", "deepseek-v3", "glm-4.5-air", "glm-5"])
def test_first_k_dense_replace_out_of_range_is_named(name):
    L = json.load(open(configs.builtin_path(name)))["num_hidden_layers"]
    for bad in (-1, L + 1, 10 ** 6):
        with pytest.raises(ValueError, match=rf"`first_k_dense_replace` must be in \[0, {L}\], got {bad}"):
            configs.load(_bad(name, first_k_dense_replace=bad))
    # the ends of the range: every layer dense, every layer MoE
    assert configs.load(_bad(name, first_k_dense_replace=L)).moe_layers == ()
    assert configs.load(_bad(name, first_k_dense_replace=0)).moe_layers == tuple(range(L))


@pytest.mark.parametrize("bad,match", [(-1, r"`num_nextn_predict_layers` must be >= 0, got -1"),
                                       ("1", r"`num_nextn_predict_layers` must be an integer")])
def test_num_nextn_predict_layers_is_checked(bad, match):
    with pytest.raises(ValueError, match=match):
        configs.load(_bad("glm-4.5-air", num_nextn_predict_layers=bad))
    assert configs.load(_bad("glm-4.5-air", num_nextn_predict_layers=0)).total_params() == \
        configs.load("glm-4.5-air").total_params()


@pytest.mark.parametrize("name", ["minimax-m2", "nemotron-h-8b"])
def test_attention_bias_ignored_where_hf_ignores_it(name):
    # MiniMaxM2Attention and NemotronHAttention build q/k/v/o without a bias whatever attention_bias says
    c = configs.load(_bad(name, attention_bias=True))
    assert not c.attention_bias and not c.attention_out_bias
    assert not any(k.endswith("_proj.bias") and ".self_attn." in k for k in c.tensor_shapes())
    assert c.total_params() == configs.load(name).total_params()


@pytest.mark.parametrize("mt", ["llama", "qwen3", "gemma2", "cohere"])
def test_attention_bias_priced_where_hf_builds_it(mt):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    d = dict(_TXT, model_type=mt, attention_bias=True)
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**d))
    c = configs.from_hf(d)
    hf_biases = {k: tuple(p.shape) for k, p in m.named_parameters() if k.endswith(".bias")}
    assert hf_biases and {k: s for k, s in c.tensor_shapes().items() if k.endswith(".bias")} == hf_biases
    assert c.total_params() == sum(p.numel() for p in m.parameters())


def test_nemotron_h_use_bias_is_refused():
    # HF's NemotronHMamba2Mixer biases in_proj / out_proj by use_bias (not modelled: refused, not dropped)
    with pytest.raises(ValueError, match=r"`use_bias` = true"):
        configs.load(_bad("nemotron-h-8b", use_bias=True))
    assert configs.load(_bad("nemotron-h-8b", use_bias=False)).total_params() == \
        configs.load("nemotron-h-8b").total_params()


def test_bidirectional_gemma_is_refused():
    # Gemma3TextModel with use_bidirectional_attention masks nothing (EmbeddingGemma); Gemma 4's "all" likewise
    with pytest.raises(ValueError, match=r"`use_bidirectional_attention` = true"):
        configs.load(_bad("gemma-3-1b", use_bidirectional_attention=True))
    with pytest.raises(ValueError, match=r"`use_bidirectional_attention` = 'all'"):
        configs.load(_bad("gemma-4-e2b", use_bidirectional_attention="all"))
    for ok in (None, "vision"):    # the text still causal
        assert configs.load(_bad("gemma-4-e2b", use_bidirectional_attention=ok)).total_params() == \
            configs.load("gemma-4-e2b").total_params()
    assert configs.load(_bad("gemma-3-1b", use_bidirectional_attention=False)).forward_unsupported() == []


def test_gpt_oss_swiglu_constants():
    from glmbench.core import ops
    assert configs.GPT_OSS_SWIGLU == (ops.SWIGLU_ALPHA, ops.SWIGLU_LIMIT)
    # (Model's GPT-OSS layer reads the config's own: tests/test_model_hf.py runs swiglu_limit 0.5 against HF)
    c = configs.load(_bad("gpt-oss-20b", swiglu_limit=10.0))
    assert c.forward_unsupported() == [] and c.total_params() == configs.load("gpt-oss-20b").total_params()
    for k, bad in (("swiglu_alpha", "fast"), ("swiglu_limit", None), ("swiglu_limit", float("nan"))):
        with pytest.raises(ValueError, match=rf"`{k}` must be a finite number"):
            configs.load(_bad("gpt-oss-20b", **{k: bad}))


def test_nemotron_h_mamba_activation_other_than_silu_is_not_run():
    assert configs.load("nemotron-h-8b").forward_unsupported() == []
    c = configs.load(_bad("nemotron-h-8b", mamba_hidden_act="gelu"))
    assert "mamba_hidden_act 'gelu'" in c.forward_unsupported()[-1]
