"""What a model is: `configs` (HF config.json -> ModelConfig, built-in configs, derived counts),
importable without the C core, and `model` (glmbench.Model: weights and a forward pass on the
C core)."""
