"""Output and input files as users hand them over (audit 61): a blank --out to resume into, a
symbolic link as --out, a records CSV with a cell past csv's 128 KiB default, --out paths of
truth-table and hardware --save-host checked before the work, SIGTERM like Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from glmbench import cli
from glmbench.results import importers, records as rec
from test_trust import one_line_error, run  # noqa: E402

SWEEP = ["sweep", "--model", "glm-4.7-flash", "--cards", "1", "--tests", "tg", "-q"]



@pytest.mark.parametrize("blank", ["", "\n", "  \n\n", "\r\n"])
def test_a_blank_out_file_is_a_new_one_to_resume_into(capsys, tmp_path, blank):
    """`touch out.json` (or `> out.json`) before the run: the --out checks take the blank file as a new
    one, and the sweep then failed reading it ("not valid JSON (line 1: Expecting value)")."""
    out = tmp_path / "out.json"
    out.write_bytes(blank.encode())
    rc, _, err = run(capsys, *SWEEP, "--depths", "1K,4K", "--out", str(out))
    assert rc == 0, err
    assert [r["n_depth"] for r in rec.read_records(out)] == [1024, 4096]
    assert "2 computed" in err and "the file holds 2 records" in err
    # the store and the merge of the measured side and search take it as empty too
    out.write_bytes(blank.encode())
    st = rec.ResultStore(str(out), lambda r: (r["test"],))
    assert st.records == []
    st.add({"evidence": "measured", "test": "tg", "avg_ts": 1.0})
    assert rec.read_records(out) == [{"evidence": "measured", "test": "tg", "avg_ts": 1.0}]
    out.write_bytes(blank.encode())
    assert rec.merge_records(str(out), [{"evidence": "measured", "test": "pp", "avg_ts": 2.0}], lambda r: (r["test"],)) == 1
    assert rec.read_existing(str(tmp_path / "missing.json")) == []


def test_a_symlinked_out_is_written_through_the_link(capsys, tmp_path):
    """--out latest.json, a link to runs/r.json: the records go into runs/r.json and the link stays.
    os.replace over the link made it a plain file; runs/r.json kept its old records, and a run into
    runs/r.json then lost what the run through the link wrote (two lock files, too)."""
    (tmp_path / "runs").mkdir()
    real = tmp_path / "runs" / "r.json"
    link = tmp_path / "latest.json"
    rc, _, err = run(capsys, *SWEEP, "--depths", "1K", "--out", str(real))
    assert rc == 0, err
    os.symlink(os.path.join("runs", "r.json"), link)
    rc, _, err = run(capsys, *SWEEP, "--depths", "2K", "--out", str(link))
    assert rc == 0, err
    assert os.path.islink(link)
    assert sorted(r["n_depth"] for r in rec.read_records(real)) == [1024, 2048]
    rc, _, err = run(capsys, *SWEEP, "--depths", "4K", "--out", str(real))
    assert rc == 0, err
    assert sorted(r["n_depth"] for r in rec.read_records(link)) == [1024, 2048, 4096]
    # one lock for every name of the file, beside the file itself
    assert rec.lock_path(link) == rec.lock_path(real) == str(tmp_path / "runs" / ".r.json.lock")
    assert not os.path.exists(tmp_path / ".latest.json.lock")
    # the plain writers too (calibrate's profile, truth-table's text); a dangling link is created at its target
    os.symlink(os.path.join("runs", "t.md"), tmp_path / "t.md")
    rec.atomic_write_text(tmp_path / "t.md", "# x\n")
    assert os.path.islink(tmp_path / "t.md") and (tmp_path / "runs" / "t.md").read_text() == "# x\n"
    assert not [n for n in os.listdir(tmp_path) + os.listdir(tmp_path / "runs") if n.startswith(".tmp-")]


def test_a_records_csv_with_a_cell_past_128_kib_reads_back(capsys, tmp_path):
    """A measured record's routing_counts (60 MoE layers x 384 experts of a Kimi-K2 .gguf) is one CSV
    cell over csv's default limit of 131072 characters: glmbench wrote the file, then every reader
    refused it ("field larger than field limit"), `compare` with a traceback."""
    counts = {str(layer): [1234567] * 384 for layer in range(60)}
    r = {"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "n_prompt": 0, "n_gen": 16,
         "n_depth": 0, "avg_ts": 10.0, "routing_counts": counts}
    path = tmp_path / "m.csv"
    rec.write_records(path, [r])
    assert os.path.getsize(path) > 131072
    assert rec.read_records(path)[0]["routing_counts"] == counts
    assert importers.read(str(path))[0]["routing_counts"] == counts
    rc, out, err = run(capsys, "compare", str(path))
    assert rc == 0, err
    assert "1 point" in out


def test_csv_with_lines_ended_by_cr_alone_is_read(capsys, tmp_path):
    """Excel for Mac's "CSV (Macintosh)" ends lines with a carriage return alone: llama-bench's CSV and
    glmbench's own records so saved stopped the readers ("new-line character seen in unquoted field",
    `compare` a traceback); a stray CR inside a line of a file with newlines is one error naming it."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "data", "formats", "llama-bench.csv"), newline="") as f:
        text = f.read()
    lf = tmp_path / "lb.csv"
    lf.write_text(text, newline="")
    cr = tmp_path / "lb-mac.csv"
    cr.write_text(text.replace("\r\n", "\n").replace("\n", "\r"), newline="")
    want = [(r["test"], r["n_depth"], r["avg_ts"]) for r in importers.read(str(lf))]
    assert [(r["test"], r["n_depth"], r["avg_ts"]) for r in importers.read(str(cr))] == want
    rc, out, err = run(capsys, "compare", str(cr))
    assert rc == 0, err
    ours = [{"evidence": "measured", "test": "tg", "model": "glm-4.7-flash", "n_depth": 0, "n_prompt": 0, "n_gen": 16,
             "avg_ts": 10.0}]
    mac = tmp_path / "ours.csv"
    mac.write_text(rec.to_csv(ours).replace("\n", "\r"), newline="")
    assert rec.read_records(mac) == ours
    bad = tmp_path / "bad.csv"
    bad.write_text("evidence,test,avg_ts\nmeasured,t\rg,1\n", newline="")
    rc, _, err = run(capsys, "compare", str(bad))
    assert "bad.csv" in one_line_error(rc, err)


