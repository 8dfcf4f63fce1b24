"""CodeLlama-34B and Yi-34B built in (written from memory: docs/SOURCES.md, 'Built-in CodeLlama-34B and Yi-34B'):
Llamas of 48 and 60 layers, which llama.cpp labels "llama 34B" and "llama 30B" (src/models/llama.cpp)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import hf_meta  # noqa: E402
import llama_bench_rows as lb  # noqa: E402

from glmbench.models import configs  # noqa: E402
from glmbench.results import importers as im  # noqa: E402


def test_the_34b_llamas_land_on_their_published_counts():
    code, yi = configs.load("codellama-34b"), configs.load("yi-34b")
    assert (code.n_layers, code.hidden_size, code.n_heads, code.n_kv_heads, code.head_dim, code.vocab_size) == \
        (48, 8192, 64, 8, 128, 32000)
    assert (yi.n_layers, yi.hidden_size, yi.n_heads, yi.n_kv_heads, yi.head_dim, yi.vocab_size) == \
        (60, 7168, 56, 8, 128, 64000)
    assert round(code.total_params() / 1e9, 2) == 33.74 and round(yi.total_params() / 1e9, 2) == 34.39
    assert code.model_type == yi.model_type == "llama" and code.attention == yi.attention == "gqa"
    assert im.size_label(code) == "34B" and im.size_label(yi) == "30B"


_ROWS = {"llama 34B Q4_K - Medium        |  18.83 GiB |    33.74 B": ("codellama-34b", "Q4_K_M"),
         "llama 30B Q4_K - Medium        |  19.24 GiB |    34.39 B": ("yi-34b", "Q4_K_M"),
         "llama 34B Q4_K - Medium        |   4.97 GiB |     8.80 B": ("internlm3-8b", "Q4_K_M")}


def test_llama_bench_rows_name_them(tmp_path):
    lb.check_rows_name_builtins(tmp_path, _ROWS, "CUDA       |  99 |         1 |           tg128 |       30.10 ± 0.50")
    # the label alone: "llama 30B" is Yi-34B's 60 layers; "llama 34B" CodeLlama-34B's 48 or InternLM3-8B's
    assert im.identify_model(None, "llama 30B Q4_K - Medium")[0] == "yi-34b"
    with pytest.raises(im.AmbiguousModel, match="codellama-34b, internlm3-8b"):
        im.identify_model(None, "llama 34B Q4_K - Medium")
    assert im.identify_model("codellama-34b-instruct.Q4_K_M.gguf", "llama 34B Q4_K - Medium")[0] == "codellama-34b"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["codellama-34b", "yi-34b"])
def test_builtin_equals_the_hf_meta_model(name):
    transformers = pytest.importorskip("transformers")
    c = configs.load(name)
    hf = {k: v for k, v in c.hf.items() if not k.startswith("_") and k not in ("architectures", "model_type")}
    assert hf_meta.meta_model(transformers.AutoConfig.for_model("llama", **hf))[1] == c.total_params()
