"""glmbench search (glmbench/predict/search.py, report/search.py): the cheapest-feasible answer
against a brute-force replay of every candidate, pruning that never drops a setup that could pass,
the Pareto front against its definition, resume, a worker killed mid-search (local processes, and
Ray when it can start), the price table, bad input, the study's decision tree and the CLI."""
import functools
import json
import math
import os
import signal
import sys
import threading
import time

import pytest

from glmbench import cli
from glmbench.predict import hardware, prices, replay as rp, search as sr, traces
from glmbench.report import search as rs

SMALL = dict(models=["mistral-small-24b", "qwen3-32b"], gpus=["rtx-3090", "rtx-4090", "h100-sxm"], cards=(1, 2),
             weights=("q4_K", "q8_0"), kv=("f16",), splits=("layer",))


@functools.lru_cache(maxsize=None)
def _azure(n):
    return sr._first(traces.load("azure-conv-2023"), n)


def test_cheapest_feasible_matches_brute_force():
    """Every candidate (the pruned ones too) replayed plainly, costed, ranked: the same answer."""
    tr = _azure(300)
    obj = sr.Objective(ttft_slo_s=1.0, tpot_slo_s=0.05, rate_scale=0.2, max_rate=False)
    res = sr.search(tr, obj, workers=1, **SMALL)
    setups, invalid = sr.candidates(SMALL["models"], SMALL["gpus"], SMALL["cards"], SMALL["weights"], SMALL["kv"],
                                    SMALL["splits"])
    assert not invalid and len(setups) == res.n_candidates
    pt = prices.load()
    bf = sr.brute_force(tr, obj, setups, pt)
    assert res.chosen is not None and bf is not None
    assert res.chosen["setup"] == bf["setup"]
    assert res.chosen["usd_per_mtok"] == pytest.approx(bf["usd_per_mtok"], rel=1e-12)
    # a grid where the answer is not simply the cheapest card: some setups miss, one is pruned
    ev = res.evaluated
    assert any(r["feasible"] for r in ev) and any(not r["feasible"] for r in ev)
    assert res.pruned["memory"] > 0
    cheaper = [r for r in ev if r["usd_per_hour"] < res.chosen["usd_per_hour"]]
    assert cheaper and not any(r["feasible"] for r in cheaper)
    # the pruned ones really cannot pass: replayed, they miss the target
    for r in res.records:
        if r["status"] == "pruned":
            s = next(s for s in setups if s.label == r["setup"])
            out = rp.replay(tr.scaled(0.2), s, obj.server(), ttft_slo_s=1.0, tpot_slo_s=0.05)
            assert out.summary()["slo_attainment"] < obj.attainment


def test_context_pruning_is_exact():
    """A setup is pruned for the trace's long requests only when they alone break the target."""
    reqs = [(i * 30.0, 2000, 100) for i in range(17)] + [(600.0 + i, 40000, 100) for i in range(3)]
    tr = traces.from_requests(reqs, name="three long")
    s, _ = sr.candidates(["mistral-small-24b"], ["rtx-4090"], [1], ["q4_K"], ["f16"], ["layer"])
    pt = prices.load()
    # mistral-small-24b's context is 32,768 tokens: the three 40K requests can never be served
    for att, pruned in ((0.9, True), (0.85, False)):
        obj = sr.Objective(ttft_slo_s=60, tpot_slo_s=1.0, attainment=att, max_rate=False)
        kept, out = sr.prune(s, tr, obj, pt)
        assert bool(out) == pruned
        if pruned:
            assert out[0]["pruned_by"] == "context" and "3 of 20" in out[0]["why"]
    res = sr.evaluate(s[0], tr, sr.Objective(ttft_slo_s=60, tpot_slo_s=1.0, attainment=0.85, max_rate=False))
    assert res["rejected"] == 3 and res["slo_attainment"] == pytest.approx(17 / 20)


def test_pareto_front_is_the_non_dominated_set():
    import random
    rng = random.Random(3)
    rows = [{"x": rng.choice([1, 2, 3, 5, 8]) * 1.0, "y": rng.random() * 10, "i": i} for i in range(60)]
    rows.append({"x": math.nan, "y": 0.0, "i": -1})
    for x_max in (True, False):
        front = sr.pareto(rows, "x", "y", x_max=x_max)
        ok = [r for r in rows if math.isfinite(r["x"])]

        def beats(a, b):
            bx = a["x"] >= b["x"] if x_max else a["x"] <= b["x"]
            sx = a["x"] > b["x"] if x_max else a["x"] < b["x"]
            return bx and a["y"] <= b["y"] and (sx or a["y"] < b["y"])
        want = {r["i"] for r in ok if not any(beats(o, r) for o in ok)}
        assert {r["i"] for r in front} == want


