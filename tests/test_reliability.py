"""Results a user can trust (issue 25): concurrent writers into one results file, writers killed
mid-write, unstable points retimed. Real processes and real signals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from glmbench.results import records as rec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


STORE_WRITER = textwrap.dedent("""
    import sys
    from glmbench.results import records as rec
    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    key = lambda r: (r["who"], r["i"])
    for i in range(n):
        st = rec.ResultStore(path, key) if i % 5 == 0 else st
        st.add({"evidence": "measured", "who": who, "i": i, "avg_ts": float(i)})
""")


def test_concurrent_store_writers_keep_the_union(tmp_path):
    """Six processes adding 25 records each to one ResultStore file: the file ends with all 150
    (before the lock: each rewrote the file from its own copy, and about half were lost)."""
    out = str(tmp_path / "r.json")
    procs = [subprocess.Popen([sys.executable, "-c", STORE_WRITER, out, f"w{k}", "25"], env=_env())
             for k in range(6)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    recs = rec.read_records(out)
    assert len(recs) == 150
    assert {(r["who"], r["i"]) for r in recs} == {(f"w{k}", i) for k in range(6) for i in range(25)}
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_concurrent_sweeps_into_one_out_keep_the_union(tmp_path):
    """`glmbench sweep` x 4 at once into one --out, each with its own depths: the file holds every
    point of every run, each run exits 0 and its last line's count is one the file held."""
    out = str(tmp_path / "s.json")
    runs = [["--depths", ",".join(str(1024 * (4 * k + j + 1)) for j in range(4))] for k in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "glmbench", "sweep", *a, "--tests", "tg,pp", "--quiet",
                               "--out", out, "--json"], env=_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for a in runs]
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        errs.append(err)
    recs = rec.read_records(out)
    # 2 models x 2 card counts x 2 tests x 16 depths
    assert len(recs) == 2 * 2 * 2 * 16
    from glmbench.predict.sweep import _key
    assert len({_key(r) for r in recs}) == len(recs)
    for err in errs:
        held = int(err.rsplit("the file holds ", 1)[1].split()[0])
        assert 32 <= held <= len(recs)       # at least its own 32, never more than the file ends with


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from glmbench.results import records as rec
    def slow(f):
        f.write("[\\n")
        f.flush()
        print("writing", flush=True)
        time.sleep(600)
    rec.atomic_write(sys.argv[1], slow)
""")


def test_a_write_killed_by_a_signal_leaves_no_temp_file_behind(tmp_path):
    """SIGKILL during a write: the old file is intact, and the next write beside it removes the
    dead writer's `.tmp-*` file (a running writer's is left alone)."""
    out = str(tmp_path / "r.json")
    rec.write_records(out, [{"evidence": "measured", "test": "tg", "avg_ts": 1.0}])
    p = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, out], env=_env(), stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    live = [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]
    assert len(live) == 1
    rec.write_records(out, [{"evidence": "measured", "test": "tg", "avg_ts": 2.0}])
    assert live[0] in os.listdir(tmp_path)          # its writer still runs: kept
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    p.stdout.close()
    assert rec.read_records(out)[0]["avg_ts"] == 2.0
    st = rec.ResultStore(out, lambda r: (r["test"],))   # opening the store cleans too
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")] == []
    assert st.records[0]["avg_ts"] == 2.0


def test_a_killed_sweep_leaves_a_readable_file_and_the_next_run_cleans(tmp_path):
    """A sweep SIGKILLed while it runs: the file (if written) is whole, no temp file survives the
    next run, which completes the grid."""
    out = str(tmp_path / "s.json")
    depths = ",".join(str(1024 * k) for k in range(1, 41))
    p = subprocess.Popen([sys.executable, "-m", "glmbench", "sweep", "--depths", depths, "--tests", "tg,pp,mem",
                          "--quiet", "--out", out], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()
    while not os.path.exists(out) and time.time() - t0 < 60 and p.poll() is None:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    if os.path.exists(out):
        rec.read_records(out)                          # whole, never half a file
    r = subprocess.run([sys.executable, "-m", "glmbench", "sweep", "--depths", depths, "--tests", "tg,pp,mem",
                        "--quiet", "--out", out, "--json"], env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(rec.read_records(out)) == 4 * 3 * 40
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")] == []




# ---- unstable points are retimed -------------------------------------------------------------------
def _point(depth, fp="fp1"):
    return {"evidence": "measured", "test": "tg", "model": "m", "n_depth": depth, "n_prompt": 0, "n_gen": 4,
            "device": "cpu", "runtime": "glmbench", "n_threads": 2, "layers_mode": "all", "repetitions": 3,
            "weights": "bf16", "type_k": "f16", "type_v": "f16", "fingerprint": fp}


def test_an_unstable_stored_point_is_retimed_by_the_next_run(tmp_path):
    """A point stored with `stable: false` is timed again by the same command into the same file
    (before: '0 computed ... 3 reused', the 4.9x-spread record kept forever); stable ones are reused."""
    from glmbench.measure import protocol
    out = str(tmp_path / "m.json")
    pts = [_point(0), _point(1024), _point(4096)]
    noisy = iter([False, True, True])

    def first(p):
        return dict(p, avg_ts=10.0, stable=next(noisy), unstable_reason="repeats 2-9.8 tok/s (4.9x apart)")
    before = protocol.run(pts, protocol.store_for(out), first)
    assert [r["stable"] for r in before] == [False, True, True]
    timed = []

    def quiet(p):
        timed.append(p["n_depth"])
        return dict(p, avg_ts=12.0, stable=True, unstable_reason="")
    after = protocol.run(pts, protocol.store_for(out), quiet)
    assert timed == [0]
    assert [r["avg_ts"] for r in after] == [12.0, 10.0, 10.0]
    assert all(r["stable"] for r in rec.read_records(out))
    n = rec.resume_summary(before, after, protocol.resume_key)
    assert n == {"reused": 2, "computed": 0, "replaced": 0, "retimed": 1}
