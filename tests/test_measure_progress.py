"""What `glmbench measure` shows while it works, and what it prints: the bar of runs has its right
total from the start (the runs each point takes at the least) and grows only when a run is decided on
the fly (a warm-up run more, a retry), saying so; the build has its own bar; Ctrl-C in the build says
nothing was measured; sweep and measure print their records on stdout with or without --out.
Counted with a fake bar, never timed."""
import csv
import io
import itertools
import json

import pytest

from glmbench import cli
from glmbench.measure import cpu as C
from glmbench.measure import protocol
from glmbench.results import records

from test_measure import tiny_qwen
from test_measure_stability import FakeClocks, _probe, tiny_glm


class Bar:
    """A stand-in for tqdm: logs (n, total) after every update and each postfix set."""

    def __init__(self, total, log):
        self.total, self.n, self.log, self.postfix, self.closed = total, 0, log, [], False
        self.start_total = total

    def update(self, k=1):
        self.n += k
        self.log.append((self.n, self.total))

    def set_postfix_str(self, s="", refresh=True):
        self.postfix.append(s)

    def reset(self, total=None):
        self.n, self.total = 0, self.total if total is None else total

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    made = {"run": [], "build": []}
    monkeypatch.setattr(C, "_bar", lambda progress, total, name: made["run"].append(Bar(total, [])) or made["run"][-1]
                        if progress else None)
    monkeypatch.setattr(C, "_build_bar", lambda progress, n, name: made["build"].append(Bar(n, []))
                        or made["build"][-1] if progress else None, raising=False)
    return made


def _runs(recs):
    return sum(1 if r["test"] == "mem" else r["warmup_runs"] + len(r["samples_ns"]) for r in recs)


def test_bar_total_is_right_from_the_start_when_every_point_is_steady(bars, monkeypatch):
    # warmup=1: a point warms up until two runs agree, so it takes two warm-up runs at the least; the
    # bar planned one and grew by one per point (41 -> 66 over a run): its ETA was too short throughout
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: 1.0)     # steady: the fewest runs
    recs = C.measure(tiny_qwen(), tests=("pp", "tg", "mem"), depths=(0, 8), n_prompt=4, n_gen=2, repeats=2,
                     warmup=1, progress=True)
    (bar,) = bars["run"]
    assert all(r["warmup_runs"] == 2 for r in recs if r["test"] != "mem")
    assert bar.start_total == _runs(recs) == 4 * (2 + 2) + 1
    assert {t for _, t in bar.log} == {bar.start_total}     # never grew
    assert bar.n == bar.total and bar.closed


def test_bar_grows_when_an_extra_warm_up_run_is_decided(bars, monkeypatch):
    times = iter([1.0, 2.0, 1.0] + [1.0] * 40)    # the first point's warm-up: 1, 2 differ; 2, 1 differ; 1, 1 agree
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: next(times))
    recs = C.measure(tiny_qwen(), tests=("pp", "tg"), depths=(0,), n_prompt=4, n_gen=2, repeats=1, warmup=1,
                     progress=True)
    (bar,) = bars["run"]
    assert [r["warmup_runs"] for r in recs] == [4, 2]
    assert bar.start_total == 2 * (2 + 1) and bar.total == _runs(recs) == bar.start_total + 2
    # grown before the run it counts: the bar never stands at its end before the last run
    assert all(n < t for n, t in bar.log[:-1]) and bar.log[-1] == (bar.total, bar.total)
    assert any("warm-up run" in s for s in bar.postfix)


def test_bar_grows_by_a_whole_point_when_a_retry_is_decided(bars, monkeypatch):
    monkeypatch.setattr(protocol, "SPREAD_MAX", float("inf"))
    monkeypatch.setattr(C, "_step_seconds", lambda m, kinds, counts: 1.0)
    FakeClocks(monkeypatch, share=1.0, threads=1)
    _probe(monkeypatch, [20.0, 2.0, 20.0, 20.0, 20.0, 20.0])   # pp unstable once, then stable; tg stable
    pp, tg = C.measure(tiny_glm(3), threads=1, retries=2, tests=("pp", "tg"), depths=(0,), n_prompt=4, n_gen=2, repeats=2, warmup=1,
                       progress=True, layers="full", weights="f32", kv="f32")
    assert pp["attempts"] == 2 and tg["attempts"] == 1
    (bar,) = bars["run"]
    assert bar.start_total == 2 * (2 + 2)
    assert bar.total == bar.n == 3 * (2 + 2)                   # the retry's runs, added when it was decided
    # (was: the total grew by one at each run past it, so the bar stood at its end with an ETA of 0)
    assert all(n < t for n, t in bar.log[:-1])
    assert any(s.startswith("pp@0 retry 1/2") for s in bar.postfix)