def test_pareto_chart_tick_labels_do_not_overlap():
    """Goodput spanning about 1.5 decades got minor-tick labels (2x10^2, 3x10^2, 4x10^2...) drawn on top
    of each other on pareto.png's log axes; every axis' visible tick labels now stand apart."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rows = []
    for i in range(24):
        g = 150.0 * 20 ** (i / 23)                      # 150 .. 3000 tok/s
        rows.append(dict(status="evaluated", setup=f"m, card {i}, q4_K/f16, typical", feasible=i % 3 == 0,
                         max_goodput_tok_s=g, usd_per_mtok_at_max=0.04 * 200 ** ((i * 7 % 24) / 23),
                         ttft_p99_s=0.17 * 3000 ** (i / 23), usd_per_mtok=0.05 * 150 ** ((i * 5 % 24) / 23)))
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1)
    res = sr.SearchResult(trace={"trace": "t"}, objective=obj, records=rows, chosen=rows[3],
                          front_goodput=rows[::6], front_ttft=rows[::8], prices=prices.load(),
                          n_candidates=len(rows), pruned={}, reused=0)
    fig = rs.pareto_chart(res)
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
            lo, hi = (ax.get_xlim() if axis is ax.xaxis else ax.get_ylim())
            labels = [t for t in labels if lo <= (t.get_position()[0] if axis is ax.xaxis else t.get_position()[1]) <= hi]
            assert len(labels) >= 2
            boxes = [t.get_window_extent(r) for t in labels]
            for i, a in enumerate(boxes):
                assert not any(a.overlaps(b) for b in boxes[i + 1:]), [t.get_text() for t in labels]


def _visible_tick_labels(ax, axis):
    lo, hi = sorted(ax.get_xlim() if axis is ax.xaxis else ax.get_ylim())
    i = 0 if axis is ax.xaxis else 1
    return [t.get_text() for t in axis.get_ticklabels(which="both")
            if t.get_visible() and t.get_text() and lo <= t.get_position()[i] <= hi]


def test_pareto_chart_narrow_ranges_get_two_labelled_ticks():
    """`search --models glm-4.7-flash --gpus rtx-3090,rtx-4090 --cards 1,2` on azure-conv-2023[:300]: cost per
    million tokens from $0.056 to $0.16 (under a decade) showed one labelled tick, '0.1': search drew with its own
    tick helper, which fixed the steps from the limits when called (1-2-5: 0.05 and 0.2 fell outside); it now
    uses plots.plain_log_axis, which picks the steps on the final limits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rows = []
    for i, (g, c, t, c2) in enumerate(((564, 0.056, 15.0, 0.115), (601, 0.061, 9.14, 0.112), (714, 0.103, 5.09, 0.195),
                                       (594, 0.106, 9.31, 0.189), (461, 0.160, 26.3, 0.340), (417, 0.150, 33.0, 0.345))):
        rows.append(dict(status="evaluated", setup=f"m, card {i}, q4_K/f16, typical", feasible=False,
                         max_goodput_tok_s=float(g), usd_per_mtok_at_max=c, ttft_p99_s=t, usd_per_mtok=c2))
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1)
    res = sr.SearchResult(trace={"trace": "t"}, objective=obj, records=rows, chosen=None,
                          front_goodput=rows[:3], front_ttft=rows[1:3], prices=prices.load(),
                          n_candidates=len(rows), pruned={}, reused=0)
    fig = rs.pareto_chart(res)
    FigureCanvasAgg(fig).draw()
    import re
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = _visible_tick_labels(ax, axis)
            assert len(labels) >= 2, labels
            # plain numbers (plots.plain_number), never 10^-1 or 2x10^2
            assert all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?|0\.\d+", t) for t in labels), labels
    from glmbench.report import plots
    assert all(isinstance(ax.yaxis.get_major_locator(), plots._PlainLogLocator) for ax in fig.axes)


def test_max_rate_is_bracketed_by_replays():
    """The reported highest rate passes; 1 + tol above it fails (the bisection's bracket)."""
    tr = _azure(200)
    s, _ = sr.candidates(["glm-4.7-flash"], ["rtx-3090"], [1], ["q4_K"], ["f16"], ["layer"])
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, rate_scale=0.5)
    r = sr.evaluate(s[0], tr, obj)
    assert r["max_rate_bound"] == "bisected" and r["max_rate_scale"] > 0

    def att(scale):
        out = rp.replay(tr.scaled(scale), s[0], obj.server(), ttft_slo_s=2.0, tpot_slo_s=0.1)
        # the bisection's quick count agrees with the replay's own summary
        m = sr._replay_metrics(out, scale, tr)
        sm = out.summary()
        assert m["slo_attainment"] == sm["slo_attainment"] and m["goodput_tok_s"] == pytest.approx(sm["goodput_tok_s"])
        return sm["slo_attainment"]
    lo, hi = r["max_rate_scale"], r["max_rate_fail_scale"]
    assert lo < hi <= lo * (1 + obj.rate_tol)
    assert att(lo) >= 0.9 and att(hi) < 0.9
    assert r["max_rate_attainment"] == att(lo)
    assert r["max_goodput_tok_s"] > 0 and r["replays"] >= 3


