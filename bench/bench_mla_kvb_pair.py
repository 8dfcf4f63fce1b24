"""Decode layer times of a deepseek2 GGUF with attn_k_b / attn_v_b split as stored vs joined to f32: the
model built twice (the other matrices shared), decode steps alternating, 4 x 32 steps; prints layer ms
as min / median.   PYTHONPATH=$PWD python bench/bench_mla_kvb_pair.py FILE.gguf"""
import sys, numpy as np, warnings
warnings.simplefilter("ignore")
from glmbench.models import checkpoint
from glmbench.models.model import Model
from glmbench.core.attention import KVBSplit
cfg, sd = checkpoint.state_dict(sys.argv[1])
sd2 = {k: (v.joined() if isinstance(v, KVBSplit) else v) for k, v in sd.items()}
ms = {"split (after)": Model(cfg, sd, weights="stored", kv="f16", max_context=256),
      "joined f32 (before)": Model(cfg, sd2, weights="stored", kv="f16", max_context=256)}
rng = np.random.default_rng(0)
res = {k: [] for k in ms}
for rnd in range(4):
    for m in ms.values(): m.reset()
    for step in range(32):
        t = int(rng.integers(0, cfg.vocab_size))
        for k, m in ms.items():
            m.decode(t); res[k].append(m.last_timing["layer_s"])
for k, v in res.items():
    a = np.array(v) * 1e3
    print(f"| {k} | {a[:,0].min():.2f} / {np.median(a[:,0]):.2f} | {a[:,1].min():.2f} / {np.median(a[:,1]):.2f} |")