def test_truth_table_out_is_checked_first_and_never_its_own_input(capsys, tmp_path, monkeypatch):
    """truth-table --measured m.json --out m.json replaced the measurements with the markdown table (no
    check of --out at all: any file was overwritten; a folder or a path under a file failed after the
    whole build, naming the temp file)."""
    from glmbench.report import truth

    def no_build(*a, **k):
        raise AssertionError("built the table before checking --out")
    monkeypatch.setattr(truth, "build", no_build)
    m = tmp_path / "m.json"
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    m.write_bytes(open(shipped, "rb").read())
    before = m.read_bytes()
    base = ["truth-table", "-q", "--measured", str(m), "--measured-hardware", "rtx-3090"]
    for force in ([], ["--force"]):
        rc, _, err = run(capsys, *base, "--out", str(m), *force)
        assert "one of the files it reads" in one_line_error(rc, err)
    assert m.read_bytes() == before
    other = tmp_path / "notes.md"
    other.write_text("# my notes\n")
    rc, _, err = run(capsys, *base, "--out", str(other))
    assert "not a truth table" in one_line_error(rc, err) and "--force" in err
    assert other.read_text() == "# my notes\n"
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder.md").mkdir()
    for bad, says in ((tmp_path / "afile" / "t.md", "is a file, not a folder"), (tmp_path / "folder.md", "is a folder"),
                      ("", "is empty")):
        rc, _, err = run(capsys, *base, "--out", str(bad))
        assert says in one_line_error(rc, err)
    # a file of a --host folder is an input too
    host = tmp_path / "host"
    host.mkdir()
    (host / "records.json").write_text("[]")
    rc, _, err = run(capsys, "truth-table", "-q", "--host", str(host), "--out", str(host / "records.json"), "--force")
    assert "one of the files it reads" in one_line_error(rc, err)
    # a truth table there, or --force over another file: replaced
    monkeypatch.setattr(truth, "build", lambda *a, **k: ([], []))
    monkeypatch.setattr(truth, "render", lambda *a, **k: "# Truth table: every measured point beside its predictions\n")
    rc, _, err = run(capsys, "truth-table", "-q", "--out", str(other), "--force")
    assert rc == 0, err
    assert other.read_text().startswith("# Truth table")
    rc, _, err = run(capsys, "truth-table", "-q", "--out", str(other))
    assert rc == 0, err