def test_resume_reuses_every_evaluation(tmp_path):
    tr = _azure(100)
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False)
    store = str(tmp_path / "setups.json")
    kw = dict(models=["glm-4.7-flash"], gpus=["rtx-3090", "rtx-4090"], cards=(1, 2), weights=("q4_K",), kv=("f16",),
              splits=("layer",), workers=1, store=store)
    a = sr.search(tr, obj, **kw)
    seen = []
    b = sr.search(tr, obj, on_result=seen.append, **kw)
    assert a.reused == 0 and b.reused == len(b.evaluated) == 4 and not seen
    assert [r["slo_attainment"] for r in a.evaluated] == [r["slo_attainment"] for r in b.evaluated]
    # another target is another question: nothing reused
    c = sr.search(tr, sr.Objective(ttft_slo_s=3.0, tpot_slo_s=0.1, max_rate=False), **kw)
    assert c.reused == 0


# ---- a worker killed mid-search --------------------------------------------------------------------
def _stall_first(folder, key, setup):
    """Runs in the worker before each evaluation: the first task to start writes its worker's pid
    and waits to be killed (by the test); later tasks, and the retried one, run normally."""
    try:
        fd = os.open(os.path.join(folder, "victim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, f"{os.getpid()} {key}".encode())
    os.close(fd)
    time.sleep(120)


def _killer(folder, killed):
    path = os.path.join(folder, "victim")
    for _ in range(1200):
        if os.path.exists(path) and os.path.getsize(path):
            with open(path) as f:
                pid, key = f.read().split()
            os.kill(int(pid), signal.SIGKILL)
            killed.update(pid=int(pid), key=key)
            return
        time.sleep(0.05)


def _killed_search(tmp_path, **kw):
    tr = _azure(150)
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False)
    grid = dict(models=["glm-4.7-flash", "mistral-small-24b"], gpus=["rtx-3090", "rtx-4090"], cards=(1, 2),
                weights=("q4_K",), kv=("f16",), splits=("layer",))
    killed, calls = {}, []
    t = threading.Thread(target=_killer, args=(str(tmp_path), killed), daemon=True)
    t.start()
    res = sr.search(tr, obj, hook=functools.partial(_stall_first, str(tmp_path)), on_result=calls.append,
                    **grid, **kw)
    t.join(timeout=5)
    serial = sr.search(tr, obj, workers=1, **grid)
    return res, serial, killed, calls


def _check_exactly_once(res, serial, killed, calls):
    assert killed, "the worker was not killed"
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)
    keys = [r["fingerprint"] for r in calls]
    assert sorted(keys) == sorted(r["fingerprint"] for r in serial.evaluated)   # every setup, once each
    assert len(set(keys)) == len(keys) and res.run["duplicates"] == 0
    assert all(r["status"] == "evaluated" for r in res.evaluated)
    redo = next(r for r in res.evaluated if r["fingerprint"] == killed["key"])
    assert not redo["worker"].endswith(f":{killed['pid']}")                      # run again, elsewhere
    want = {r["fingerprint"]: r for r in serial.evaluated}
    for r in res.evaluated:                                                       # the same numbers
        for k in ("slo_attainment", "ttft_p99_s", "tpot_p99_s", "goodput_tok_s", "usd_per_mtok"):
            assert r[k] == want[r["fingerprint"]][k], k
    assert res.chosen["setup"] == serial.chosen["setup"]


def test_local_worker_killed_mid_search_is_retried(tmp_path):
    res, serial, killed, calls = _killed_search(tmp_path, workers=2)
    _check_exactly_once(res, serial, killed, calls)
    assert res.run["restarts"] >= 1


def _kill_always(label, key, setup):
    if setup.label == label:
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_task_that_always_kills_its_worker_fails_alone():
    tr = _azure(60)
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False)
    grid = dict(models=["glm-4.7-flash", "mistral-small-24b"], gpus=["rtx-3090", "rtx-4090"], cards=(1,),
                weights=("q4_K",), kv=("f16",))
    bad = "mistral-small-24b, RTX 3090, q4_K/f16, typical"
    calls = []
    res = sr.search(tr, obj, workers=2, hook=functools.partial(_kill_always, bad), on_result=calls.append, **grid)
    by = {r["setup"]: r for r in res.records}
    assert by[bad]["status"] == "failed" and f"died {sr.MAX_RETRIES + 1} times" in by[bad]["why"]
    assert sorted(r["setup"] for r in res.evaluated) == sorted(set(by) - {bad})     # the others, unharmed
    assert len(calls) == len({r["fingerprint"] for r in calls}) == 4
    assert res.run["deaths"][by[bad]["fingerprint"]] == sr.MAX_RETRIES + 1