def test_build_has_its_own_bar_and_the_run_bar_starts_after_it(bars, monkeypatch):
    order = []
    real = C.Model

    def model(*a, **k):
        order.append("build")
        return real(*a, **k)
    monkeypatch.setattr(C, "Model", model)
    C.measure(tiny_glm(3), tests=("tg",), depths=(0,), n_gen=2, repeats=1, warmup=0, progress=True, layers="full",
              weights="f32", kv="f32")
    (build,), (run,) = bars["build"], bars["run"]
    assert build.total == 3 and build.n == 3 and build.closed
    assert [n for n, _ in build.log] == [1, 2, 3]
    assert run.start_total == 1 and run.n == 1
    # with progress off: no bar at all
    bars["build"].clear()
    bars["run"].clear()
    C.measure(tiny_glm(3), tests=("tg",), depths=(0,), n_gen=2, repeats=1, warmup=0, progress=False,
              layers="full", weights="f32", kv="f32")
    assert bars == {"run": [], "build": []}


def _tiny_file(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(tiny_glm(3).hf))
    return str(cfg)


MEASURE = ["--depths", "0", "--n-gen", "2", "--n-prompt", "4", "--repeats", "1", "--threads", "1",
           "--layers", "full", "--weights", "f32", "--kv", "f32"]


@pytest.mark.parametrize("quiet", [True, False])
def test_interrupt_while_building_says_nothing_was_measured(tmp_path, monkeypatch, capsys, quiet):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(C, "Model", interrupted)
    out = tmp_path / "m.json"
    rc = cli.main(["measure", _tiny_file(tmp_path), *MEASURE, "--out", str(out)] + (["-q"] if quiet else []))
    err = capsys.readouterr().err
    assert rc == cli.EXIT_INTERRUPTED == 130
    last = f"glmbench: interrupted (nothing was measured yet; nothing written to {out})"
    if quiet:
        assert err.strip().splitlines() == [last]                 # one line, no bar
    else:
        assert err.strip().splitlines()[-1].endswith(last) and "build " in err   # the build's bar, then the line
    assert not out.exists()


def test_interrupt_after_a_point_says_what_was_kept(tmp_path, monkeypatch, capsys):
    real = C._run_point
    calls = itertools.count()

    def second_interrupted(*a, **k):
        if next(calls) == 1:
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(C, "_run_point", second_interrupted)
    out = tmp_path / "m.json"
    rc = cli.main(["measure", _tiny_file(tmp_path), *MEASURE, "-q", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 130
    assert err.strip().splitlines()[-1] == f"glmbench: interrupted (finished points are saved in {out}; rerun to resume)"
    assert len(records.read_records(out)) == 1


# ---- stdout with --out: one rule for sweep and measure ----------------------------------------
SWEEP = ["sweep", "-q", "--depths", "1K", "--cards", "1", "--tests", "tg"]


@pytest.mark.parametrize("suffix", ["json", "csv"])
def test_sweep_and_measure_print_their_table_with_or_without_out(tmp_path, capsys, suffix):
    # sweep --out x.csv printed nothing, sweep --out x.json and measure --out either printed the table
    cfg = _tiny_file(tmp_path)
    for argv, name in ((SWEEP, "s"), (["measure", cfg, "-q", *MEASURE], "m")):
        out = tmp_path / f"{name}.{suffix}"
        assert cli.main([*argv, "--out", str(out)]) == 0
        stdout, err = capsys.readouterr()
        recs = records.read_records(out)
        assert recs and stdout.startswith("| ") and stdout.count("\n| ") >= len(recs), (argv, stdout)
        assert f"{out}" in err                      # what was written: said on stderr
        # --json / --csv: that format alone on stdout, parseable, the same records as the file
        assert cli.main([*argv, "--out", str(out), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert [r["test"] for r in got] == [r["test"] for r in records.read_records(out)]
        assert cli.main([*argv, "--out", str(out), "--csv"]) == 0
        rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
        assert len(rows) == len(records.read_records(out)) and "avg_ts" in rows[0]


def test_a_model_files_build_ticks_per_layer_too(bars, tmp_path):
    # a checkpoint's layers (read from the file, not drawn at random) called no progress: its bar stood at 0
    from test_gguf import _write
    _, _, path = _write(tmp_path, "qwen3_moe")
    C.measure(path, tests=("tg",), depths=(0,), n_gen=2, repeats=1, warmup=0, kv="f32", progress=True)
    (build,) = bars["build"]
    assert build.total >= 2 and [n for n, _ in build.log] == list(range(1, build.total + 1)) and build.closed