def test_hardware_save_host_is_checked_before_measuring(capsys, tmp_path, monkeypatch):
    """--save-host into a folder, under a file, or over a file that is no hardware profile: it measured the
    machine, said "written to FILE", then failed (or replaced the file); now one error before measuring."""
    from glmbench.predict import hardware
    calls = []

    def host_now(what, then):
        calls.append(what)
        return hardware.get_gpu("rtx-3090")
    monkeypatch.setattr(cli, "_host_now", host_now)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder.json").mkdir()
    records = tmp_path / "m.json"
    records.write_text(json.dumps([{"evidence": "measured", "test": "tg", "avg_ts": 1.0}]))
    for bad, says in ((tmp_path / "afile" / "h.json", "is a file, not a folder"),
                      (tmp_path / "folder.json", "is a folder"), (tmp_path / "h.txt", "must end in .json"),
                      (records, "not a hardware profile")):
        rc, _, err = run(capsys, "hardware", "--save-host", str(bad))
        assert says in one_line_error(rc, err)
    assert calls == []
    assert json.loads(records.read_text())[0]["avg_ts"] == 1.0
    prof = tmp_path / "h.json"
    for argv in (["--save-host", str(prof)], ["--save-host", str(prof)], ["--save-host", str(records), "--force"]):
        rc, _, err = run(capsys, "hardware", *argv)
        assert rc == 0, err
        assert err.strip().splitlines()[-1].startswith(f"wrote {argv[1]}")
    assert hardware.load_profile(str(prof)).bandwidth_gbs == hardware.get_gpu("rtx-3090").bandwidth_gbs
    assert hardware.load_profile(str(records)).name == hardware.get_gpu("rtx-3090").name


def _env():
    import glmbench
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(glmbench.__file__))) + os.pathsep + \
        env.get("PYTHONPATH", "")
    return env


