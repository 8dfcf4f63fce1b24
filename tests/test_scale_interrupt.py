"""Long runs and large inputs: how often a resumable file is rewritten, what an interrupted run keeps,
progress bars that tick per unit of work."""
import json

import pytest

from glmbench import report
from glmbench.predict import hardware as hw
from glmbench.predict import sweep
from glmbench.results import records

MODELS = ["glm-4.7-flash", "qwen3-32b", "qwen3-8b", "llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v2-lite"]
SETUPS = [dict(rig="rtx-3090"), dict(rig=hw.study_rig(), split="layer")]


class _Clock:
    """A clock that only a file rewrite advances: pricing takes no time, a rewrite one second."""
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


@pytest.fixture
def slow_writes(monkeypatch):
    clock = _Clock()
    calls = []
    merge = records.merge_records

    def counted(path, recs, key):
        calls.append(len(list(recs)))
        clock.now += 1.0
        return merge(path, recs, key)
    monkeypatch.setattr(sweep, "time", clock, raising=False)
    monkeypatch.setattr(sweep.rec, "merge_records", counted)
    return calls


def test_sweep_does_not_rewrite_its_file_once_per_setup(tmp_path, slow_writes):
    # one rewrite of the whole file per setup made a sweep quadratic in its size (10 models x 3 card counts:
    # 23 s with --out, 6 s without; 40 models: 229 s); a rewrite is due only once the pricing since the
    # last one took as long as it did
    out = tmp_path / "s.json"
    recs = sweep.predict(MODELS, SETUPS, [1024, 8192], tests=("tg",), out=out)
    assert len(recs) == len(MODELS) * len(SETUPS) * 2
    assert len(slow_writes) <= 2 < len(MODELS) * len(SETUPS)   # the first setup, then the rest at the end
    held = records.read_records(out)
    assert sorted(map(sweep._key, held)) == sorted(map(sweep._key, recs))


@pytest.mark.parametrize("stop_at", [1, 5, 11])
def test_interrupted_sweep_keeps_every_finished_setup(tmp_path, slow_writes, monkeypatch, stop_at):
    out = tmp_path / "s.json"
    point = sweep._point
    seen = []

    def interrupting(s, *a):
        if s not in seen:
            seen.append(s)
        if len(seen) > stop_at:
            raise KeyboardInterrupt
        return point(s, *a)
    monkeypatch.setattr(sweep, "_point", interrupting)
    with pytest.raises(KeyboardInterrupt):
        sweep.predict(MODELS, SETUPS, [1024, 8192], tests=("tg", "mem"), out=out)
    held = records.read_records(out)
    assert len(held) == stop_at * 2 * 2            # every point of the finished setups, none of the next
    assert len({sweep._key(r) for r in held}) == len(held)
    monkeypatch.setattr(sweep, "_point", point)
    full = sweep.predict(MODELS, SETUPS, [1024, 8192], tests=("tg", "mem"), out=out)
    assert records.read_records(out) == full
    assert [r for r in full if sweep._key(r) in {sweep._key(h) for h in held}] == held   # reused as stored


def test_sweep_progress_bar_ticks_per_setup(capsys):
    study = report.Study(models=("glm-4.7-flash", "qwen3-32b", "qwen3-8b"), cards=(1, 2), depths=(1024, 4096))
    report.sweep(study, tests=("tg", "mem", "serve"), progress=True)
    err = capsys.readouterr().err
    # two grids (tg+mem, serve) of 3 models x 2 card counts: 12 ticks, not 2
    assert "12/12" in err and "setup" in err, err


class _CountingDict(dict):
    gets = 0

    def get(self, *a):
        _CountingDict.gets += 1
        return super().get(*a)


def test_compare_summary_is_linear_in_the_records(tmp_path):
    # `any(x.get("cv_error") ... for x in recs)` inside the loop over the records: 100,000 records ran for
    # minutes; the work per record must not grow with the file
    from glmbench.results import compare
    p = str(tmp_path / "s.json")   # (was a tempfile.mkdtemp() folder left behind in /tmp by every run)
    sweep.predict(["glm-4.7-flash", "qwen3-32b"], SETUPS, [1024, 8192], tests=("tg", "pp", "mem"), out=p)
    base = records.read_records(p)

    def gets(n):
        recs = [_CountingDict({**base[i % len(base)], "n_depth": i}) for i in range(n)]
        _CountingDict.gets = 0
        rows, _ = compare.summarize(recs)
        assert len(rows) == n
        return _CountingDict.gets
    assert gets(800) < 2.5 * gets(400)


class _CountingText(str):
    scanned = 0

    def count(self, sub, start=0, end=None):
        end = len(self) if end is None else end
        _CountingText.scanned += max(0, end - start)
        return super().count(sub, start, end)


