"""Result records: the one tidy format every sweep, measurement and report reads and writes.

A record is a flat dict. Field names follow llama-bench where they overlap (`model_type`,
`n_prompt`, `n_gen`, `n_depth`, `n_batch`, `n_ubatch`, `avg_ts`, `stddev_ts`, `n_threads`, `type_k`,
`type_v`, `flash_attn`; `n_batch` is llama-bench's logical batch size), plus ours:

  evidence      "measured" | "predicted" | "calibrated"   (required on every record)
  model         built-in name or config path
  device        what ran it or what it was predicted for ("RTX 3090", "AMD EPYC (2 threads)")
  n_cards, split, link_gbps   the rig (split: "none" | "layer" | "tensor")
  weights       weight format ("bf16", "q4_0", "iq4_xs", ...)
  mla_strategy  "naive" | "absorbed" | "flash" | "" for GQA models
  n_streams     independent streams a step runs (tg/mem at several streams; 1 when absent)
  concurrency   requests in flight (serve)
  runtime       runtime-profile name for predictions ("ideal", "typical", "calibrated:<file>")
  test          "tg" (decode), "pp" (prefill), "mem", "serve"
                measured "mem" records carry byte counts (docs/MEASURE.md): weight_bytes, kv_bytes,
                kv_bytes_allocated, workspace_bytes_peak (C-kernel scratch, the core's ledger),
                rss_bytes, rss_peak_bytes, other_rss_bytes

Files are written atomically (temp file in the same folder, fsync, os.replace), so a reader never
sees half a file and an interrupted run loses at most the point in flight; a temp file a killed
writer left behind (its process is gone) is removed by the next write beside it. `ResultStore` lets a
sweep resume: it reloads finished points and skips them.

Concurrent writers: every read-modify-write of a records file (`ResultStore.add`, `merge_records`)
holds an exclusive lock on a sidecar lock file (`.<name>.lock` beside it, fcntl.flock; it is never
deleted, so two processes can never lock two different files) and re-reads the file under the lock,
so any number of processes (sweep, measure) writing into one file end with the union of their
records (for a point both wrote, the later write). Where fcntl is missing (Windows) there is no lock.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import contextlib
import hashlib
import re
import secrets
import socket
import stat
from typing import Callable, Iterable, Sequence

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; a single writer per file is then the rule
    fcntl = None

from glmbench.vocab import EVIDENCE, MAX_TOKENS  # noqa: E402  (one definition, at the bottom of the package)

# csv's default cell limit is 128 KiB, which a records file glmbench writes passes: a measured record's
# `routing_counts` (a JSON object of every MoE layer's tokens per expert: 60 layers x 384 experts for a
# Kimi-K2 .gguf) or `samples_ns`. Such a file was written, then refused by every reader ("field larger than
# field limit"; `compare` a traceback). The whole file is in memory before it is parsed, so the limit
# guards nothing here: raised once, for every csv reader of the process.
csv.field_size_limit(max(csv.field_size_limit(), 2 ** 31 - 1))

# Columns that lead every CSV, in this order; the remaining keys follow alphabetically.
LEAD_COLUMNS = (
    "evidence", "test", "model", "model_type", "device", "n_cards", "split", "link_gbps",
    "weights", "type_k", "type_v", "mla_strategy", "runtime", "n_prompt", "n_gen", "n_depth",
    "n_streams", "avg_ts", "stddev_ts",
)


# the fields every reader keys, sorts, sums or plots by, and what each must hold where a record has it (None
# is always allowed: not stated). A hand-edited file's `"n_depth": "4K"`, `"n_cards": Infinity` or `"test":
# []` was read, then failed deep in compare / plot / sweep as "unhashable type: 'list'" or an OverflowError
# traceback, naming no file.
_TEXT_FIELDS = ("test", "model", "device", "split", "weights", "type_k", "type_v", "mla_strategy", "runtime")
_COUNT_FIELDS = {"n_prompt": 0, "n_gen": 0, "n_depth": 0, "n_cards": 1, "n_streams": 1, "concurrency": 1}
_TOKEN_COUNTS = ("n_prompt", "n_gen", "n_depth")
_AMOUNT_FIELDS = ("avg_ts", "stddev_ts", "aggregate_tok_s", "per_stream_tok_s", "ttft_s", "mem_bytes", "mem_total_bytes",
                  "capacity_bytes", "kv_bytes", "weight_bytes", "weights_bytes", "workspace_bytes")


def too_many_tokens(field: str, v) -> str | None:
    """"`field` = N is more tokens than ..." where a token count `v` passes vocab.MAX_TOKENS (a misread or a
    typo: a JSON `"n_depth": 1e308` read as a 309-digit depth that a prediction would then price), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > MAX_TOKENS:
        return None
    shown = f"{int(v):,}" if v < 10 ** 15 else f"{float(v):.3g}"
    return f"`{field}` = {shown} is more tokens than any model has positions or memory for (at most {MAX_TOKENS:,})"