def test_sigterm_saves_the_finished_points_and_says_so(tmp_path):
    """`kill`, `timeout`, a scheduler's time limit send SIGTERM: Python's default ended the sweep at once,
    losing the setups priced since its last save (a sweep saves only every so often), saying nothing, a temp
    file possibly left. Now as Ctrl-C: everything finished is saved, one line says so, and the process ends
    by SIGTERM as before (a shell's 143); the rerun computes only the rest."""
    out = str(tmp_path / "s.json")
    argv = [sys.executable, "-m", "glmbench"] + _BIG_SWEEP + ["--out", out]
    p = subprocess.Popen(argv, env=_env(), cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    _term_after_first_save(p, out)
    _, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == f"glmbench: terminated (SIGTERM) (finished points are saved in {out}; " \
                                           "rerun to resume)"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]
    kept = len(rec.read_records(out))
    r = subprocess.run(argv, env=_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    total = len(rec.read_records(out))
    assert 0 < kept < total
    assert f"{total - kept} computed" in r.stderr and f"{kept} reused" in r.stderr


_BIG_SWEEP = ["sweep", "--model", "glm-4.7-flash", "--model", "qwen3-30b-a3b", "--cards", "1,2,4,8",
              "--depths", "1K..128K", "--tests", "tg,pp,mem,serve", "-q", "--json"]


def _term_after_first_save(p, out):
    t0 = time.time()
    while not os.path.exists(out) and p.poll() is None and time.time() - t0 < 120:
        time.sleep(0.005)
    assert p.poll() is None, "the sweep ended before its first save: make the grid bigger"
    p.send_signal(signal.SIGTERM)


def test_sigterm_ends_a_caller_of_main_too(tmp_path):
    """A script or notebook calling cli.main() got SIGTERM: the points were saved, but main() returned 143
    and the caller went on running (printed 'after main' here), as a process told to end should not. Now
    it ends by SIGTERM after the save and the line, as it would have without glmbench, and a shell running
    glmbench still reports 143."""
    out = str(tmp_path / "s.json")
    code = f"import sys\nfrom glmbench import cli\nrc = cli.main({_BIG_SWEEP + ['--out', out]!r})\nprint('after main', rc)\n"
    p = subprocess.Popen([sys.executable, "-c", code], env=_env(), cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    _term_after_first_save(p, out)
    so, err = p.communicate(timeout=120)
    assert p.returncode == -signal.SIGTERM, (so, err)
    assert "after main" not in so
    assert err.strip().splitlines()[-1].startswith("glmbench: terminated (SIGTERM) (finished points are saved in")
    assert len(rec.read_records(out)) > 0
    sh = subprocess.run(["sh", "-c", f"{sys.executable} -c 'import os, signal; os.kill(os.getpid(), signal.SIGTERM)'; "
                         "echo $?"], capture_output=True, text=True, timeout=60)
    assert sh.stdout.strip() == "143"      # (what a shell says of a process ended so)


def test_sigterm_handler_is_only_the_commands(tmp_path, capsys):
    """cli.main installs its SIGTERM handler for the command only, and leaves a caller's own alone."""
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["models", "glm-4.7-flash"]) == 0
    assert signal.getsignal(signal.SIGTERM) == before
    mine = lambda *a: None   # noqa: E731
    signal.signal(signal.SIGTERM, mine)
    try:
        seen = []
        orig = cli._main
        cli._main = lambda argv: seen.append(signal.getsignal(signal.SIGTERM)) or 0
        try:
            cli.main([])
        finally:
            cli._main = orig
        assert seen == [mine]
    finally:
        signal.signal(signal.SIGTERM, before)
    capsys.readouterr()


def _fifo_with(tmp_path, name, data: bytes):
    """A named pipe `name` in tmp_path that a thread fills with `data` once a reader opens it."""
    import threading
    p = tmp_path / name
    os.mkfifo(p)

    def feed():
        with open(p, "wb") as f:
            f.write(data)
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return str(p), t


def test_calibrate_reads_a_pipe_once_and_names_a_folder(capsys, tmp_path):
    """calibrate read its input twice (to tell the format, then again as records): a named pipe (or
    /dev/stdin, `... | glmbench calibrate /dev/stdin`) was refused as "no such file", and a file
    rewritten between the two reads gave records of two versions. A folder said "no such file"."""
    from glmbench.predict import calibrate as cal
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    data = open(shipped, "rb").read()
    want = [(w.rsplit(":", 1)[1], r) for w, r in cal.read_measured(shipped)]
    p, t = _fifo_with(tmp_path, "m.json", data)
    got = cal.read_measured(p)
    t.join(timeout=30)
    assert [(w.rsplit(":", 1)[1], r) for w, r in got] == want      # the same records, the same lines
    # glmbench's CSV through a pipe named without a suffix: told by its text
    csv_text = rec.to_csv([r for _, r in want]).encode()
    p, t = _fifo_with(tmp_path, "m-pipe", csv_text)
    got = cal.read_measured(p)
    t.join(timeout=30)
    assert [r["avg_ts"] for _, r in got] == [r["avg_ts"] for _, r in want]
    (tmp_path / "d.json").mkdir()
    rc, _, err = run(capsys, "calibrate", str(tmp_path / "d.json"), "--hardware", "rtx-3090", "--out",
                     str(tmp_path / "p.json"))
    assert "is a folder" in one_line_error(rc, err)


def test_a_piped_trace_that_is_not_utf8_is_one_error_not_a_hang(tmp_path):
    """The reader of a trace that is not UTF-8 opened the file again to find the bad byte's line: a
    named pipe, read once already, blocked there for ever (no writer)."""
    p = tmp_path / "t.csv"
    os.mkfifo(p)
    code = ("import sys\nfrom glmbench.predict import traces\n"
            "try:\n    traces.load(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(p)], env=_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    with open(p, "wb") as f:
        f.write(b"arrival_s,prompt_tokens,output_tokens\n0,\xff\xfe,3\n")
    try:
        out, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the trace reader hung on a pipe")
    assert child.returncode == 0, err
    assert "t.csv" in out and "not UTF-8" in out


def test_one_command_at_a_time_writes_an_out_folder(tmp_path):
    """Two reports / traces / searches into one --out folder at once left a folder mixing both runs'
    files, and a search's setups.json one search's evaluations (the other's lost). The second now waits
    for the first, saying so, then writes a whole folder of its own."""
    import fcntl
    out = tmp_path / "t"
    out.mkdir()
    trace = tmp_path / "tr.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 0.5},{512 + 64 * i},{8 + i}\n"
                                                                         for i in range(12)))
    fd = os.open(tmp_path / ".t.lock", os.O_RDWR | os.O_CREAT)      # the folder's sidecar lock
    fcntl.flock(fd, fcntl.LOCK_EX)       # another command is writing it
    try:
        p = subprocess.Popen([sys.executable, "-m", "glmbench", "trace", str(trace), "-q", "--out", str(out)],
                             env=_env(), cwd=str(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        line = p.stderr.readline()      # (the trace replays first, then waits to write)
        assert "another glmbench command is writing into this folder; waiting" in line, line
        time.sleep(0.5)
        assert p.poll() is None and not (out / "trace.json").exists()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert (out / "trace.json").exists() and (out / "trace_runs.csv").exists()
    assert not [n for n in os.listdir(out) if n.startswith(".")]     # the folder holds only the command's files


@pytest.mark.skipif(not hasattr(os, "fork") or rec.fcntl is None, reason="fork and advisory locks (POSIX)")
def test_a_killed_command_leaves_no_folder_lock_to_its_forked_workers(tmp_path):
    """search --workers N forks its pool inside the folder lock: the workers inherited the lock's descriptor, and
    where the command was killed (kill -9, the OOM killer) its orphaned workers, which wait on their queue for
    ever, held the lock: every later command into the folder waited for ever ("another glmbench command is
    writing into this folder"). A forked child holds no copy of the lock; the parent keeps it while it lives."""
    import fcntl
    out = tmp_path / "s"
    script = (
        "import os, sys, time\n"
        "from glmbench import cli\n"
        "with cli._folder_held(sys.argv[1]):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        time.sleep(120)\n"
        "        os._exit(0)\n"
        "    print(pid, flush=True)\n"
        "    sys.stdin.readline()\n"
        "    os.kill(os.getpid(), 9)\n")
    p = subprocess.Popen([sys.executable, "-c", script, str(out)], env=_env(), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    child = int(p.stdout.readline())
    fd = os.open(tmp_path / ".s.lock", os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):       # the command, alive, holds it
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait(timeout=60)
        assert p.returncode == -9
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # its orphaned child (still alive) does not
    finally:
        os.close(fd)
        os.kill(child, 9)


def test_a_failed_report_leaves_no_folder_it_made(capsys, tmp_path, monkeypatch):
    from glmbench import report

    def fails(*a, **k):
        raise ValueError("no")
    monkeypatch.setattr(report, "run", fails)
    rc, _, err = run(capsys, "report", "--model", "glm-4.7-flash", "--out", str(tmp_path / "new"))
    assert rc == 2 and not (tmp_path / "new").exists()


def test_plot_of_a_pipe_draws_into_the_current_folder(capsys, tmp_path, monkeypatch):
    """`glmbench plot /dev/stdin < r.json` (or a fifo elsewhere) drew into /dev/stdin-charts: the default
    folder is beside the file, and a pipe's "beside" is /dev (or /proc/self/fd for <(...))."""
    recs = [{"evidence": "predicted", "test": "tg", "model": "glm-4.7-flash", "n_depth": d, "n_prompt": 0, "n_gen": 1,
             "n_streams": 1, "avg_ts": 100.0 - d / 1024, "device": "RTX 3090", "n_cards": 1} for d in (1024, 4096, 16384)]
    elsewhere = tmp_path / "pipes"
    elsewhere.mkdir()
    p, t = _fifo_with(elsewhere, "r.json", rec.to_json(recs).encode())
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    rc, out, err = run(capsys, "plot", p)
    t.join(timeout=30)
    assert rc == 0, err
    assert os.listdir(elsewhere) == ["r.json"]
    assert (here / "r-charts" / "generation_vs_context.png").exists()
    # a regular file: beside it, as before
    f = tmp_path / "s.json"
    rec.write_records(f, recs)
    rc, out, err = run(capsys, "plot", str(f))
    assert rc == 0, err
    assert (tmp_path / "s-charts" / "generation_vs_context.png").exists()


def test_gzipped_inputs_are_named_as_such(capsys, tmp_path):
    """A results file or trace saved gzip-compressed said "not a text file (not UTF-8)" or that traces end
    in .jsonl or .csv; now that it is gzip-compressed and what to run."""
    import gzip
    here = os.path.dirname(os.path.abspath(__file__))
    lb = tmp_path / "llama-bench.json"
    with open(os.path.join(here, "data", "formats", "llama-bench.json"), "rb") as f:
        lb.write_bytes(gzip.compress(f.read()))
    rc, _, err = run(capsys, "compare", str(lb))
    assert "gzip-compressed" in one_line_error(rc, err) and "gunzip" in err
    tr = tmp_path / "t.csv.gz"
    tr.write_bytes(gzip.compress(b"arrival_s,prompt_tokens,output_tokens\n0,10,3\n"))
    rc, _, err = run(capsys, "trace", str(tr), "-q")
    assert "gzip-compressed" in one_line_error(rc, err)


@pytest.mark.parametrize("name", ["t.csv", "t.jsonl", "trace"])
def test_a_gzipped_trace_without_gz_in_its_name_is_named_as_such(capsys, tmp_path, name):
    """A trace gzip-compressed under a plain name (t.csv, t.jsonl) said "not a text file (not UTF-8 at
    byte 1)" and one with no suffix that traces end in .jsonl or .csv; the gzip bytes 1f 8b say it."""
    import gzip
    tr = tmp_path / name
    tr.write_bytes(gzip.compress(b"arrival_s,prompt_tokens,output_tokens\n0,10,3\n"))
    rc, _, err = run(capsys, "trace", str(tr), "-q")
    msg = one_line_error(rc, err)
    assert "gzip-compressed" in msg and "gunzip" in msg and "not UTF-8" not in msg


def test_a_gzipped_records_file_without_gz_in_its_name_is_named_as_such(tmp_path):
    """read_records of a gzip-compressed r.json said "not UTF-8 text (byte 1: invalid start byte)"."""
    import gzip
    r = tmp_path / "r.json"
    r.write_bytes(gzip.compress(b'[{"test": "tg", "avg_ts": 1.0}]'))
    with pytest.raises(ValueError, match="gzip-compressed.*gunzip"):
        rec.read_records(r)
    r.write_bytes(b'[{"test": "tg"}]\xff')          # other bytes that are not UTF-8 still say so
    with pytest.raises(ValueError, match="not UTF-8"):
        rec.read_records(r)


def test_a_failed_write_names_the_file(capsys, tmp_path, monkeypatch):
    """A full disk (ENOSPC at write or fsync) ended `glmbench sweep` with "error: glmbench sweep: No space
    left on device", naming no file; the old file stays whole and no temp file is left."""
    import errno
    out = tmp_path / "s.json"
    rec.write_records(out, [{"evidence": "predicted", "test": "tg", "avg_ts": 1.0}])
    before = out.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(rec.os, "fsync", full)
    rc, _, err = run(capsys, *SWEEP, "--depths", "1K", "--out", str(out))
    line = one_line_error(rc, err)
    assert line.endswith(f"No space left on device: {out}"), line
    assert out.read_bytes() == before
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_sweep_and_measure_never_write_over_a_file_they_read(capsys, tmp_path):
    """`--force` let `sweep --hardware card.json --out card.json` and `measure config.json --out config.json`
    replace the profile or the model config they had just read with records (calibrate and truth-table
    never write over their inputs; these had no such check)."""
    from glmbench.predict import hardware
    card = tmp_path / "card.json"
    card.write_text(json.dumps(hardware.profile_to_dict(hardware.get_gpu("rtx-3090")), indent=1))
    before = card.read_bytes()
    rc, _, err = run(capsys, *SWEEP, "--hardware", str(card), "--depths", "1K", "--out", str(card), "--force")
    assert "one of the files it reads" in one_line_error(rc, err)
    assert card.read_bytes() == before
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 64}))
    before = cfg.read_bytes()
    rc, _, err = run(capsys, "measure", str(cfg), "--out", str(cfg), "--force", "-q")
    assert "one of the files it reads" in one_line_error(rc, err)
    assert cfg.read_bytes() == before
    # another file with --force is still replaced
    other = tmp_path / "other.json"
    other.write_text("{}")
    rc, _, err = run(capsys, *SWEEP, "--hardware", str(card), "--depths", "1K", "--out", str(other), "--force")
    assert rc == 0, err
    assert rec.read_records(other)[0]["n_depth"] == 1024


