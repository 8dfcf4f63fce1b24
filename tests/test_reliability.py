"""Results a user can trust (issue 25): concurrent writers into one results file, writers killed
mid-write, unstable points retimed. Real processes and real signals."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from glmbench.results import records as rec
from glmbench.predict import costmodel as cm, hardware as hw, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    """The child processes import the glmbench this test imported (the installed package in CI,
    whose compiled core the source tree lacks; a development tree with its core built in place)."""
    import glmbench
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(glmbench.__file__))) + os.pathsep + env.get("PYTHONPATH", "")
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


@pytest.mark.slow   # three processes each build and time a model
def test_concurrent_measures_into_one_out_keep_the_union(tmp_path):
    """`glmbench measure` x 3 at once into one --out (a tiny model, each its own depths): every
    point of every run is in the file."""
    from test_measure import tiny_glm
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(tiny_glm(2).hf))
    out = str(tmp_path / "m.json")
    env = dict(_env(), GLMBENCH_PROBE_MIB="16")
    procs = [subprocess.Popen([sys.executable, "-m", "glmbench", "measure", str(cfg), "--depths", d, "--n-prompt", "4",
                               "--n-gen", "2", "--repeats", "1", "--threads", "1", "--layers", "full", "--weights",
                               "f32", "--kv", "f32", "-q", "--out", out, "--json"], env=env, cwd=str(tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for d in ("0,8", "16,24", "32,40")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    recs = rec.read_records(out)
    # each run: pp and tg at its depths, one mem point at its deepest
    assert sorted((r["test"], r["n_depth"]) for r in recs) == sorted(
        [(t, d) for d in (0, 8, 16, 24, 32, 40) for t in ("pp", "tg")] + [("mem", 8), ("mem", 24), ("mem", 40)])


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


def test_a_file_name_as_long_as_the_file_system_allows_is_written_and_its_temps_cleaned(tmp_path):
    """An --out whose name is 250 bytes (a file system takes 255): the temp file's prefix (and the lock
    file's) made those names too long, so every write failed, "File name too long" naming a temp file,
    after the sweep had priced its points. Now the file is written and resumed through the CLI, and a
    writer killed mid-write leaves a temp file that the next write removes."""
    name = "r" * 245 + ".json"
    out = str(tmp_path / name)
    args = [sys.executable, "-m", "glmbench", "sweep", "--model", "qwen3-32b", "--cards", "1", "--depths", "1K",
            "--tests", "tg", "--quiet", "--out", name]
    r = subprocess.run(args, env=_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(rec.read_records(out)) == 1
    r = subprocess.run(args, env=_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "1 reused" in r.stderr, r.stderr
    p = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, out], env=_env(), stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    p.stdout.close()
    assert len([n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]) == 1
    st = rec.ResultStore(out, lambda r: (r["test"], r.get("n_depth")))
    st.add({"evidence": "measured", "test": "tg", "n_depth": 1, "avg_ts": 2.0})
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")] == []
    assert len(rec.read_records(out)) == 2


def test_a_killed_sweep_leaves_a_readable_file_and_the_next_run_cleans(tmp_path):
    """A sweep SIGKILLed while it runs: the file (if written) is whole, no temp file survives the
    next run, which completes the grid."""
    out = str(tmp_path / "s.json")
    depths = ",".join(str(1024 * k) for k in range(1, 17))
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
    assert len(rec.read_records(out)) == 4 * 3 * 16
    assert [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")] == []




def test_sweep_and_measure_into_one_file_keep_each_others_records(tmp_path):
    """README: sweep and measure processes may write into one --out file and it ends with the union of
    their records. Each deduplicated the whole file by its own key: a sweep into a file of measurements
    at 2 and 4 threads kept one of them (its key has no thread count, no device), and a measurement into a
    file of predictions at two links kept one (the measure key has no link)."""
    from glmbench.measure import protocol
    out = str(tmp_path / "both.json")
    meas = [dict(_point(1024), n_threads=t, avg_ts=float(t)) for t in (2, 4)] + \
        [dict(_point(1024), device="another cpu", avg_ts=7.0)]
    rec.write_records(out, meas)
    pred = sweep.predict(["glm-4.7-flash"], [dict(rig="rtx-3090")], [1024], ("tg",), out=out)
    held = rec.read_records(out)
    assert held == meas + pred
    # again: the sweep's own point replaced, the measurements kept
    assert rec.read_records(out) == held and sweep.predict(["glm-4.7-flash"], [dict(rig="rtx-3090")], [1024],
                                                           ("tg",), out=out) == pred
    assert rec.read_records(out) == held
    # predictions at two links (two setups to the sweep, one point to the measure key), then a measurement
    out2 = str(tmp_path / "links.json")
    two = sweep.predict(["glm-4.7-flash"], [dict(rig=hw.Rig(hw.get_gpu("rtx-3090"), 2, link_gbps=g), split="layer")
                                            for g in (1.4, 25.0)], [1024], ("tg",), out=out2)
    assert len(two) == 2 and protocol.resume_key(two[0]) == protocol.resume_key(two[1])
    timed = protocol.run([_point(0)], protocol.store_for(out2), lambda p: dict(p, avg_ts=3.0, stable=True))
    assert rec.read_records(out2) == two + timed
    # a measurement another run stored after this store read the file is theirs: not written over
    store = protocol.store_for(out2)
    protocol.run([_point(0, fp="fp2")], protocol.store_for(out2), lambda p: dict(p, avg_ts=4.0, stable=True))
    store.add(dict(_point(8), avg_ts=5.0, stable=True))
    assert [r.get("avg_ts") for r in rec.read_records(out2) if r["evidence"] == "measured"] == [4.0, 5.0]


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
    # the retimed point stays where the file had it (it moved to the end: the file's order no longer the
    # plan's, which `measure --json` prints, and a CI run under load saw the two differ)
    assert [r["n_depth"] for r in rec.read_records(out)] == [0, 1024, 4096]
    n = rec.resume_summary(before, after, protocol.resume_key)
    assert n == {"reused": 2, "computed": 0, "replaced": 0, "retimed": 1, "edited": 0}


def test_a_stored_measurement_edited_by_hand_is_retimed(tmp_path):
    """A measured record whose `avg_ts` was typed over (no longer the mean of its own `samples_ts`), or
    whose stated inputs were (its `weights`-independent `model_type`, covered by the fingerprint it kept),
    was reused by every resumed `measure` as a measurement; it is timed again and counted as edited."""
    from glmbench.measure import protocol
    out = str(tmp_path / "m.json")
    pts = [dict(_point(d), model_type="qwen3") for d in (0, 1024, 4096)]

    def timed_at(v):
        def time_point(p):
            return dict(p, avg_ts=v, samples_ts=[v - 1, v, v + 1], stable=True, unstable_reason="")
        return time_point
    before = protocol.run(pts, protocol.store_for(out), timed_at(10.0))
    held = rec.read_records(out)
    held[0]["avg_ts"] = 99.0            # a speed typed over: not the mean of 9, 10, 11
    held[1]["model_type"] = "llama"      # an input typed over
    rec.write_records(out, held)
    edited = rec.read_records(out)
    seen = []

    def again(p):
        seen.append(p["n_depth"])
        return timed_at(12.0)(p)
    after = protocol.run(pts, protocol.store_for(out), again)
    assert seen == [0, 1024]
    assert [r["avg_ts"] for r in after] == [12.0, 12.0, 10.0] and after[1]["model_type"] == "qwen3"
    assert rec.resume_summary(edited, after, protocol.resume_key) == \
        {"reused": 1, "computed": 0, "replaced": 0, "retimed": 0, "edited": 2}
    # an untouched file is reused whole
    seen.clear()
    assert protocol.run(pts, protocol.store_for(out), again) == after and seen == []
    assert before[2] == after[2]


# ---- calibrate: --out checked first, input checks ---------------------------------------------------
MEASURED = os.path.join(ROOT, "glmbench", "data", "measured")


def _speed_recs(extra=()):
    recs = [dict(evidence="measured", model="glm-4.7-flash", hardware="rtx-3090", n_cards=1, weights="q4_K",
                 test="tg", n_depth=d, n_prompt=0, n_gen=1, avg_ts=100.0 - d / 1024) for d in (0, 8192, 32768)]
    return recs + list(extra)


@pytest.fixture
def no_fit(monkeypatch):
    """calibrate's fit replaced by a failure: a check that comes first never reaches it."""
    from glmbench.predict import calibrate as cal

    def boom(*a, **k):
        raise AssertionError("the fit ran before the --out check")
    monkeypatch.setattr(cal, "calibrate", boom)


