"""A llama-bench row names the right built-in model, for every built-in.

For each built-in config the row llama-bench would print for its GGUF is built: `model_type` as
"<llama.cpp architecture> <size label> <ftype>" (the architecture glmbench maps its model_type to, importers._arch_of;
the size label llama.cpp's load_arch_hparams gives it, mirrored below from the vendored llama.cpp of
llama-cpp-python 0.3.36, src/models/<arch>.cpp) and the params column ("%.2f B" / "%.2f M" of the GGUF's count,
importers._gguf_params; JSON / CSV output: the exact count). importers.identify_model must name that built-in, or one
of the same cost shape (alike_pick), or raise AmbiguousModel naming it where another built-in prints the very same row
(then the file name resolves it). The row without its params column (the size label alone) resolves the same way or
names no model: never a different-shaped built-in silently."""
import re

import pytest

from glmbench.models import configs
from glmbench.results import importers as im


def _q(c):
    """(n_layer, n_embd, n_head, n_head_kv, n_vocab, n_expert) as llama.cpp's hparams hold them (n_layer without the
    MTP / nextn blocks: llama_hparams::n_layer())."""
    return c.n_layers, c.hidden_size, c.n_heads, c.n_kv_heads, c.vocab_size, c.n_routed_experts


def _by_layers(table):
    return lambda c: table.get(c.n_layers, "?B")


def _llama(c):
    n_layer, n_embd, n_head, n_head_kv, n_vocab, n_expert = _q(c)
    if n_expert == 8:                                     # llama.cpp: Mixtral is the llama architecture with experts
        return {32: "8x7B", 56: "8x22B"}.get(n_layer, "?B")
    if n_layer == 32:
        return "3B" if n_vocab == 49152 else ("7B" if n_vocab < 40000 else "8B")
    if n_layer == 80:
        return "65B" if n_head == n_head_kv else "70B"
    return {16: "1B", 22: "1B", 26: "3B", 28: "3B", 30: "256M", 36: "8B", 40: "13B", 48: "34B", 60: "30B"}.get(n_layer, "?B")


def _qwen2(c):
    n_layer, n_embd, n_head = c.n_layers, c.hidden_size, c.n_heads
    return {24: "0.5B" if n_embd == 1024 else "1B", 28: "1.5B" if n_embd == 1536 else "7B", 32: "7B", 36: "3B",
            40: "4B" if n_head == 20 else "13B", 48: "14B", 64: "32B", 80: "70B"}.get(n_layer, "?B")


def _qwen3(c):
    n_layer, n_embd = c.n_layers, c.hidden_size
    return {28: "0.6B" if n_embd == 1024 else "1.7B", 36: "4B" if n_embd == 2560 else "8B", 40: "14B",
            64: "32B"}.get(n_layer, "?B")


def _qwen35(c):
    n_layer, n_embd = c.n_layers, c.hidden_size
    return {24: "0.8B" if n_embd == 1024 else "2B", 32: "4B" if n_embd == 2560 else "9B", 64: "27B"}.get(n_layer, "?B")


def _chatglm(c):
    return {28: "1.5B" if c.n_heads == 16 else "6B", 40: "4B" if c.n_heads == 24 else "9B"}.get(c.n_layers, "?B")


def _granite(c):
    if c.n_layers == 40:
        return {2048: "2B", 2560: "3B", 4096: "8B"}.get(c.hidden_size, "?B")
    return {32: "3B", 64: "30B"}.get(c.n_layers, "?B")


def _granitehybrid(c):
    # by n_embd; 1536 -> 7B.A1B where feed_forward_length is 512 (the MoE Tiny's shared expert), else 1B
    if c.hidden_size == 1536:
        return "7B.A1B" if c.n_routed_experts else "1B"
    return {768: "350M", 2048: "3B", 2560: "3B", 4096: "32B.A9B"}.get(c.hidden_size, "?B")


def _llama4(c):
    # by the expert count; the label holds a space: "llama4 17Bx16E (Scout) Q4_K - Medium"
    return {16: "17Bx16E (Scout)", 128: "17Bx128E (Maverick)"}.get(c.n_routed_experts, "?B")