def test_no_command_writes_over_a_file_of_a_model_folder_it_reads(capsys, tmp_path):
    """A model given as an HF folder (--model mf, measure mf, --measured-model mf): `--out mf/config.json --force`
    deleted the folder's config.json (sweep: after reading it; the sweep then failed, 'folder holds no
    config.json') or wrote a truth table over it. The files of a model folder are inputs as a model file is."""
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "models", "qwen3-32b.json")
    mf = tmp_path / "mf"
    mf.mkdir()
    cfg = mf / "config.json"
    cfg.write_bytes(open(shipped, "rb").read())
    before = cfg.read_bytes()
    for argv in (["sweep", "--model", str(mf), "--depths", "1K", "--tests", "tg", "-q", "--out", str(cfg), "--force"],
                 ["measure", str(mf), "-q", "--out", str(cfg), "--force"],
                 ["truth-table", "--measured-model", str(mf), "-q", "--out", str(cfg), "--force"]):
        rc, _, err = run(capsys, *argv)
        assert "one of the files it reads" in one_line_error(rc, err), argv
        assert cfg.read_bytes() == before, argv
    # records written into the model's folder, as any other file, are resumed from (they are no model file)
    held = []
    for _ in range(2):
        rc, _, err = run(capsys, "sweep", "--model", str(mf), "--depths", "1K", "--tests", "tg", "-q",
                         "--out", str(mf / "s.json"))
        assert rc == 0, err
        held.append(rec.read_records(mf / "s.json"))
    assert held[0] == held[1] and {r["n_depth"] for r in held[0]} == {1024}