def test_calibrate_never_overwrites_its_own_input(tmp_path, capsys, no_fit):
    from glmbench import cli
    src = tmp_path / "lb.json"
    src.write_bytes(open(os.path.join(MEASURED, "llama-cpp-1x3090.json"), "rb").read())
    before = src.read_bytes()
    for force in ([], ["--force"]):
        assert cli.main(["calibrate", str(src), "--out", str(src), *force]) == 2
        err = capsys.readouterr().err
        assert "its own input" in err and str(src) in err
        assert src.read_bytes() == before


def test_calibrate_out_follows_the_out_rules_before_the_fit(tmp_path, capsys, no_fit):
    from glmbench import cli
    src = os.path.join(MEASURED, "llama-cpp-1x3090.json")
    notes = tmp_path / "notes.json"
    notes.write_text('{"my": "notes"}\n')
    assert cli.main(["calibrate", src, "--out", str(notes)]) == 2
    assert "not a runtime profile" in capsys.readouterr().err and notes.read_text() == '{"my": "notes"}\n'
    assert cli.main(["calibrate", src, "--out", str(tmp_path / "p.csv")]) == 2
    assert "must end in .json" in capsys.readouterr().err
    (tmp_path / "dir.json").mkdir()
    assert cli.main(["calibrate", src, "--out", str(tmp_path / "dir.json")]) == 2
    assert "folder" in capsys.readouterr().err