LLAMA_CPP_LABEL = {
    "llama": _llama, "qwen2": _qwen2, "qwen3": _qwen3, "qwen35": _qwen35, "chatglm": _chatglm, "granite": _granite,
    "granitehybrid": _granitehybrid, "llama4": _llama4,
    # lfm2.cpp: by n_ff (the MLP's width after LFM2's auto-adjust); lfm2moe.cpp by the depth
    "lfm2": lambda c: {2560: "230M", 4608: "350M", 6912: "700M", 8192: "1.2B", 10752: "2.6B"}.get(c.intermediate_size, "?B"),
    "lfm2moe": _by_layers({24: "8B.A1B", 40: "24B.A2B"}),
    "qwen3moe": _by_layers({48: "30B.A3B", 94: "235B.A22B"}),
    "qwen2moe": _by_layers({24: "A2.7B", 28: "57B.A14B"}),
    "qwen3next": _by_layers({48: "80B.A3B"}),
    "qwen35moe": _by_layers({40: "35B.A3B", 48: "122B.A10B", 60: "397B.A17B"}),
    "deepseek2": _by_layers({27: "16B", 47: "30B.A3B", 60: "236B", 61: "671B"}),
    "deepseek32": _by_layers({61: "685B.A37B"}),
    "glm-dsa": _by_layers({78: "744B.A40B"}),
    "glm4moe": _by_layers({46: "106B.A12B", 48: "102B.A12B", 92: "355B.A32B"}),
    "glm4": _by_layers({17: "1B", 40: "9B", 61: "32B"}),
    "phi3": _by_layers({24: "1B", 32: "3B", 40: "14B"}),
    "phimoe": _by_layers({32: "16x3.8B"}),
    "gemma": _by_layers({18: "2B", 28: "7B"}),
    "gemma2": _by_layers({26: "2B", 42: "9B", 46: "27B"}),
    "gemma3": _by_layers({18: "270M", 26: "1B", 32: "8B", 34: "4B", 48: "12B", 62: "27B"}),
    "gemma3n": _by_layers({30: "E2B", 35: "E4B"}),
    "gemma4": _by_layers({30: "26B.A4B", 35: "E2B", 42: "E4B", 60: "31B"}),
    "command-r": _by_layers({40: "35B"}),
    "cohere2": _by_layers({32: "8B"}),
    "arcee": _by_layers({36: "4B"}),
    "apertus": _by_layers({32: "8B"}),
    "afmoe": _by_layers({56: "6B", 32: "26B"}),
    "dots1": _by_layers({62: "142B"}),
    "ernie4_5": _by_layers({18: "0.3B", 28: "21B.A3B", 54: "300B.A47B"}),
    "ernie4_5-moe": _by_layers({18: "0.3B", 28: "21B.A3B", 54: "300B.A47B"}),
    "exaone": _by_layers({32: "8B"}),
    "exaone4": _by_layers({30: "1.2B", 64: "32B"}),
    "gpt-oss": _by_layers({24: "20B", 36: "120B"}),
    "granitemoe": _by_layers({24: "1B.A400M", 32: "3B.A800M"}),
    "hunyuan-moe": _by_layers({32: "A13B"}),
    "kimi-linear": _by_layers({27: "48B.A3B"}),
    "minimax-m2": _by_layers({62: "230B.A10B"}),
    "nemotron_h": _by_layers({52: "31B.A3.5B", 56: "9B"}),
    "nemotron_h_moe": _by_layers({52: "31B.A3.5B", 56: "9B"}),
    "nemotron": _by_layers({32: "4B"}),
    "olmo2": _by_layers({16: "1B", 32: "7B", 40: "13B", 64: "32B"}),
    "olmoe": _by_layers({16: "A1.7B"}),
    "seed_oss": _by_layers({64: "36B"}),
    "smollm3": _by_layers({36: "3B"}),
    "mistral3": _by_layers({26: "3B", 34: "8B", 40: "14B"}),
}

NAMES = configs.builtin_names()
FTYPE = "Q4_K - Medium"


def _arch(name):
    c = configs.load(name)
    return im._arch_of(c.model_type, bool(c.n_routed_experts))


def _label(name):
    return LLAMA_CPP_LABEL[_arch(name)](configs.load(name))


def _printed(p):
    """The params column as llama-bench's markdown prints it, read back as the importer reads it."""
    return round(p / 1e6, 2) * 1e6 if p < 1e9 else round(p / 1e9, 2) * 1e9


def _row(name):
    return f"{_arch(name)} {_label(name)} {FTYPE}"


def _shape(name):
    return configs.load(name).cost_shape()