def validate(record: dict) -> dict:
    """Raise ValueError unless the record says what kind of number it is, and its key fields hold what
    they name: text, a whole count (token counts at most vocab.MAX_TOKENS), a finite amount >= 0."""
    if not isinstance(record, dict):
        raise TypeError(f"a record must be a dict, got {type(record).__name__}")
    ev = record.get("evidence")
    if ev not in EVIDENCE:
        raise ValueError(f"record field `evidence` must be one of {EVIDENCE}, got {ev!r}")
    for k in _TEXT_FIELDS:
        v = record.get(k)
        if v is not None and not isinstance(v, str):
            raise ValueError(f"record field `{k}` must be text, got {v!r}")
    for k, lo in _COUNT_FIELDS.items():
        v = record.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) or v < lo:
            raise ValueError(f"record field `{k}` must be a whole number >= {lo}, got {v!r}")
        too_many = too_many_tokens(k, v) if k in _TOKEN_COUNTS else None
        if too_many:
            raise ValueError(f"record field {too_many}")
    for k in _AMOUNT_FIELDS:
        v = record.get(k)
        if v is None or (isinstance(v, float) and math.isnan(v) and k == "stddev_ts"):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"record field `{k}` must be a finite number >= 0, got {v!r}")
    return record


def _create_beside(path: str) -> tuple[int, str]:
    """Create a new, empty temp file in `path`'s folder; returns (fd, temp path).

    Opened with mode 0o666 and O_EXCL, so the kernel applies the umask (and a folder's default
    ACL) exactly as for an ordinary `open(path, "w")`: 0644 under the usual umask 022. (mkstemp
    creates 0600, and os.replace keeps the temp file's mode, which left result files unreadable
    by anyone else.)"""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    tag = _tmp_tag(folder, os.path.basename(path))
    for _ in range(100):
        tmp = os.path.join(folder, f".tmp-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}-{tag}")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temp file beside {path}")


# .tmp-<host>-<pid>-<random>-<name>: the host (a hash of its name) because a pid means nothing on
# another machine writing into the same network folder
_TMP_RE = re.compile(r"^\.tmp-([0-9a-f]{8})-(\d+)-[0-9a-f]{8}-(.+)$")
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
# a temp file's name before its file's name: ".tmp-" host "-" pid (up to 10 digits) "-" random "-"
_TMP_PREFIX_MAX = len(".tmp-") + 8 + 1 + 10 + 1 + 8 + 1


def _name_max(folder: str) -> int:
    """The longest file name (bytes) the folder's file system takes (255 where it does not say)."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX")) or 255
    except (OSError, ValueError, AttributeError):
        return 255


def _fit_name(name: str, room: int) -> str:
    """`name`, or where it is longer than `room` bytes, its head and a hash of the whole: a name as long
    as the file system allows (255 bytes) left no room for the temp file's or the lock file's prefix, so
    every write of it failed ("File name too long" naming a temp file) after the work was done. The same
    name always gives the same result, so every writer of a file finds the one lock and the temps."""
    b = os.fsencode(name)
    if len(b) <= room:
        return name
    digest = hashlib.sha256(b).hexdigest()[:16]
    return b[:max(0, room - len(digest) - 1)].decode("utf-8", "ignore") + "~" + digest


def _tmp_tag(folder: str, base: str) -> str:
    """What a temp file of `base` in `folder` ends with: `base`, shortened where the name would be too long."""
    return _fit_name(base, _name_max(folder) - _TMP_PREFIX_MAX)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True   # exists (another user's), or cannot tell: keep its file
    return True


def clean_stale_temps(path: str | os.PathLike) -> list[str]:
    """Remove the temp files (`.tmp-<host>-<pid>-<hex>-<name>`) that writers of `path` left behind
    when they were killed mid-write: those of this machine whose process no longer runs. A running
    writer's temp file, and another machine's, are never touched. Returns the removed paths."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tag = _tmp_tag(folder, os.path.basename(path))
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for n in names:
        m = _TMP_RE.match(n)
        if m is None or m.group(3) != tag or m.group(1) != _HOST or _pid_alive(int(m.group(2))):
            continue
        try:
            os.unlink(os.path.join(folder, n))
            removed.append(os.path.join(folder, n))
        except FileNotFoundError:
            pass   # another cleaner was first
        except OSError:
            pass
    return removed


