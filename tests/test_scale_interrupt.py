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