def test_every_evaluation_failing_says_why():
    """A rate scale past the replay's clock fails every setup alike: the answer said only 'every
    evaluation failed', the reason was in setups.csv alone."""
    tr = _azure(20)
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False, rate_scale=1e-30)
    res = sr.search(tr, obj, workers=1, models=["qwen3-32b"], gpus=["rtx-3090"], cards=(1,), weights=("q4_K",),
                    kv=("f16",))
    assert not res.evaluated and res.records[0]["status"] == "failed"
    text = rs.answer(res)
    assert "every evaluation failed" in text and "beyond the replay clock" in text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")
def test_pool_workers_end_with_a_killed_search(tmp_path):
    """A search killed with kill -9 (or by the OOM killer) left its pool's workers waiting on their queue for
    ever (siblings hold the pipe open: no EOF); each now ends with the command (PR_SET_PDEATHSIG)."""
    import subprocess
    pids = tmp_path / "pids"
    pids.mkdir()
    script = (
        "import os, sys, time\n"
        "from glmbench.predict import search as sr, traces\n"
        "def hook(key, setup):\n"
        "    open(os.path.join(sys.argv[1], str(os.getpid())), 'w').close()\n"
        "    time.sleep(600)\n"
        "tr = sr._first(traces.load('azure-conv-2023'), 20)\n"
        "obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False)\n"
        "sr.search(tr, obj, workers=2, hook=hook, models=['glm-4.7-flash', 'qwen3-32b'], gpus=['rtx-3090'],\n"
        "          cards=(1,), weights=('q4_K',), kv=('f16',))\n")
    import glmbench   # the glmbench this test imports (the installed one in CI), not the checkout's by cwd
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(glmbench.__file__)))]
                                                      + [p for p in sys.path if p]))
    p = subprocess.Popen([sys.executable, "-c", script, str(pids)], env=env, cwd=str(tmp_path))
    try:
        t0 = time.time()
        while len(os.listdir(pids)) < 2 and time.time() - t0 < 120 and p.poll() is None:
            time.sleep(0.1)
        workers = [int(n) for n in os.listdir(pids)]
        assert len(workers) == 2, (workers, p.poll())
        for w in workers:
            os.kill(w, 0)                           # alive, in their task
    finally:
        p.kill()
        p.wait(timeout=60)

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"    # a zombie has ended
        except FileNotFoundError:
            return False
    t0 = time.time()
    while any(alive(w) for w in workers) and time.time() - t0 < 30:
        time.sleep(0.1)
    left = [w for w in workers if alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, f"pool workers {left} outlived their killed search"


@pytest.mark.slow
def test_ray_worker_killed_mid_search_is_retried(tmp_path):
    ray = pytest.importorskip("ray", reason='Ray is optional (pip install "glmbench[ray]")')
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as e:          # noqa: BLE001 - any reason Ray cannot start here is a skip
        pytest.skip(f"a local Ray cluster cannot start here: {e}")
    try:
        # the hook lives in this test module, which Ray's workers cannot import: send it by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        res, serial, killed, calls = _killed_search(tmp_path, ray="auto")
    finally:
        ray.shutdown()
    _check_exactly_once(res, serial, killed, calls)
    assert res.run["backend"].startswith("ray")


# ---- prices --------------------------------------------------------------------------------------
def test_price_table_costs_and_overrides(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"years": 1, "kwh_usd": 0.2, "cards": {
        "RTX 3090": {"purchase_usd": 876, "power_w": 500}, "h100-sxm": {"cloud_usd_per_hour": 2.5}}}))
    pt = prices.load(str(f))
    c = pt.cost("rtx-3090", 2)
    # 876 USD over 8,760 h = 0.10 $/h, + 0.5 kW x 0.2 $/kWh = 0.10 $/h; two cards
    assert c.usd_per_hour == pytest.approx(0.4) and c.basis == "purchase"
    assert pt.cost("h100-sxm", 4).usd_per_hour == pytest.approx(10.0)
    assert pt.cost("rtx-4090", 1).usd_per_hour > 0            # the defaults stay for cards the file skips
    cloud = prices.load(str(f), basis="cloud")
    assert cloud.why_unpriced("rtx-3090") and cloud.why_unpriced("h100-sxm") is None
    assert prices.load(str(f), years=2).cost("rtx-3090", 1).usd_per_hour == pytest.approx(876 / 17520 + 0.1)