def _check(name, n_params):
    """identify_model on `name`'s row: the built-in, one alike, or AmbiguousModel naming it among built-ins that
    print the very same row, which the file name resolves; or (label only) no model."""
    row = _row(name)
    try:
        got, how = im.identify_model(None, row, n_params)
    except im.AmbiguousModel as e:
        m = re.search(r"fits several built-in models: (.*?); ", str(e))
        named = m.group(1).split(", ") if m else []
        assert name in named, f"{row!r} + {n_params}: {e} (not naming {name})"
        if n_params:
            same = {n for n in named if _row(n) == row and _printed(im._gguf_params(configs.load(n))) == n_params}
            exact = {n for n in named if im._gguf_params(configs.load(n)) == n_params}
            assert set(named) <= (same | exact), f"{row!r} + {n_params}: {e}: not every one prints this row"
        got, how = im.identify_model(f"{name}-Q4_K_M.gguf", row, n_params)
        assert got == name or _shape(got) == _shape(name), f"{row!r} with a file name {name}-Q4_K_M.gguf: {got}"
        return "ambiguous"
    if got is None:
        assert not n_params, f"{row!r} + {n_params}: no model ({how})"
        got, how = im.identify_model(f"{name}-Q4_K_M.gguf", row, n_params)
        assert got is None or got == name or _shape(got) == _shape(name), f"{row!r}, {name}-Q4_K_M.gguf: {got} ({how})"
        return "none"
    assert got == name or _shape(got) == _shape(name), f"{row!r} + {n_params}: {got} ({how}), not {name}"
    return "ok"


@pytest.mark.parametrize("name", NAMES)
def test_every_builtin_has_a_label_rule(name):
    assert _arch(name) in LLAMA_CPP_LABEL, f"{name}: no llama.cpp size-label rule for {_arch(name)!r} here"


@pytest.mark.parametrize("name", NAMES)
def test_size_label_mirrors_llama_cpp(name):
    """importers.size_label (what a row without a params column is matched by) gives the label llama.cpp does."""
    assert im.size_label(configs.load(name)).split()[0] == _label(name).split()[0]


@pytest.mark.parametrize("name", NAMES)
def test_row_with_printed_params_names_the_builtin(name):
    _check(name, _printed(im._gguf_params(configs.load(name))))


@pytest.mark.parametrize("name", NAMES)
def test_row_with_exact_params_names_the_builtin(name):
    _check(name, im._gguf_params(configs.load(name)))


@pytest.mark.parametrize("name", NAMES)
def test_row_with_size_label_only_never_names_another_shape(name):
    _check(name, None)


@pytest.mark.parametrize("row,names", [
    # what the battery found: each of these label-only rows used to read as the nearest count's built-in, a wrong
    # shape for the others llama.cpp labels alike
    ("llama 13B Q4_K - Medium", {"llama-2-13b", "mistral-nemo", "mistral-small-24b", "devstral-small"}),
    ("llama 8B Q4_K - Medium", {"llama-3-8b", "llama-3.1-minitron-4b"}),
    ("llama 70B Q4_K - Medium", {"llama-3-70b", "llama-2-70b"}),
    ("deepseek2 671B Q4_K - Medium", {"deepseek-v3", "kimi-k2"}),
    ("command-r 35B Q4_K - Medium", {"command-r", "command-r-08-2024"}),
    ("phi3 3B Q4_K - Medium", {"phi-3-mini", "phi-4-mini"}),
])
def test_a_label_several_shapes_share_names_them_all(row, names):
    with pytest.raises(im.AmbiguousModel) as e:
        im.identify_model(None, row)
    assert all(n in str(e.value) for n in names), str(e.value)


def test_a_label_llama_cpp_gives_another_model_names_no_builtin():
    # Qwen1.5-0.5B's "qwen2 0.5B" (24 layers of 1024) is not Qwen2.5-0.5B, which llama.cpp labels "qwen2 1B"
    assert im.identify_model(None, "qwen2 0.5B Q4_K - Medium")[0] is None
    assert im.identify_model(None, "qwen2 1B Q4_K - Medium")[0] is None        # 0.49 B: a label astray
    assert im.identify_model("qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2 1B Q4_K - Medium")[0] == "qwen2.5-0.5b"
    # another build's label (an older llama.cpp's): read as a size
    assert im.identify_model(None, "command-r 104B Q8_0")[0] == "command-r-plus"