def _through_links(path: str) -> str:
    """The file a write of `path` is to change: `path`, or where its symbolic links lead (a link
    `latest.json -> runs/3.json`). os.replace over the link itself replaced the link with a plain
    file: runs/3.json kept its old records, and the next write through another name of it (its own,
    another link) went on from those, losing what was written through the link."""
    return os.path.realpath(path) if os.path.islink(path) else path


def lock_path(path: str | os.PathLike) -> str:
    """The sidecar lock file of `path`: `.<name>.lock` in the same folder (the folder of the file
    itself where `path` is a symbolic link: writers through any of its names take the one lock)."""
    path = os.path.abspath(_through_links(os.fspath(path)))
    folder = os.path.dirname(path)
    return os.path.join(folder, f".{_fit_name(os.path.basename(path), _name_max(folder) - len('..lock'))}.lock")


@contextlib.contextmanager
def locked(path: str | os.PathLike):
    """Hold an exclusive lock on `path`'s sidecar lock file (blocking) for the `with` block. Only
    writers that take it exclude each other (every write of glmbench's records files does); readers
    need none, as files are replaced atomically. A no-op where fcntl is missing."""
    if fcntl is None:
        yield
        return
    lp = lock_path(path)
    os.makedirs(os.path.dirname(lp), exist_ok=True)
    flags = os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(lp, os.O_RDWR | flags, 0o666)
    except PermissionError:
        # another user's lock file (0644 under the usual umask) in a folder both write into: flock takes a
        # descriptor open for reading (every writer but the first failed "Permission denied: .<name>.lock")
        fd = os.open(lp, os.O_RDONLY | flags)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # closing the last descriptor releases the lock


def atomic_write(path: str | os.PathLike, write: Callable, *, binary: bool = False) -> str:
    """Write a file atomically: `write(f)` fills a temp file in the same folder, which is fsynced
    and renamed over `path`, so a reader never sees half a file. A new file gets the mode an
    ordinary new file gets (0o666 less the umask); a file that exists keeps its mode, as
    `open(path, "w")` keeps it (a results file made private with chmod 600 became 0644). Temp files of `path` that killed writers left
    are removed first (clean_stale_temps). Where `path` is a symbolic link, the file it leads to is
    written (the link stays). Returns the path."""
    path = os.fspath(path)
    target = _through_links(path)
    clean_stale_temps(target)
    fd, tmp = _create_beside(target)
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            pass
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None and e.strerror:
            # a write or fsync that failed (a full disk, a quota, EIO) names no file: "No space left on
            # device" alone did not say which output could not be written
            raise OSError(e.errno, e.strerror, path) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda f: f.write(text))


def columns(records: Sequence[dict]) -> list[str]:
    keys = set()
    for r in records:
        keys.update(r)
    lead = [c for c in LEAD_COLUMNS if c in keys]
    return lead + sorted(keys - set(lead))


