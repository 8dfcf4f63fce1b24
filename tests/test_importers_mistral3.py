"""llama.cpp's mistral3 architecture (Mistral Small 3.1 / 3.2, Devstral Small 2, Ministral 3: Mistral's text layers,
named apart from llama by the converter, conversion/mistral3.py) resolves to the Mistral family's built-ins by the
params column; its size label alone (src/models/mistral3.cpp: by the layer count, 40 -> 14B for Mistral Small's
layers and Ministral 3 14B's alike) names none."""
from glmbench.results import importers as im


def test_mistral3_rows_match_the_mistral_builtins_by_params():
    names, what = im.model_candidates("mistral3 14B Q4_K - Medium", 23.57e9)
    assert names == ["devstral-small", "mistral-small-24b"] and "23.57 B params" in what
    # not a llama-architecture built-in of another family at a Ministral 3 size
    assert im.model_candidates("mistral3 8B Q4_K - Medium", 8.03e9)[0] == []
    assert im.model_candidates("llama 8B Q4_K - Medium", 8.03e9)[0] != []


def test_mistral3_size_label_alone_names_none():
    names, what = im.model_candidates("mistral3 14B Q4_K - Medium")
    assert names == [] and "params column is needed" in what
    assert im._arch_of("ministral3") == "mistral3"
