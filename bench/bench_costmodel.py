"""How fast the cost model predicts: a sweep of 2 models x 4 setups x 64 depths (decode, prefill
and memory at each point). Target: under 1 second. Not a test; run it on a quiet machine:

    python bench/bench_costmodel.py
"""
import time

from glmbench import hardware, sweep

MODELS = ["glm-4.7-flash", "qwen3-32b"]
SETUPS = [
    dict(rig="rtx-3090", weights="q4_K"),
    dict(rig=hardware.study_rig(), split="layer", weights="q4_K"),
    dict(rig=hardware.study_rig(), split="tensor", weights="q4_K"),
    dict(rig="h100-sxm", weights="bf16"),
]
DEPTHS = [2048 * i for i in range(64)]


def main():
    # validate before timing: every point yields a finite, positive speed or a memory figure
    recs = sweep.predict(MODELS, SETUPS, DEPTHS[:2])
    assert all(r["avg_ts"] > 0 for r in recs if r["test"] != "mem")
    for tests in (("tg",), ("tg", "pp", "mem")):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            recs = sweep.predict(MODELS, SETUPS, DEPTHS, tests=tests)
            best = min(best, time.perf_counter() - t)
        n = len(MODELS) * len(SETUPS) * len(DEPTHS)
        print(f"costmodel sweep {len(MODELS)} models x {len(SETUPS)} setups x {len(DEPTHS)} depths, "
              f"tests {','.join(tests)}: {len(recs)} records in {best:.3f} s "
              f"({1e6 * best / len(recs):.0f} us/record, {n} points) {'OK' if best < 1 else 'SLOW (target < 1 s)'}")


if __name__ == "__main__":
    main()