def test_calibrate_replaces_a_profile_and_with_force_anything(tmp_path, capsys):
    from glmbench import cli
    src = os.path.join(MEASURED, "llama-cpp-1x3090.json")
    p = tmp_path / "p.json"
    p.write_text("not json\n")
    assert cli.main(["calibrate", src, "--out", str(p), "--force"]) == 0
    first = json.loads(p.read_text())
    assert first["name"] == "p"
    assert cli.main(["calibrate", src, "--out", str(p), "--name", "again"]) == 0   # a profile: replaced
    assert json.loads(p.read_text())["name"] == "again"


def test_calibrate_skips_mem_records_of_measure_with_a_notice(tmp_path, capsys):
    from glmbench.predict import calibrate as cal
    f = tmp_path / "m.json"
    mem = dict(evidence="measured", model="glm-4.7-flash", hardware="rtx-3090", test="mem", n_depth=32768,
               n_prompt=0, n_gen=0, weight_bytes=123, kv_bytes=45)
    rec.write_records(str(f), _speed_recs([mem]))
    said = []
    pts = cal.load_points([str(f)], notice=said.append)
    assert len(pts) == 3 and all(p.test == "tg" for p in pts)
    assert len(said) == 1 and "skipped 1 `mem` record" in said[0] and str(f) in said[0] and "(line 38)" in said[0]
    only_mem = tmp_path / "mem.json"
    rec.write_records(str(only_mem), [mem])
    with pytest.raises(cal.CalibrationError, match="no tg or pp speed records"):
        cal.load_points([str(only_mem)])
    # the command prints it once prefixed: `notice: ...`, not `note: notice: ...`
    from glmbench import cli
    capsys.readouterr()
    assert cli.main(["calibrate", str(f), "--out", str(tmp_path / "p.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [ln for ln in err if "skipped 1 `mem` record" in ln]
    assert len(said) == 1 and said[0].startswith(f"notice: {f}: skipped 1 `mem` record"), err


def test_calibrate_warns_about_or_excludes_unstable_points(tmp_path, capsys, monkeypatch):
    from glmbench import cli
    from glmbench.predict import calibrate as cal
    f = tmp_path / "m.json"
    recs = _speed_recs()
    recs[1].update(stable=False, unstable_reason="repeats 20-98 tok/s (4.9x apart)")
    rec.write_records(str(f), recs)
    said = []
    assert len(cal.load_points([str(f)], notice=said.append)) == 3
    assert len(said) == 1 and said[0].startswith("warning:") and "unstable" in said[0] and "4.9x" in said[0]
    said = []
    pts = cal.load_points([str(f)], notice=said.append, exclude_unstable=True)
    assert [p.n_depth for p in pts] == [0, 32768] and "left out" in said[0]
    seen = {}
    monkeypatch.setattr(cal, "calibrate", lambda pts, **k: seen.setdefault("n", len(pts)) and (_ for _ in ()).throw(
        cal.CalibrationError("stop here")))
    assert cli.main(["calibrate", str(f), "--out", str(tmp_path / "p.json"), "--exclude-unstable"]) == 2
    assert seen["n"] == 2 and "left out (--exclude-unstable)" in capsys.readouterr().err


@pytest.mark.parametrize("speed", [1e-300, 1e12])
def test_calibrate_refuses_absurd_speeds(tmp_path, capsys, speed, no_fit):
    from glmbench import cli
    f = tmp_path / "m.json"
    recs = _speed_recs()
    recs[2]["avg_ts"] = speed
    rec.write_records(str(f), recs)
    assert cli.main(["calibrate", str(f), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{f}:" in err[0] and "outside what any run measures" in err[0]


def test_binary_input_names_the_file(tmp_path, capsys):
    from glmbench import cli
    b = tmp_path / "weights.json"
    b.write_bytes(bytes(range(256)) * 8)
    assert cli.main(["calibrate", str(b), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert str(b) in err and "not a text file" in err and "codec" not in err
    t = tmp_path / "trace.csv"
    t.write_bytes(b"arrival_s,prompt_tokens,output_tokens\n" + bytes(range(128, 256)))
    assert cli.main(["trace", str(t), "--out", str(tmp_path / "tr")]) == 2
    err = capsys.readouterr().err
    assert str(t) in err and "codec" not in err


def test_llama_bench_file_without_avg_ts_says_so(tmp_path, capsys):
    from glmbench import cli
    d = json.load(open(os.path.join(ROOT, "tests", "data", "llama-bench.json"))) if os.path.exists(
        os.path.join(ROOT, "tests", "data", "llama-bench.json")) else [
        {"build_commit": "4be1e7c", "model_filename": "/m/GLM-4.7-Flash-Q4_K_M.gguf", "model_type": "deepseek2 30B.A3B Q4_K - Medium",
         "n_prompt": 0, "n_gen": 128, "n_depth": 0, "gpu_info": "NVIDIA GeForce RTX 3090", "backends": "CUDA",
         "avg_ns": 1000, "stddev_ts": 0.1}]
    for r in d:
        r.pop("avg_ts", None)
    f = tmp_path / "lb.json"
    f.write_text(json.dumps(d, indent=1))
    assert cli.main(["calibrate", str(f), "--hardware", "rtx-3090", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "`avg_ts` is missing" in err and f"{f}:2" in err and "evidence" not in err


# ---- trace replay counted right ----------------------------------------------------------------------
def _setup():
    from glmbench.predict import costmodel as cm
    from glmbench.predict import hardware
    return cm.Setup("glm-4.7-flash", hardware.study_rig(), split="layer")


def test_rejected_requests_output_is_not_throughput():
    """A request too long for the pool is rejected: its 2e9 output tokens are no throughput
    (before: 1.85e9 tok/s printed)."""
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    s = _setup()
    alone = rp.replay(traces.from_requests([(0.0, 1000, 100)]), s).summary()
    both = rp.replay(traces.from_requests([(0.0, 1000, 100), (0.5, 1000, 2_000_000_000)]), s).summary()
    assert both["rejected"] == 1
    assert both["throughput_tok_s"] == pytest.approx(alone["throughput_tok_s"], rel=1e-9)
    assert both["served_output_tokens"] == 100 and both["output_tokens"] == 2_000_000_100


def test_zero_output_requests_are_failed_not_one_token_requests(tmp_path):
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n0,1000,50\n0.1,2000,0\n0.2,1500,40\n")
    tr = traces.read(f)
    assert tr.output == [50, 0, 40] and tr.summary()["failed_requests"] == 1
    r = rp.replay(tr, _setup())
    s = r.summary()
    assert s["failed"] == 1 and s["requests"] == 3 and s["rejected"] == 0
    assert math.isnan(r.first_token[1]) and not r.meets(1)
    # the two that ran are served exactly as if the failed one were not in the trace
    ref = rp.replay(traces.from_requests([(0, 1000, 50), (0.2, 1500, 40)]), _setup()).summary()
    for k in ("ttft_s_mean", "e2e_s_mean", "slo_attainment", "throughput_tok_s", "makespan_s"):
        assert s[k] == pytest.approx(ref[k], rel=1e-12), k
    res = rp.study(tr, [_setup()])
    assert any("1 request of the trace failed" in x for x in res["decision"]["reasons"])


def test_time_base_keeps_microseconds_late_in_time():
    """Requests arriving 1e9 s or 2**40 s (~35,000 years) after the first one, on an idle server,
    have the latencies they have alone (before: the float second count kept 1e-7 s at 1e9 s and
    1e-4 s at 2**40 s, and the latencies went with it)."""
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    reqs = [(0.0, 100, 50), (0.003, 200, 20), (0.0031, 100, 5)]
    a = rp.replay(traces.from_requests(reqs), _setup())
    for t0 in (1e9, 2.0 ** 40):
        b = rp.replay(traces.from_requests([(0.0, 10, 2)] + [(t0 + x, p, o) for x, p, o in reqs]), _setup())
        for i in range(3):
            for f in (rp.ReplayResult.ttft, rp.ReplayResult.tpot, rp.ReplayResult.e2e, rp.ReplayResult.queueing):
                # the arrivals themselves are floats: 1e9 + 0.003 holds the 0.003 to ~1e-7 s
                assert f(b, i + 1) == pytest.approx(f(a, i), abs=1e-6 if t0 < 2 ** 30 else 2e-4), (t0, i, f.__name__)
        # the first of them arrives at exactly t0: its latencies are exact to the last digits
        assert b.ttft(1) == pytest.approx(a.ttft(0), rel=1e-12)
        assert b.tpot(1) == pytest.approx(a.tpot(0), rel=1e-12)
        assert b.e2e(1) == pytest.approx(a.e2e(0), rel=1e-12)


def test_unsorted_arrivals_are_sorted_with_a_notice_and_a_bom_header_is_read(tmp_path, capsys):
    from glmbench import cli
    from glmbench.predict import traces
    f = tmp_path / "t.csv"
    f.write_bytes("\ufeffarrival_s,prompt_tokens,output_tokens\n2,1000,10\n1,500,10\n3,700,10\n".encode())
    tr = traces.read(f)
    assert tr.prompt == [500, 1000, 700] and tr.meta["unsorted_arrivals"] == 1
    assert cli.main(["trace", str(f), "--model", "glm-4.7-flash", "--cards", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "not in time order" in out and "sorted by arrival" in out


def test_no_decision_when_the_winner_meets_the_targets_for_a_small_share():
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    # ten lone requests meet the targets, then a burst far beyond the rig: ~1% of tokens meet them
    tr = traces.from_requests([(60.0 * i, 2000, 100) for i in range(10)] +
                              [(1000 + 0.001 * i, 8000, 200) for i in range(200)])
    res = rp.study(tr, [_setup()])
    d = res["decision"]
    run = res["runs"][0]
    assert 0 < run["slo_attainment_tok"] < 0.05
    assert d["setup"] == "" and d["keeps_up"] is False and d["best"] == run["setup"]
    assert "no setup keeps up" in d["reasons"][0]
    from glmbench.report import workload
    text = workload.render(res)
    assert "**Decision:" not in text and "No setup keeps up" in text


def test_study_batched_point_only_for_a_rig_that_ran(tmp_path):
    from glmbench.report import Study, workload
    tr = str(tmp_path / "t.csv")
    open(tr, "w").write("arrival_s,prompt_tokens,output_tokens\n0,1000,10\n1,2000,10\n")
    res = workload.trace_study(Study(models=("glm-4.7-flash",), hardware="h100-sxm", cards=(1,)), tr, progress=False)
    assert res["study_point"] is None and "batched point" not in workload.render(res)
    res = workload.trace_study(Study(models=("glm-4.7-flash",), cards=(2,)), tr, progress=False)
    assert res["study_point"] and "batched point" in workload.render(res)


def test_trace_winners_legend_is_clear_of_the_title(tmp_path):
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    from glmbench.predict import costmodel as cm
    from glmbench.predict import hardware
    from glmbench.report import plots
    tr = traces.from_requests([(i * 2.0, p, 32) for i, p in enumerate([1000, 6000, 20000] * 2)])
    setups = [_setup(), cm.Setup("glm-4.7-flash", hardware.Rig(hardware.get_gpu("rtx-3090"), 1)),
              cm.Setup("qwen3-32b", hardware.study_rig(), split="layer")]
    fig = plots.trace_winners(rp.study(tr, setups))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(r)
    leg = fig.legends[0].get_window_extent(r)
    assert not title.overlaps(leg), (title, leg)
    for ax in fig.axes:
        assert not ax.title.get_window_extent(r).overlaps(leg)
        assert not ax.get_window_extent(r).overlaps(leg)
    assert not fig._supxlabel.get_window_extent(r).overlaps(leg)     # the footer
    page = fig.bbox
    assert page.x0 <= leg.x0 and leg.x1 <= page.x1 and page.y0 <= leg.y0 and leg.y1 <= page.y1


def test_vectorized_percentiles_equal_the_reference_rule():
    """The statistics sort each latency once (numpy) for every percentile: the same values as
    weighted_quantile, the nearest-rank rule, by count and by tokens."""
    import numpy as np
    from glmbench.predict import replay as rp
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 100, 1001):
        v = rng.choice([0.5, 1.0, 2.0, 3.5], n) if n > 50 else rng.random(n)
        w = rng.integers(1, 5000, n).astype(float)
        got = rp._quantiles(v, w, (0.5, 0.9, 0.99))
        pairs = list(zip(v.tolist(), w.tolist()))
        for q, (by_count, by_tok) in zip((0.5, 0.9, 0.99), got):
            assert by_count == rp.weighted_quantile(pairs, q, weighted=False)
            assert by_tok == rp.weighted_quantile(pairs, q, weighted=True)


def test_only_this_machines_dead_writers_temps_are_removed(tmp_path):
    """A temp file of a process that is gone on this machine is removed; another machine's (same
    pid, another host in the name: a network folder) and files of other names are left alone."""
    out = tmp_path / "r.json"
    dead = 2 ** 22 + 12345          # above any pid this machine hands out (pid_max <= 2**22)
    mine = tmp_path / f".tmp-{rec._HOST}-{dead}-0123abcd-r.json"
    other_host = tmp_path / f".tmp-{'f' * 8 if rec._HOST != 'f' * 8 else 'e' * 8}-{dead}-0123abcd-r.json"
    other_file = tmp_path / f".tmp-{rec._HOST}-{dead}-0123abcd-s.json"
    for f in (mine, other_host, other_file):
        f.write_text("[")
    rec.write_records(str(out), [{"evidence": "measured"}])
    assert not mine.exists() and other_host.exists() and other_file.exists()


OTHER_USER_WRITER = textwrap.dedent("""
    import os, sys
    import encodings.utf_8_sig   # (loaded lazily, and nobody may not read the Python install)
    from glmbench.results import records as rec
    if os.getuid() == 0:          # root ignores file modes: be another user, as a colleague is (after the imports)
        os.setgid(65534)
        os.setuid(65534)
    st = rec.ResultStore(sys.argv[1], lambda r: (r["who"],))
    st.add({"evidence": "measured", "who": "b", "avg_ts": 2.0})
""")


def test_a_second_user_writes_into_a_shared_records_file(tmp_path):
    """Two users writing into one results file in a folder both may write (a group's shared folder): the
    first one's sidecar lock file got 0644 (the usual umask), and every later writer of another user failed
    "Permission denied: .r.json.lock" before writing anything. The lock is taken on a descriptor open for
    reading then, and both users' records end in the file."""
    import tempfile
    shared = tempfile.mkdtemp(prefix="glmbench-shared-")   # (tmp_path's parents are the test user's alone)
    try:
        os.chmod(shared, 0o777)
        out = os.path.join(shared, "r.json")
        rec.ResultStore(out, lambda r: (r["who"],)).add({"evidence": "measured", "who": "a", "avg_ts": 1.0})
        os.chmod(out, 0o666)   # (the file: mode of the folder's umask; only the lock file is in question)
        os.chmod(rec.lock_path(out), 0o444)   # what another user sees of a 0644 file: no write permission
        env = dict(_env(), PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([sys.executable, "-c", OTHER_USER_WRITER, out], env=env, cwd=shared,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert sorted(x["who"] for x in rec.read_records(out)) == ["a", "b"]
    finally:
        import shutil
        shutil.rmtree(shared, ignore_errors=True)