def to_csv(records: Sequence[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(records), extrasaction="raise", lineterminator="\n")
    w.writeheader()
    for r in records:  # list fields (samples_ns, ...) as JSON arrays, dicts (inferred) as JSON objects
        w.writerow({k: ("" if v is None else json.dumps(v) if isinstance(v, (list, tuple, dict)) else v)
                    for k, v in r.items()})
    return buf.getvalue()


def to_json(records: Sequence[dict]) -> str:
    return json.dumps(list(records), indent=1, sort_keys=False, default=_json_default) + "\n"


def _json_default(o):
    try:  # numpy scalars
        return o.item()
    except AttributeError:
        raise TypeError(f"cannot write {type(o).__name__} to JSON") from None


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> None:
    """Write records to `path` (.csv or .json, by extension), atomically."""
    recs = [validate(r) for r in records]
    p = os.fspath(path)
    if p.endswith(".csv"):
        atomic_write_text(p, to_csv(recs))
    elif p.endswith(".json"):
        atomic_write_text(p, to_json(recs))
    else:
        raise ValueError(f"`path` must end in .csv or .json, got {p!r}")


def merge_records(path: str | os.PathLike, records: Iterable[dict], key: Callable[[dict], tuple]) -> int:
    """Store `records` in the .json records file `path` without losing anyone else's: under the
    file's lock, re-read it, replace the records of the same `key` (a new record wins) and keep
    every other one, then write it atomically. Returns how many records the file holds."""
    p = os.fspath(path)
    if not p.endswith(".json"):
        raise ValueError(f"`path` must end in .json, got {p!r}")
    recs = [validate(r) for r in records]
    with locked(p):
        new: dict = {}
        for r in recs:
            new.pop(key(r), None)
            new[key(r)] = r
        # every record of the file that no new one replaces stays, even where two of them share a `key`:
        # the key is this writer's idea of a point, and another writer's records (measurements at two
        # thread counts, predictions at two links) may not differ in the fields it reads
        held = _distinct(read_existing(p))
        out = [r for r in held if key(r) not in new] + list(new.values())
        write_records(p, out)
        return len(out)


def _distinct(recs: list[dict]) -> list[dict]:
    """The records less exact copies of an earlier one (a file appended to twice)."""
    seen, out = set(), []
    for r in recs:
        t = json.dumps(r, sort_keys=True, default=_json_default)
        if t not in seen:
            seen.add(t)
            out.append(r)
    return out


def count_records(path: str | os.PathLike) -> int:
    """How many records the file holds now (read under its lock, so not mid-update)."""
    with locked(path):
        return len(read_existing(path))


def _parse_cell(s: str):
    if s == "":
        return None
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    if s in ("True", "False"):
        return s == "True"
    if (s.startswith("[") and s.endswith("]")) or (s.startswith("{") and s.endswith("}")):  # written by to_csv
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            pass
    return s


def _starts_gzip(p) -> bool:
    """Whether the regular file p starts with the gzip magic bytes 1f 8b (a pipe is not read again)."""
    try:
        if not os.path.isfile(p):
            return False
        with open(p, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def read_records(path: str | os.PathLike) -> list[dict]:
    """Read a .csv or .json records file written by write_records (or by hand; a byte-order mark, as
    spreadsheets write before the header, is not part of the first field)."""
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        if _starts_gzip(p):
            raise ValueError(f"{p}: gzip-compressed (it starts with the gzip bytes 1f 8b); decompress it first "
                             f"(gunzip -c {os.path.basename(p)} > plain{os.path.splitext(p)[1] or '.json'})") from None
        raise ValueError(f"{p}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    if not p.endswith((".json", ".csv")):
        raise ValueError(f"`path` must end in .csv or .json, got {p!r}")
    return parse_records(text, p)


def parse_records(text: str, p: str) -> list[dict]:
    """read_records on text already read from the file `p` (its suffix, .json or .csv, tells which; a
    name with neither, /dev/stdin or a pipe, is told by the text: JSON starts with '['), so a reader that
    has the text does not open the file again (a pipe is read once; a file rewritten meanwhile would
    give two different texts)."""
    text = text.lstrip("\ufeff")
    if "\r" in text and "\n" not in text:   # lines ended in CR alone (Excel for Mac's "CSV (Macintosh)")
        text = text.replace("\r", "\n")
    if p.endswith(".json") or not p.endswith(".csv") and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}: not valid JSON (line {e.lineno}: {e.msg})") from None
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON list of records, got {type(data).__name__}")
        recs = data
    else:
        recs = []
        rows = csv.DictReader(io.StringIO(text))
        try:
            for row in rows:
                if None in row or None in row.values():  # more cells than the header, or fewer
                    n = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or ())
                    raise ValueError(f"{p}: line {rows.line_num}: {n} cells where the header has {len(rows.fieldnames)}")
                recs.append({k: _parse_cell(v) for k, v in row.items()})
        except csv.Error as e:  # not a ValueError: name the file and line like the others
            raise ValueError(f"{p}: line {rows.line_num}: not valid CSV ({e})") from None
    for i, r in enumerate(recs):
        try:
            validate(r)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{p}: record {i + 1}: {e}") from None
    return recs


def read_existing(path: str | os.PathLike) -> list[dict]:
    """The records a file to be resumed or added to holds: none where it does not exist or holds no
    text (0 bytes, or blank lines: `touch out.json`, a shell's `> out.json`); else read_records. (The
    --out checks take a blank file as a new one; the sweep then failed reading it: "not valid JSON".)"""
    p = os.fspath(path)
    if not os.path.exists(p) or not os.path.getsize(p):
        return []
    with open(p, "rb") as f:
        head = f.read(4096)
    if not head.lstrip(b"\xef\xbb\xbf").strip() and len(head) < 4096:
        return []
    return read_records(p)


class ResultStore:
    """A JSON records file that a sweep appends to point by point and can resume from.

    `key(record)` names a point (e.g. (test, model, n_depth)); `done(key, fingerprint)` says
    whether it is already stored (from the same inputs, when a fingerprint is given: a record
    whose `fingerprint` differs is not done); `add(record)` stores one point, replacing any record
    of the same key, and rewrites the file atomically, so killing the process loses at most the
    point being computed. The file holds one record per key of those this store added; the file's other
    records all stay (less exact copies), even two that share a key: another writer's (a sweep's
    predictions at two links, to a measurement's key) need not differ in the fields this key reads.
    """

    def __init__(self, path: str | os.PathLike, key: Callable[[dict], tuple]):
        self.path = os.fspath(path)
        if not self.path.endswith(".json"):
            raise ValueError(f"ResultStore `path` must end in .json, got {self.path!r}")
        self.key = key
        self._held: list = []        # the file's records as last read, every one (merge_records)
        self._by_key: dict = {}      # the last record of each key in the file
        self._added: dict = {}       # the records this store added, by key
        with locked(self.path):
            clean_stale_temps(self.path)
            self._reload()

    def _reload(self) -> None:
        """Take in the file's records as it is now (another writer may have added some); the
        records this store added stay (a record in the file of the same key replaces ours only
        when it was written later, i.e. it is what the file holds). Records of the file that share
        a key are all kept (another writer's points need not differ in the fields this key reads)."""
        p = self.path
        self._held = _distinct(read_existing(p))
        self._by_key = {}
        for r in self._held:
            self._by_key.pop(self.key(r), None)  # a later record of a key wins, in file order
            self._by_key[self.key(r)] = r
        for k in [k for k, r in self._added.items() if k in self._by_key and self._by_key[k] != r]:
            del self._added[k]                   # another writer stored this point after us: theirs is the file's
        self._by_key.update(self._added)

    @property
    def records(self) -> list[dict]:
        """The file's records with this store's: a point it stored again (a retimed unstable point, a
        replaced one) where the file had it, new points after the file's."""
        out, placed = [], set()
        for r in self._held:
            k = self.key(r)
            if k not in self._added:
                out.append(r)
            elif k not in placed:
                out.append(self._added[k])
                placed.add(k)
        return out + [r for k, r in self._added.items() if k not in placed]

    def get(self, key: tuple) -> dict | None:
        return self._by_key.get(key)

    def done(self, key: tuple, fingerprint: str | None = None) -> bool:
        r = self._by_key.get(key)
        return r is not None and (fingerprint is None or r.get("fingerprint") == fingerprint)

    def add(self, record: dict) -> None:
        """Store one record: under the file's lock, re-read the file (other writers' records are
        kept), replace this record's key and write the file atomically."""
        validate(record)
        k = self.key(record)
        with locked(self.path):
            self._reload()
            self._added.pop(k, None)
            self._added[k] = record
            self._by_key[k] = record
            write_records(self.path, self.records)


def resume_summary(before: Sequence[dict], after: Sequence[dict], key: Callable[[dict], tuple]) -> dict:
    """How a resumed run used its file: of the records `after` it returned, how many it `reused`
    (the stored record, unchanged), `retimed` (the stored record was marked unstable, so the point
    was timed again), `replaced` (a record of the same point from other inputs was there) and
    `computed` (new points), and `edited`: the stored record had this run's inputs (fingerprint) but
    not what they give (a field changed by hand), so the point was computed again."""
    old = {}
    for r in before:
        old[key(r)] = r
    out = {"reused": 0, "computed": 0, "replaced": 0, "retimed": 0, "edited": 0}
    for r in after:
        o = old.get(key(r))
        if o is None:
            out["computed"] += 1
        elif o == r:
            out["reused"] += 1
        elif o.get("fingerprint") is not None and o.get("fingerprint") == r.get("fingerprint"):
            out["retimed" if o.get("stable") is False else "edited"] += 1
        else:
            out["replaced"] += 1
    return out


def routing_histogram(records) -> list | None:
    """Tokens per expert summed over every MoE layer and every record that carries
    `routing_counts` (`glmbench measure FILE --routing-stats`); None when none does. The cost
    model's Setup(expert_skew=) takes it as the routing distribution (`--routing FILE`)."""
    total = None
    for r in records:
        for counts in (r.get("routing_counts") or {}).values():
            c = [int(x) for x in counts]
            if total is not None and len(c) != len(total):
                raise ValueError(f"`routing_counts` of different expert counts ({len(total)} and {len(c)})")
            total = c if total is None else [a + b for a, b in zip(total, c)]
    return total