def test_unknown_card_in_the_price_table_is_one_clear_error(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[cards.rtx-9999]\npurchase_usd = 1\npower_w = 1\n')
    with pytest.raises(ValueError, match=r"p\.toml: card 'rtx-9999' in the price table is not in the hardware catalog"):
        prices.load(str(f))
    f.write_text('[cards.rtx-3090]\npurchase_usd = 1\n')
    with pytest.raises(ValueError, match=r"p\.toml: cards\.rtx-3090: field `power_w` is missing"):
        prices.load(str(f))


# ---- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ttft,tpot,bad", [(0, 0.1, "TTFT"), (-1, 0.1, "TTFT"), (1.0, 0, "TPOT"),
                                           (1.0, -0.5, "TPOT"), (math.nan, 0.1, "TTFT")])
def test_slo_must_be_positive(ttft, tpot, bad):
    with pytest.raises(ValueError, match=f"the {bad} target\\) must be a positive number of seconds"):
        sr.Objective(ttft_slo_s=ttft, tpot_slo_s=tpot)


def test_cli_slo_zero_is_one_line(capsys, tmp_path):
    rc = cli.main(["search", "--trace", "azure-code-2023", "--ttft-slo", "0", "--tpot-slo", "0.1",
                   "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "--ttft-slo" in err and "must be > 0" in err
    rc = cli.main(["search", "--trace", "azure-code-2023", "--ttft-slo", "1", "--tpot-slo", "-1",
                   "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "--tpot-slo" in err
    assert not os.path.exists(tmp_path / "o")


@pytest.mark.parametrize("grid,stage", [
    (dict(models=["qwen3-32b"], gpus=["rtx-3090"], cards=[1], weights=["q8_0"]), "memory"),
    (dict(models=["glm-4.7-flash"], gpus=["h200-sxm"], cards=[1]), "price"),
    (dict(models=["glm-4.7-flash"], gpus=["rtx-3090"], cards=[8], splits=["tensor"]), "invalid"),
])
def test_empty_after_pruning_names_the_constraint(grid, stage):
    obj = sr.Objective(ttft_slo_s=1.0, tpot_slo_s=0.1, max_rate=False)
    with pytest.raises(sr.EmptySearch, match=f"the `{stage}` constraint removed the last ones"):
        sr.search(_azure(50), obj, workers=1, **grid)


def test_empty_after_pruning_by_context_and_cli_error(capsys, tmp_path):
    f = tmp_path / "long.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 10},60000,10\n" for i in range(5)))
    rc = cli.main(["search", "--trace", str(f), "--ttft-slo", "100", "--tpot-slo", "1", "--models", "mistral-small-24b",
                   "--gpus", "rtx-3090", "--cards", "1", "--weights", "q4_K", "--kv", "f16", "--workers", "1",
                   "-q", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "the `context` constraint removed the last ones" in err and "5 of 5 requests" in err


# ---- the study's decision tree -----------------------------------------------------------------------
def test_decision_tree_beside_the_study():
    rows = rs.decision_tree(workers=1)
    assert [r["shape"] for r in rows] == [s.name for s in rs.SHAPES]
    assert [r["study"] for r in rows] == ["MoE on one card", "dense on one card", "MoE split over two cards"]
    pt = prices.load()
    for r, sh in zip(rows, rs.SHAPES):
        res = r["result"]
        c = res.chosen
        assert c is not None and c["feasible"]
        # the search's answer is the brute-force one over the same candidates
        setups, _ = sr.candidates(rs.study_models(), [rs.STUDY_GPU], [1, 2], ["q4_K"], ["f16"], ["layer"],
                                  link_gbps=1.4, link_latency_us=30.0)
        bf = sr.brute_force(sh.trace(), res.objective, setups, pt)
        assert bf["setup"] == c["setup"]
        assert r["agree"] == (rs._kind(c) == sh.study_model and c["n_cards"] == sh.study_cards)
        assert r["why"]
        if not r["agree"]:
            # the reason holds in the records: every setup of the study's kind is pruned, misses the
            # targets, or costs at least as much as the choice
            mine = [x for x in res.records if rs._kind(x) == sh.study_model and x["n_cards"] == sh.study_cards]
            assert mine
            for x in mine:
                assert (x["status"] == "pruned" or not x["feasible"]
                        or x["usd_per_mtok"] >= c["usd_per_mtok"])
    text = rs.render_tree(rows)
    for r in rows:
        assert r["shape"] in text and r["study"] in text and r["search"] in text


# ---- the command ------------------------------------------------------------------------------------
def test_cli_search_writes_and_resumes(tmp_path, capsys):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 2.5},{500 + 37 * i},{60 + i}\n" for i in range(40)))
    out = tmp_path / "o"
    args = ["search", "--trace", str(f), "--ttft-slo", "2", "--tpot-slo", "0.1", "--models", "glm-4.7-flash,qwen3-32b",
            "--gpus", "rtx-3090,rtx-4090", "--cards", "1,2", "--weights", "q4_K", "--kv", "f16", "--split", "layer",
            "--workers", "1", "-q", "--out", str(out)]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "Cheapest setup meeting" in text
    for name in rs.FILES:
        assert (out / name).is_file()
    s = json.loads((out / "search.json").read_text())
    assert s["candidates"] == 8 and s["evaluated"] == 8 and s["reused"] == 0 and s["chosen"]["setup"] in text
    import csv
    with open(out / "setups.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 8
    assert cli.main(args) == 0
    capsys.readouterr()
    s2 = json.loads((out / "search.json").read_text())
    assert s2["reused"] == 8 and s2["chosen"] == s["chosen"]


def test_no_setup_meets_names_the_nearest_as_closest():
    """Targets no setup reaches (every one at 0%): the answer named the first setup evaluated (one RTX
    3090) as "the closest", though an RTX 4090 misses them by less; at equal attainment the closest is
    now the one whose p99 TTFT / TPOT are nearest the targets."""
    tr = _azure(20)
    obj = sr.Objective(ttft_slo_s=1e-4, tpot_slo_s=1e-4, max_rate=False)
    res = sr.search(tr, obj, workers=1, models=["glm-4.7-flash"], gpus=["rtx-3090", "rtx-4090"], cards=(1,),
                    weights=("q4_K",), kv=("f16",))
    ev = res.evaluated
    assert res.chosen is None and len(ev) == 2 and all(r["slo_attainment"] == 0.0 for r in ev)
    assert ev[0]["hardware"] == "rtx-3090"      # the order the old answer's max() fell back on
    near = min(ev, key=lambda r: max(r["ttft_p99_s"] / 1e-4, r["tpot_p99_s"] / 1e-4))
    assert near["hardware"] == "rtx-4090"
    text = rs.answer(res)
    assert "No candidate meets" in text and f"The closest, {near['setup']}, reaches 0.0%" in text, text


def test_rate_counts_the_gaps_between_arrivals():
    """Two requests 1 s apart arrive at 1 request per second: the rate was n / duration, 2 req/s (and a
    setup's highest sustained rate as much too high, by n / (n - 1))."""
    tr = traces.from_requests([(0.0, 100, 5), (1.0, 100, 5)], name="two")
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, rate_scale=2.0)
    res = sr.search(tr, obj, workers=1, models=["glm-4.7-flash"], gpus=["rtx-3090"], cards=(1,), weights=("q4_K",),
                    kv=("f16",))
    assert res.trace["rate_req_s"] == pytest.approx(2.0, rel=1e-12)
    c = res.chosen
    assert c["max_rate_req_s"] == pytest.approx(c["max_rate_scale"], rel=1e-12)
    assert "rate x2 = 2 req/s" in rs.answer(res)


@pytest.mark.parametrize("reqs", [[(0.0, 100, 5)] * 3, [(7.0, 100, 5)]], ids=["at-once", "one"])
def test_a_trace_arriving_at_once_has_no_max_rate(reqs):
    """Requests that all arrive together (an offline batch) or a single one have no rate to scale: every
    rate scale replays the same, and the answer said the setup 'still meets the targets at x1.02e+03 the
    trace's rate' (the bracketing's bound). Now no highest rate is searched, said in a notice."""
    tr = traces.from_requests(reqs, name="batch")
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1)
    res = sr.search(tr, obj, workers=1, models=["glm-4.7-flash"], gpus=["rtx-3090"], cards=(1,), weights=("q4_K",),
                    kv=("f16",))
    c = res.chosen
    assert c is not None and c["replays"] == 1 and "max_rate_bound" not in c
    assert res.objective.max_rate is False
    assert any("no arrival rate to scale" in n for n in res.trace["notices"])
    assert "x1.02e+03" not in rs.answer(res) and "sustains" not in rs.answer(res)
    assert tr.meta["notices"] == []         # the caller's Trace is not changed


def test_search_says_the_trace_s_notices(tmp_path, capsys):
    """Rows out of time order (sorted) and requests the trace logged as failed (0 output tokens, never
    replayed, left out of the attainment) are said, as `trace` says them: search.md, search.json and
    stderr; with --requests N the failed ones counted in those N. Search said neither."""
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,10\n2,100,0\n1,300,20\n3,100,0\n4,120,0\n")
    out = tmp_path / "o"
    args = ["search", "--trace", str(f), "--ttft-slo", "2", "--tpot-slo", "0.1", "--models", "glm-4.7-flash",
            "--gpus", "rtx-3090", "--cards", "1", "--weights", "q4_K", "--kv", "f16", "--no-max-rate",
            "--workers", "1", "-q", "--out", str(out)]
    assert cli.main(args) == 0
    err = capsys.readouterr().err
    md = (out / "search.md").read_text()
    notes = json.loads((out / "search.json").read_text())["trace"]["notices"]
    for text in (err, md, " ".join(notes)):
        assert "not in time order" in text and "3 requests with 0 output tokens" in text, text
    assert cli.main(args[:-2] + ["--requests", "3", "--out", str(tmp_path / "o3")]) == 0
    err = capsys.readouterr().err
    assert "not in time order" in err and "1 request with 0 output tokens" in err and "3 requests" not in err, err
    # more requests asked for than the trace holds: all of them, said (it was silent)
    assert cli.main(args[:-2] + ["--requests", "500", "--out", str(tmp_path / "o500")]) == 0
    err = capsys.readouterr().err
    assert "--requests 500 asks for more than the trace's 5 requests: all 5 are replayed" in err, err
    assert "3 requests with 0 output tokens" in err
    assert json.loads((tmp_path / "o500" / "search.json").read_text())["trace"]["requests"] == 5


def test_whole_catalog_leaves_unpriced_cards_out_and_names_them():
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1, max_rate=False)
    pt = prices.load(basis="cloud")             # the defaults price a few data-center cards by the hour
    cloud = {g for g in hardware.list_gpus() if pt.why_unpriced(g) is None}
    assert "h100-sxm" in cloud and "rtx-3090" not in cloud
    res = sr.search(_azure(50), obj, models=["glm-4.7-flash"], cards=[1], weights=["q4_K"], kv=["f16"],
                    price_table=pt, workers=1)
    assert {r["hardware"] for r in res.records} == cloud
    assert "rtx-3090" in res.run["unpriced_cards"] and "have no price" in rs.pruning_line(res)
    with pytest.raises(sr.EmptySearch, match="the `price` constraint removed every card of the hardware catalog"):
        sr.search(_azure(50), obj, models=["glm-4.7-flash"], price_table=prices.PriceTable(3, 0.16, "any", {}))


def test_ray_missing_is_one_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)          # `import ray` raises ImportError
    rc = cli.main(["search", "--trace", "azure-code-2023", "--requests", "20", "--ttft-slo", "2", "--tpot-slo", "0.1",
                   "--models", "glm-4.7-flash", "--gpus", "rtx-3090", "--cards", "1", "--weights", "q4_K", "--kv", "f16",
                   "--ray", "auto", "-q", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and 'pip install "glmbench[ray]"' in err


def test_shipped_prices_skip_cards_the_catalog_lacks(tmp_path, monkeypatch):
    f = tmp_path / "default.json"
    f.write_text(json.dumps({"years": 3, "kwh_usd": 0.1, "cards": {
        "rtx-9999": {"purchase_usd": 1, "power_w": 1}, "rtx-3090": {"purchase_usd": 876, "power_w": 0}}}))
    monkeypatch.setattr(prices, "DEFAULT_PRICES", str(f))
    pt = prices.load()
    assert sorted(pt.cards) == ["rtx-3090"] and pt.cost("rtx-3090", 1).usd_per_hour == pytest.approx(876 / 26280)
    with pytest.raises(ValueError, match="rtx-9999"):
        prices.load(str(f))                     # the same card in a user file: an error


def test_cli_decision_tree(tmp_path, capsys):
    out = tmp_path / "dt"
    assert cli.main(["search", "--decision-tree", "--no-max-rate", "--workers", "1", "-q", "--json", "--out", str(out)]) == 0
    rows = json.loads(capsys.readouterr().out.split("\nwritten to")[0])
    assert [r["study"] for r in rows] == [s.study_says for s in rs.SHAPES]
    assert all(r["search"] and r["why"] for r in rows)
    assert (out / "decision_tree.md").read_text().startswith("# glmbench search: the study's decision tree")
    for s in rs.SHAPES:
        assert (out / s.name.replace(" ", "-") / "search.json").is_file()


def test_pareto_front_staircase_runs_through_reached_corners():
    """pareto.png's front staircase went through the corners no setup reaches: on the goodput panel from
    (564 tok/s, $0.056) across to 601 tok/s at $0.056 (steps-post), on the TTFT panel down at 5.09 s to the
    cost of the setup at 9.14 s (steps-pre). Every point of the drawn staircase is now reached or beaten by a
    setup of the front (more goodput or less TTFT, and no more cost)."""
    from matplotlib.cbook import STEP_LOOKUP_MAP
    rows = []
    for i, (g, c, t, c2) in enumerate(((564, 0.056, 15.0, 0.115), (601, 0.061, 9.14, 0.112), (714, 0.103, 5.09, 0.195),
                                       (594, 0.106, 9.31, 0.189), (461, 0.160, 26.3, 0.340))):
        rows.append(dict(status="evaluated", setup=f"m, card {i}, q4_K/f16, typical", feasible=False,
                         max_goodput_tok_s=float(g), usd_per_mtok_at_max=c, ttft_p99_s=t, usd_per_mtok=c2))
    fg = sr.pareto(rows, "max_goodput_tok_s", "usd_per_mtok_at_max", x_max=True)
    ft = sr.pareto(rows, "ttft_p99_s", "usd_per_mtok", x_max=False)
    assert len(fg) == 3 and len(ft) == 2
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1)
    res = sr.SearchResult(trace={"trace": "t"}, objective=obj, records=rows, chosen=None, front_goodput=fg,
                          front_ttft=ft, prices=prices.load(), n_candidates=len(rows), pruned={}, reused=0)
    fig = rs.pareto_chart(res)
    for ax, front, xf, yf, more_x in ((fig.axes[0], fg, "max_goodput_tok_s", "usd_per_mtok_at_max", True),
                                      (fig.axes[1], ft, "ttft_p99_s", "usd_per_mtok", False)):
        (line,) = [ln for ln in ax.lines if ln.get_label() == "Pareto front"]
        steps = STEP_LOOKUP_MAP[line.get_drawstyle()](line.get_xdata(), line.get_ydata())
        path = list(zip(steps[0], steps[1]))
        for x, y in path:
            assert any((r[xf] >= x if more_x else r[xf] <= x) and r[yf] <= y for r in front), (xf, x, y)
        # the staircase joins every setup of the front, from the first to the last
        for r in front:
            assert (r[xf], r[yf]) in path
        assert path[0] == (front[0][xf], front[0][yf]) and path[-1] == (front[-1][xf], front[-1][yf])
        # the marks stand on the setups only
        marked = [path[i] for i in line.get_markevery()] if line.get_markevery() is not None else path
        assert sorted(marked) == sorted((r[xf], r[yf]) for r in front)


def test_pareto_chart_names_the_chosen_setup_clear_of_the_dots():
    """`search --trace azure-conv-2023 --requests 1000 ...`: pareto.png wrote the chosen setup's name up and right of
    its star, on top of the blue dots of the setups that also meet the targets. The name now stands clear of every
    dot, the front and the target line (in the star's legend entry), and every legend is clear of the data."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from glmbench.report import plots
    rows = []
    # the chosen (cheapest feasible) setup, then a diagonal of dearer feasible ones up and right of it, and misses
    for i in range(30):
        k = 1.06 ** i
        rows.append(dict(status="evaluated", setup=f"m{i}, card {i}, q4_K/f16, typical", feasible=True,
                         max_goodput_tok_s=2000.0 * k, usd_per_mtok_at_max=1.5 * k, ttft_p99_s=0.3 * k,
                         usd_per_mtok=3.0 * k))
    for i in range(40):
        rows.append(dict(status="evaluated", setup=f"x{i}, card, q4_K/f16, typical", feasible=False,
                         max_goodput_tok_s=20.0 * 1.12 ** i, usd_per_mtok_at_max=0.05 * 1.1 ** (i % 13),
                         ttft_p99_s=5.0 * 1.15 ** i, usd_per_mtok=0.1 * 1.1 ** (i % 17)))
    fg = sr.pareto(rows, "max_goodput_tok_s", "usd_per_mtok_at_max", x_max=True)
    ft = sr.pareto(rows, "ttft_p99_s", "usd_per_mtok", x_max=False)
    obj = sr.Objective(ttft_slo_s=2.0, tpot_slo_s=0.1)
    res = sr.SearchResult(trace={"trace": "t"}, objective=obj, records=rows, chosen=rows[0], front_goodput=fg,
                          front_ttft=ft, prices=prices.load(), n_candidates=len(rows), pruned={}, reused=0)
    fig = rs.pareto_chart(res)
    FigureCanvasAgg(fig).draw()
    r = fig.canvas.get_renderer()
    name = rs._short(rows[0])
    for ax in fig.axes:
        for t in ax.texts:                                  # nothing written on the data
            assert not plots.covers_data(ax, t.get_window_extent(r)), t.get_text()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend()] + [(None, lg) for lg in fig.legends]
    assert legends
    for ax, leg in legends:
        for a in ([ax] if ax else fig.axes):
            assert not plots.covers_data(a, leg.get_window_extent(r))
    for ax in fig.axes:
        said = [t for t in ax.texts if name in t.get_text()]
        said += [t for _, leg in legends for t in leg.get_texts() if name in t.get_text()]
        assert said, name
