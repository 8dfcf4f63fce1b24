"""HF transformers' own model of a config, built on the meta device (no memory, no weights): the oracle of a
family's parameter count and tensor names."""
import pytest


def meta_model(hc):
    """(HF's model for config `hc` (a PretrainedConfig), its parameter count); the test is skipped without torch
    and transformers."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        m = transformers.AutoModelForCausalLM.from_config(hc)
    return m, sum(p.numel() for p in m.parameters())