def test_calibrate_never_writes_over_its_model_or_hardware_file(capsys, tmp_path):
    """calibrate --out refused only its measurement files: `--model cfg.json --out cfg.json --force` (or
    --hardware card.json, or a model folder's config.json) replaced the model config / hardware profile it had
    read with a runtime profile. Every file it reads is refused, --force or not (README: no command writes over
    one of the files it reads)."""
    from glmbench.predict import hardware
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    m = tmp_path / "m.json"
    m.write_bytes(open(shipped, "rb").read())
    cfg = tmp_path / "glm.json"
    cfg.write_bytes(open(os.path.join(os.path.dirname(cli.__file__), "data", "models", "glm-4.7-flash.json"), "rb").read())
    card = tmp_path / "card.json"
    card.write_text(json.dumps(hardware.profile_to_dict(hardware.get_gpu("rtx-3090")), indent=1))
    mf = tmp_path / "mf"
    mf.mkdir()
    (mf / "config.json").write_bytes(cfg.read_bytes())
    for opt, val, out in (("--model", cfg, cfg), ("--hardware", card, card), ("--model", mf, mf / "config.json")):
        before = out.read_bytes()
        rc, _, err = run(capsys, "calibrate", str(m), opt, str(val), "-q", "--out", str(out), "--force")
        assert "one of the files it reads" in one_line_error(rc, err), opt
        assert out.read_bytes() == before
    rc, _, err = run(capsys, "calibrate", str(m), "--model", str(cfg), "--hardware", str(card), "-q",
                     "--out", str(tmp_path / "p.json"))
    assert rc == 0, err