def test_llama_bench_json_items_line_numbers_are_counted_once():
    # each element's line was counted from the start of the text: a 50,000-row llama-bench JSON took minutes
    from glmbench.results import importers
    row = {"model_type": "deepseek2 16B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 100.0}

    def scanned(n):
        text = _CountingText("[\n" + ",\n".join("  " + json.dumps(row) for _ in range(n)) + "\n]\n")
        _CountingText.scanned = 0
        items = importers._json_items(text, "x.json")
        assert [line for line, _ in items] == list(range(2, n + 2))
        return _CountingText.scanned
    assert scanned(400) < 2.5 * scanned(200)


def test_llama_bench_json_error_still_names_its_line(tmp_path):
    from glmbench.results import importers
    text = "[\n" + ",\n".join('  {"a": %d}' % i for i in range(50)) + ",\n  {\"a\": 1} x\n]\n"
    with pytest.raises(ValueError, match=r":52\b|line 52"):
        importers._json_items(text, str(tmp_path / "x.json"))


def test_pasted_text_is_unquoted_once_per_detection(monkeypatch):
    # each of _detect_pasted's eight checks split and cleaned every line of the text again: a JSON records file
    # of 20,000 records spent 27 s in compare, 19 s of them here
    from glmbench.results import importers
    calls = []
    unquote = importers._unquote_tabs

    def counted(text):
        calls.append(1)
        return unquote(text)
    monkeypatch.setattr(importers, "_unquote_tabs", counted)
    prose = "\n".join(f"line {i} of notes, no table here" for i in range(50))
    assert importers._detect_pasted(prose) is None
    assert len(calls) == 1
    table = "| model | size | params | backend | ngl | test | t/s |\n|---|---|---|---|---|---|---|\n" \
            "| qwen3 8B Q4_0 | 4.5 GiB | 8.2 B | CUDA | 99 | tg128 | 100.0 ± 1.0 |\n"
    calls.clear()
    assert importers._detect_pasted(table) == "llama-bench-md"
    assert len(calls) == 1


@pytest.mark.parametrize("argv, says, saved", [
    (["sweep", "--depths", "1K", "--out", "{d}/s.json"], "finished points are saved in {d}/s.json; rerun to resume",
     True),
    # stopped before its first save: no file there to resume from (it said the points were saved in it)
    (["sweep", "--depths", "1K", "--out", "{d}/s.json"], "nothing was saved", False),
    (["sweep", "--depths", "1K"], "nothing was saved", False),
    (["trace", "mooncake-synthetic", "--out", "{d}/t"], "nothing was saved", False),
])
def test_interrupt_says_what_was_kept(tmp_path, monkeypatch, capsys, argv, says, saved):
    from glmbench import cli

    def interrupted(*a, **k):
        if saved:
            records.write_records(str(tmp_path / "s.json"), [{"evidence": "predicted", "test": "tg", "avg_ts": 1.0}])
        raise KeyboardInterrupt
    monkeypatch.setattr(cli.report, "sweep", interrupted)
    monkeypatch.setattr(cli, "_load_trace", interrupted)
    rc = cli.main([a.format(d=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == cli.EXIT_INTERRUPTED
    assert err.strip().splitlines()[-1] == "glmbench: interrupted (" + says.format(d=tmp_path) + ")"


def test_azure_trace_parses_each_second_once(tmp_path):
    """An Azure trace's rows share their whole second with their neighbours (thousands of requests
    an hour): strptime, half of reading a 1.5M-line trace, runs once per distinct second, and the
    arrivals are the same as parsing every row on its own."""
    import datetime
    from glmbench.predict import traces
    rows = []
    for i in range(600):
        sec, frac = divmod(i, 200)              # 3 distinct seconds, 200 rows each
        rows.append(f"2023-11-16 18:17:0{sec}.{frac:07d},{10 + i},2")
    p = tmp_path / "az.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    traces._azure_seconds.cache_clear()
    tr = traces.read(str(p))
    assert traces._azure_seconds.cache_info().misses == 3
    t0 = datetime.datetime(2023, 11, 16, 18, 17, 0, tzinfo=datetime.timezone.utc).timestamp()
    want = [(datetime.datetime(2023, 11, 16, 18, 17, i // 200, tzinfo=datetime.timezone.utc).timestamp() - t0)
            + (i % 200) * 1e-7 for i in range(600)]
    got = tr.arrival_s
    assert got == pytest.approx(want, abs=1e-9)


def test_a_trace_study_of_one_run_ticks_per_request(capsys):
    """`trace` on one setup is one replay: the bar of runs alone stays at 0/1 until the end (no
    ETA for a million-request trace); the replay's own bar ticks per request beneath it."""
    from glmbench.predict import costmodel as cm
    from glmbench.predict import replay as rp
    from glmbench.predict import traces
    n = 40
    tr = traces.from_requests([(0.05 * i, 200, 8) for i in range(n)], name="ladder")
    rp.study(tr, [cm.Setup("glm-4.7-flash", "rtx-3090")], prefix_cache=(False,), progress=True)
    err = capsys.readouterr().err
    assert "1/1" in err and f"/{n} [" in err and "req/s" in err, err
    rp.study(tr, [cm.Setup("glm-4.7-flash", "rtx-3090")], prefix_cache=(False,), progress=False)
    assert capsys.readouterr().err == ""
