"""Files glmbench writes get an ordinary file's mode (0o666 less the umask: 0644 under umask
022), not mkstemp's 0600: a report is meant to be read by others (a web server, a colleague)."""
import os
import stat

import pytest

from glmbench import report
from glmbench.results import records as rec

POINT = {"evidence": "predicted", "test": "tg", "model": "m", "n_depth": 0, "avg_ts": 1.0}


@pytest.fixture
def umask():
    """Set the process umask for one test, restore it after."""
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_records_and_text_files_follow_the_umask(tmp_path, umask, mask, want):
    umask(mask)
    for name in ("r.json", "r.csv"):
        rec.write_records(tmp_path / name, [POINT])
        assert mode(tmp_path / name) == want, name
    rec.atomic_write_text(tmp_path / "notes.md", "hi\n")
    assert mode(tmp_path / "notes.md") == want
    store = rec.ResultStore(tmp_path / "store.json", key=lambda r: (r["test"],))
    store.add(POINT)
    assert mode(tmp_path / "store.json") == want
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]  # no temp file left


def test_rewrite_keeps_content_atomic_and_mode(tmp_path, umask):
    p = tmp_path / "r.json"
    rec.write_records(p, [POINT])
    rec.write_records(p, [POINT, dict(POINT, n_depth=1)])
    assert len(rec.read_records(p)) == 2 and mode(p) == 0o644


def test_a_rewrite_keeps_the_mode_the_user_gave_the_file(tmp_path, umask):
    # a results file made private (chmod 600) became 0644 on the next resumed run: os.replace put the
    # temp file's umask mode in its place; open(path, "w") would have kept it
    p = tmp_path / "r.json"
    rec.write_records(p, [POINT])
    os.chmod(p, 0o600)
    rec.write_records(p, [POINT, dict(POINT, n_depth=1)])
    assert mode(p) == 0o600
    store = rec.ResultStore(p, key=lambda r: (r["test"], r["n_depth"]))
    store.add(dict(POINT, n_depth=2))
    assert mode(p) == 0o600 and len(rec.read_records(p)) == 3
    os.chmod(p, 0o640)
    rec.atomic_write_text(p, "[]\n")
    assert mode(p) == 0o640


def test_a_failed_write_leaves_no_temp_file(tmp_path, umask):
    def boom(f):
        f.write("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        rec.atomic_write(tmp_path / "x.txt", boom)
    assert os.listdir(tmp_path) == []


def test_report_files_are_0644_under_umask_022(tmp_path, umask):
    study = report.Study(cards=(1, 2), depths=(1024, 8192), concurrency=(1, 4), prompts=(1024,),
                         workloads=report.WORKLOADS[:2])
    out = tmp_path / "rep"
    result = report.run(study, out, progress=False)
    files = sorted(os.listdir(out))
    assert "report.md" in files and any(f.endswith(".png") for f in files) and result["charts"]
    assert {f: oct(mode(out / f)) for f in files} == {f: oct(0o644) for f in files}
    assert mode(out) == 0o755