def test_calibrate_never_writes_its_refit_over_the_base_profile_it_reads(capsys, tmp_path):
    """`calibrate m.json --base p.json --out p.json` (a refit from a calibrated profile written back into it) replaced
    the profile it started from, --force or not (the file is a runtime profile glmbench wrote, so no --force was
    asked for); --base calibrated:p.json likewise. The --base file is one of the files calibrate reads."""
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    m = tmp_path / "m.json"
    m.write_bytes(open(shipped, "rb").read())
    p = tmp_path / "p.json"
    rc, _, err = run(capsys, "calibrate", str(m), "-q", "--out", str(p))
    assert rc == 0, err
    before = p.read_bytes()
    for base in (str(p), f"calibrated:{p}"):
        for force in ((), ("--force",)):
            rc, _, err = run(capsys, "calibrate", str(m), "--base", base, "-q", "--out", str(p), *force)
            assert "one of the files it reads" in one_line_error(rc, err), (base, force)
            assert p.read_bytes() == before, (base, force)
    # a refit from p.json into another file is written
    rc, _, err = run(capsys, "calibrate", str(m), "--base", f"calibrated:{p}", "-q", "--out", str(tmp_path / "q.json"))
    assert rc == 0, err
    assert (tmp_path / "q.json").exists() and p.read_bytes() == before


def test_trace_never_writes_over_the_trace_it_replays(capsys, tmp_path):
    """`glmbench trace d/trace.json --out d` (a JSON-lines trace named trace.json, read as one) replaced the trace
    with the replay's own trace.json; report --trace did the same. The files the command writes into --out are
    never the trace it reads."""
    d = tmp_path / "d"
    d.mkdir()
    t = d / "trace.json"
    t.write_text("".join(json.dumps({"timestamp": i * 500, "input_length": 512 + 64 * i, "output_length": 8 + i}) + "\n"
                         for i in range(12)))
    before = t.read_bytes()
    for argv in (["trace", str(t), "-q", "--out", str(d)],
                 ["report", "--model", "glm-4.7-flash", "--cards", "1", "--depths", "1K", "--concurrency", "1", "-q",
                  "--trace", str(t), "--out", str(d)]):
        rc, _, err = run(capsys, *argv)
        assert "refusing to modify its own input" in one_line_error(rc, err), argv
        assert t.read_bytes() == before and os.listdir(d) == ["trace.json"]
    rc, _, err = run(capsys, "trace", str(t), "-q", "--out", str(tmp_path / "elsewhere"))
    assert rc == 0, err
    assert t.read_bytes() == before and (tmp_path / "elsewhere" / "trace.json").exists()


def test_sweep_never_writes_over_the_runtime_profile_it_reads(capsys, tmp_path):
    """`sweep --runtime calibrated:p.json --out p.json --force` replaced the calibrated profile it priced with by
    the records (as truth-table --measured-calibrated p.json --out p.json --force wrote its table there): the
    runtime profile is one of the files it reads."""
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    prof = tmp_path / "p.json"
    rc, _, err = run(capsys, "calibrate", shipped, "-q", "--out", str(prof))
    assert rc == 0, err
    before = prof.read_bytes()
    for argv in ([*SWEEP, "--depths", "1K", "--runtime", f"calibrated:{prof}", "--out", str(prof), "--force"],
                 [*SWEEP, "--depths", "1K", "--runtime", str(prof), "--out", str(prof), "--force"],
                 ["truth-table", "--measured-calibrated", f"calibrated:{prof}", "-q", "--out", str(prof), "--force"]):
        rc, _, err = run(capsys, *argv)
        assert "one of the files it reads" in one_line_error(rc, err), argv
        assert prof.read_bytes() == before
    rc, _, err = run(capsys, *SWEEP, "--depths", "1K", "--runtime", f"calibrated:{prof}", "--out", str(tmp_path / "s.json"))
    assert rc == 0, err
    assert rec.read_records(tmp_path / "s.json")[0]["evidence"] == "calibrated"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_force_replaces_the_file_a_symlinked_out_leads_to(capsys, tmp_path):
    """`--out link.json --force` over a link to a file that is no records file removed the link and wrote a plain
    file in its place (the target kept its old text): an output that is a symbolic link is written through it,
    the link stays (README), --force or not."""
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    os.symlink(target, link)
    rc, _, err = run(capsys, *SWEEP, "--depths", "1K", "--out", str(link), "--force")
    assert rc == 0, err
    assert os.path.islink(link) and os.path.samefile(link, target)
    assert rec.read_records(target)[0]["n_depth"] == 1024


def _report_with_measured_in_its_folder(capsys, tmp_path, name):
    """report --measured rep/NAME --out rep, NAME a copy of a shipped measurement file:
    (rep, the file, its bytes before, rc, stderr)."""
    rep = tmp_path / "rep"
    rep.mkdir()
    shipped = os.path.join(os.path.dirname(cli.__file__), "data", "measured", "llama-cpp-1x3090.json")
    m = rep / name
    m.write_bytes(open(shipped, "rb").read())
    before = m.read_bytes()
    rc, _, err = run(capsys, "report", "--model", "glm-4.7-flash", "--cards", "1", "--depths", "1K", "--concurrency", "1",
                     "-q", "--measured", str(m), "--out", str(rep))
    return rep, m, before, rc, err


def test_report_never_rewrites_a_measured_file_it_reads(capsys, tmp_path):
    """report --measured rep/records.json --out rep rewrote its input with the study's predictions added;
    each rerun read those back as measured records, the file growing by the study each time."""
    rep, m, before, rc, err = _report_with_measured_in_its_folder(capsys, tmp_path, "records.json")
    assert "which the report rewrites" in one_line_error(rc, err)
    assert m.read_bytes() == before and os.listdir(rep) == ["records.json"]


def test_report_reads_a_measured_file_it_does_not_write_in_its_out_folder(capsys, tmp_path):
    """The refusal above is for the files the report writes (records.json / .csv, ...): a measurement kept in
    the report's folder under a name of its own (rep/lab.json) is read and left as it is (it was refused)."""
    rep, m, before, rc, err = _report_with_measured_in_its_folder(capsys, tmp_path, "lab.json")
    assert rc == 0, err
    assert m.read_bytes() == before
    n_measured = len(rec.read_records(m))
    assert sum(r.get("evidence") == "measured" for r in rec.read_records(rep / "records.json")) == n_measured > 0


def test_a_file_named_like_an_option_gets_a_hint(capsys, tmp_path, monkeypatch):
    """`glmbench compare -r.json` (a file whose name starts with '-') said only that FILE is required."""
    monkeypatch.chdir(tmp_path)
    rec.write_records("-r.json", [{"evidence": "predicted", "test": "tg", "model": "glm-4.7-flash", "n_depth": 0,
                                   "avg_ts": 1.0}])
    rec.write_records("b.json", [{"evidence": "predicted", "test": "tg", "model": "glm-4.7-flash", "n_depth": 0,
                                  "avg_ts": 2.0}])
    for argv in (["compare", "-r.json"], ["compare", "b.json", "-r.json"]):
        rc, _, err = run(capsys, *argv)
        assert "write ./-r.json (or put -- before it)" in one_line_error(rc, err)
    rc, out, err = run(capsys, "compare", "b.json", "./-r.json")
    assert rc == 0, err
    rc, _, err = run(capsys, "compare", "-nofile.json")
    assert "starts with '-'" not in one_line_error(rc, err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_out_that_is_a_named_pipe_or_a_link_to_one_is_one_error(tmp_path):
    """`--out` an existing named pipe (or a symbolic link to one; to a device alike): it was opened to check
    whether it held records, and the command waited for a writer for ever (on Ctrl-C it said the finished
    points were saved in it); with --force or through a link to a device node, the node was replaced by a
    plain file. Now one error before any work, --force or not, and the pipe is left as it was."""
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    (tmp_path / "l.json").symlink_to(fifo)
    for out, extra in (("p.json", []), ("p.json", ["--force"]), ("l.json", [])):
        r = subprocess.run([sys.executable, "-m", "glmbench"] + SWEEP + ["--depths", "1K", "--out", out] + extra,
                           env=_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=20)
        line = one_line_error(r.returncode, r.stderr)
        assert "is a named pipe (FIFO)" in line and repr(out) in line
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    r = subprocess.run([sys.executable, "-m", "glmbench", "calibrate", "m.json", "--out", "p.json"], env=_env(),
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=20)
    assert "is a named pipe (FIFO)" in one_line_error(r.returncode, r.stderr)
