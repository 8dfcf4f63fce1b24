"""Fuzz every binding of the C core (glmbench.core._core) and the config / hardware-profile /
runtime-profile / records readers (issue 16). How to run it, and what a run found: README.md and
results.md beside this file.

    python bench/fuzz/fuzz_glmbench.py --n 10000                 # every target, seeded random inputs
    python bench/fuzz/fuzz_glmbench.py --target linear --n 500   # one target
    bench/fuzz/run_asan.sh 10000                                 # the same with the core built with ASan

Each input is a call built from a valid one (random small shapes, every storage format), with
probability 1/2 one or two arguments mutated: wrong dtype, rank or length, a strided or Fortran
view, NaN/inf, huge, negative or zero sizes, a wrong Python type, a missing or extra argument. An
input passes when the call returns, or raises one clear exception (ValueError, TypeError, KeyError,
OverflowError from argument parsing, MemoryError, RuntimeError from the cache's lock; for the
readers what the CLI reports in one line: ValueError, TypeError, KeyError, OSError). A finding is
anything else: another exception, a crash (the process dies: run_asan.sh shows ASan's report), a
hang (faulthandler aborts after --timeout s), an input array changed by the call, a kernel's scratch
not given back (glmbench.workspace_bytes() back to 0 after every call), a non-finite output from a
valid call on finite small inputs, or a reader that changed its file.

Engines: "random" (default; numpy's seeded generator, so a finding is replayed by its target,
seed and index) and "atheris" (coverage-guided on the Python side when `pip install atheris`
works; the C core is not instrumented for coverage without clang, so it adds little here).
"""
from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:  # after PYTHONPATH: run_asan.sh points it at the ASan build's package
    sys.path.append(ROOT)

BINDING_OK = (ValueError, TypeError, KeyError, OverflowError, MemoryError, RuntimeError)
READER_OK = (ValueError, TypeError, KeyError, OSError)
FMTS = ("f32", "f16", "bf16", "q8_0", "q4_0")
WDT = (np.float32, np.float16, np.uint16)
BAD = [None, "x", "", 1.5, -1, 0, 2**31, 2**63 - 1, 2**63, -2**63, 2**64, float("nan"), float("inf"), [], {},
       (), object(), True, b"\x00", np.float64(2.0), np.zeros(3, np.float32), np.zeros((2, 2), np.int8)]


class Finding(Exception):
    """An input broke a rule other than by raising (changed input, leaked scratch, NaN output)."""


class Hang(Exception):
    """An input ran past --timeout seconds (raised from SIGALRM inside Python code; a C loop that
    never returns to the interpreter is caught by faulthandler at max(3x the timeout, 30 s),
    ending the run)."""


_ARMED = [False]  # the alarm raises only while the input's call runs (see fuzz())


def _alarm(signum, frame):
    if _ARMED[0]:
        raise Hang("ran past the time limit")


# ---- random values -----------------------------------------------------------------------------
def dim(R, lo=1, hi=6):
    return int(R.integers(lo, hi + 1)) if R.random() < 0.9 else int(R.integers(lo, 70))


def arr(R, shape, dtype=np.float32, scale=1.0):
    if dtype in (np.float32, np.float64, np.float16):
        a = (R.standard_normal(shape) * scale).astype(dtype)
    elif dtype == np.uint16:  # bf16 bits of small finite values
        f = (R.standard_normal(shape) * scale).astype(np.float32)
        a = (f.view(np.uint32) >> 16).astype(np.uint16)
    else:
        a = R.integers(0, 4, shape).astype(dtype)
    return a


def mutate_array(R, a):
    with np.errstate(all="ignore"):  # casts of inf/NaN/huge values are the point here
        return _mutate_array(R, a)


def _mutate_array(R, a):
    k = int(R.integers(0, 12))
    if k == 0 and a.ndim:  # one axis one longer or shorter, or empty
        s = list(a.shape)
        i = int(R.integers(0, a.ndim))
        s[i] = max(0, s[i] + int(R.choice([-1, 1, 5]))) if R.random() < 0.8 else 0
        return np.resize(a, s).astype(a.dtype)
    if k == 1:  # another dtype
        return a.astype(R.choice([np.float64, np.float16, np.int32, np.int64, np.uint8, np.float32, np.uint16]))
    if k == 2:  # another rank
        return a.reshape(a.shape + (1,)) if R.random() < 0.5 or a.ndim == 0 else a.reshape(-1)
    if k == 3 and a.ndim:  # a strided view of the same shape
        big = np.repeat(a, 2, axis=a.ndim - 1)
        return big[..., ::2]
    if k == 4 and a.ndim >= 2:
        return np.asfortranarray(a)
    if k == 5 and a.size and a.dtype.kind == "f":
        b = a.copy()
        b.flat[int(R.integers(0, a.size))] = R.choice([np.nan, np.inf, -np.inf])
        return b
    if k == 6 and a.size and a.dtype.kind == "f":
        return (a * np.float32(R.choice([1e30, 1e38, 0.0, -1e20]))).astype(a.dtype)
    if k == 7:
        b = a.copy()
        b.flags.writeable = False
        return b
    if k == 8 and a.size and a.dtype.kind in "iu":
        b = a.copy()
        info = np.iinfo(a.dtype)  # an extreme of the array's own integer type
        b.flat[int(R.integers(0, a.size))] = R.choice([info.min, info.max, min(info.max, 1000), max(info.min, -1)])
        return b
    if k == 9:
        return a.tolist()
    return BAD[int(R.integers(0, len(BAD)))]


def mutate_scalar(R, v):
    if isinstance(v, bool):
        return BAD[int(R.integers(0, len(BAD)))]
    if isinstance(v, int):
        return int(R.choice([-1, 0, 1, 2, 3, 7, 31, 33, 4096, 2**31, 2**40, 2**62, -2**62])) if R.random() < 0.8 \
            else BAD[int(R.integers(0, len(BAD)))]
    if isinstance(v, float):
        return float(R.choice([0.0, -1.0, np.nan, np.inf, -np.inf, 1e308, 5e-324, 1e6]))
    if isinstance(v, str):
        return str(R.choice(["", "flash ", "FLASH", "naive", "absorbed", "q8_0", "gqa", "mla", "\x00", "x" * 300]))
    return BAD[int(R.integers(0, len(BAD)))]


def mutate_args(R, args: list, kwargs: dict):
    """With probability 1/2, one or two arguments replaced; sometimes one dropped or one added."""
    if R.random() < 0.5:
        return args, kwargs, False
    args, kwargs = list(args), dict(kwargs)
    for _ in range(int(R.integers(1, 3))):
        slots = [("a", i) for i in range(len(args))] + [("k", k) for k in kwargs]
        if not slots:
            break
        kind, i = slots[int(R.integers(0, len(slots)))]
        v = args[i] if kind == "a" else kwargs[i]
        nv = mutate_array(R, v) if isinstance(v, np.ndarray) else mutate_scalar(R, v)
        if kind == "a":
            args[i] = nv
        else:
            kwargs[i] = nv
    r = R.random()
    if r < 0.05 and args:
        args.pop()
    elif r < 0.08:
        args.append(BAD[int(R.integers(0, len(BAD)))])
    elif r < 0.1:
        kwargs["no_such_argument"] = 1
    return args, kwargs, True


# ---- the C core's bindings -----------------------------------------------------------------------
def _core():
    from glmbench.core._loader import _core as c
    return c


def make_cache(R, kind=None, fmt=None, filled=True):
    from glmbench.core.kvcache import KVCache
    kind = kind or ("gqa" if R.random() < 0.5 else "mla")
    fmt = fmt or str(R.choice(FMTS))
    q = fmt in ("q8_0", "q4_0")
    L, cap, bs = dim(R, 1, 3), dim(R, 1, 40), int(R.choice([1, 4, 16, 64]))
    if kind == "gqa":
        hkv = dim(R, 1, 3)
        dk = 32 * dim(R, 1, 2) if q else dim(R, 1, 40)
        dv = 32 * dim(R, 1, 2) if q else dim(R, 1, 40)
        c = KVCache.gqa(L, cap, hkv, dk, dv, kv=fmt, block_size=bs)
    else:
        dk = 32 * dim(R, 1, 2) if q else dim(R, 1, 40)
        dv = 32 if q else 2 * dim(R, 1, 8)
        c = KVCache.mla(L, cap, dk, dv, kv=fmt, block_size=bs)
    if filled:
        c.fill_synthetic(int(R.integers(0, cap + 1)), seed=int(R.integers(0, 1000)))
    return c


def t_rms_norm(R):
    T, D = dim(R, 0), dim(R)
    return "rms_norm", [arr(R, (T, D)), arr(R, (D,)), float(R.choice([1e-6, 1e-5]))], {}


def t_layer_norm(R):
    # one weight row, or a row per head over [T * H, D] (Command-R+'s q / k norms); rows that do not
    # divide T, and negative eps, are among the mutations
    T, D = dim(R, 0), dim(R)
    G = 1 if R.random() < 0.5 else dim(R, 1, 4)
    rows = T * G if R.random() < 0.9 else T * G + 1
    return "layer_norm", [arr(R, (rows, D)), arr(R, (G, D)), float(R.choice([1e-6, 1e-5, -1.0]))], {}


def t_rope(R):
    T, H = dim(R, 0), dim(R)
    rot = 2 * dim(R, 1, 8)
    Dh = rot + 2 * int(R.integers(0, 4))
    off = 2 * int(R.integers(0, (Dh - rot) // 2 + 1))
    inv = None if R.random() < 0.5 else (1.0 / 10000 ** (np.arange(rot // 2) * 2.0 / rot)).astype(np.float64)
    pos = R.integers(0, 5000, T).astype(np.int64)
    return "rope", [arr(R, (T, H, Dh)), pos, 10000.0, rot, off, int(R.integers(0, 2)), inv, 1.0], {}


def t_linear(R):
    T, K, N = dim(R, 0), dim(R), dim(R)
    bias = None if R.random() < 0.5 else arr(R, (N,))
    return "linear", [arr(R, (T, K)), arr(R, (N, K), WDT[int(R.integers(0, 3))]), bias], {}


def t_hgemm(R):
    T, K, N = dim(R, 0), dim(R), dim(R)
    kern = str(R.choice(["auto", "ref", "f32fma", "bf16dot"]))
    return "hgemm", [arr(R, (T, K)), arr(R, (N, K), WDT[int(R.integers(1, 3))])], {"kernel": kern}


def t_swiglu(R):
    T, D, F = dim(R, 0), dim(R), dim(R)
    dt = WDT[int(R.integers(0, 3))]
    return "swiglu", [arr(R, (T, D)), arr(R, (F, D), dt), arr(R, (F, D), dt), arr(R, (D, F), dt)], {}


def t_moe_route(R):
    T, D = dim(R, 0), dim(R)
    ng = int(R.choice([1, 2, 4]))
    E = ng * dim(R, 1, 4)
    k = int(R.integers(1, E + 1))
    scoring = int(R.integers(0, 2))
    bias = None if R.random() < 0.5 else arr(R, (E,))
    tg = int(R.integers(1, ng + 1))
    return "moe_route", [arr(R, (T, D)), arr(R, (E, D)), k, scoring, bias, ng, tg, int(R.integers(0, 2)),
                         bool(R.integers(0, 2)), 1.0], {}


def t_moe_experts(R):
    T, D, F, E = dim(R, 0), dim(R), dim(R), dim(R, 1, 5)
    k = int(R.integers(1, E + 1))
    idx = np.array([R.permutation(E)[:k] for _ in range(T)], np.int32).reshape(T, k)
    dt = WDT[int(R.integers(0, 3))]
    shared = None
    if R.random() < 0.5:
        Fs = dim(R)
        shared = (arr(R, (Fs, D), dt), arr(R, (Fs, D), dt), arr(R, (D, Fs), dt))
    return "moe_experts", [arr(R, (T, D)), idx, np.abs(arr(R, (T, k))), arr(R, (E, F, D), dt), arr(R, (E, F, D), dt),
                           arr(R, (E, D, F), dt), shared], {}


def t_quantize(R):
    return "quantize", [arr(R, (dim(R, 0), 32 * dim(R, 1, 3))), int(R.choice([8, 9]))], {}


def t_dequantize(R):
    fmt, K = int(R.choice([8, 9])), 32 * dim(R, 1, 3)
    q = _core().quantize(arr(R, (dim(R, 0), K)), fmt)
    return "dequantize", [q, fmt, K], {}


def t_qlinear(R):
    fmt, K, N, T = int(R.choice([8, 9])), 32 * dim(R, 1, 3), dim(R), dim(R, 0)
    w = _core().quantize(arr(R, (N, K)), fmt)
    bias = None if R.random() < 0.5 else arr(R, (N,))
    return "qlinear", [arr(R, (T, K)), w, fmt, K, bias, int(R.integers(0, 3)), int(R.integers(0, 4))], {}


def _packed(R, fmt, N, K):
    return _core().qrepack(_core().quantize(arr(R, (N, K)), fmt), fmt, K)


def t_qrepack(R):
    fmt, K = int(R.choice([8, 9])), 32 * dim(R, 1, 3)
    return "qrepack", [_core().quantize(arr(R, (dim(R), K)), fmt), fmt, K], {}


def t_qunpack(R):
    fmt, K, N = int(R.choice([8, 9])), 32 * dim(R, 1, 3), dim(R)
    return "qunpack", [_packed(R, fmt, N, K), fmt, K, N], {}


def t_qgemm(R):
    fmt, K, N, T = int(R.choice([8, 9])), 32 * dim(R, 1, 3), dim(R), dim(R, 0)
    bias = None if R.random() < 0.5 else arr(R, (N,))
    return "qgemm", [arr(R, (T, K)), _packed(R, fmt, N, K), fmt, N, K, bias, int(R.integers(0, 5))], {}


def t_qmoe(R):
    fmt, E, D, F, T = int(R.choice([8, 9])), dim(R, 1, 3), 32 * dim(R, 1, 2), 32, dim(R, 1, 4)
    k = int(R.integers(1, E + 1))
    idx = np.stack([R.permutation(E)[:k] for _ in range(T)]).astype(np.int64)
    w = R.random((T, k)).astype(np.float32)
    pk = lambda n, kk: np.stack([_packed(R, fmt, n, kk) for _ in range(E)])  # noqa: E731
    return "qmoe", [arr(R, (T, D)), idx, w, pk(F, D), pk(F, D), pk(D, F), fmt, F, int(R.integers(0, 5))], {}


# ggml's K-quant / IQ / MXFP4 weights read as stored (csrc/quant_k.c, quant_iq.c, moe_k.c)
def _kfmt(R):
    from glmbench.core import quant
    name = str(R.choice(["q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs", "iq4_nl", "mxfp4"]))
    fid, qk, _ = quant.FORMATS[name]
    return name, fid, qk


def _kweight(R, name, N, K):
    """Valid rows of format `name` with finite scales: mxfp4 through its quantizer; the others are
    random bytes with bit 6 of every odd byte cleared, so no little-endian f16 scale (each at an
    even offset of its block) has an all-ones exponent."""
    from glmbench.core import quant
    if name == "mxfp4":
        # the row width named (reshape(N, -1) cannot infer it for N = 0 rows)
        return np.ascontiguousarray(quant.quantize(arr(R, (N, K)), "mxfp4").data).view(np.uint8).reshape(N, quant.row_bytes(name, K))
    w = R.integers(0, 256, (N, quant.row_bytes(name, K)), dtype=np.uint8)
    w[:, 1::2] &= 0xBF
    return w


def t_kdequantize(R):
    name, fid, qk = _kfmt(R)
    K = qk * dim(R, 1, 2)
    return "kdequantize", [_kweight(R, name, dim(R, 0), K), fid, K], {}


def t_quantize_q8_K(R):
    return "quantize_q8_K", [arr(R, (dim(R, 0), 256 * dim(R, 1, 2)))], {}


def t_klinear(R):
    name, fid, qk = _kfmt(R)
    K, N, T = qk * dim(R, 1, 2), dim(R), dim(R, 0)
    bias = None if R.random() < 0.5 else arr(R, (N,))
    return "klinear", [arr(R, (T, K)), _kweight(R, name, N, K), fid, K, bias, int(R.integers(0, 3))], {}


def t_krepack(R):
    name, fid, qk = _kfmt(R)
    K, N = qk * dim(R, 1, 2), dim(R)
    return "krepack", [_kweight(R, name, N * int(R.integers(1, 3)), K), fid, K, N], {}


def t_klinear_packed(R):
    name, fid, qk = _kfmt(R)
    K, N, T = qk * dim(R, 1, 2), dim(R), dim(R, 0)
    packed = _core().krepack(_kweight(R, name, N, K), fid, K, N).reshape(-1)
    bias = None if R.random() < 0.5 else arr(R, (N,))
    return "klinear_packed", [arr(R, (T, K)), packed, fid, N, K, bias, int(R.integers(0, 3))], {}


def t_kmoe(R):
    name, fid, qk = _kfmt(R)
    E, D, F, T = dim(R, 1, 3), qk, qk, dim(R, 1, 4)
    k = int(R.integers(1, E + 1))
    idx = np.stack([R.permutation(E)[:k] for _ in range(T)]).astype(np.int64)
    w = R.random((T, k)).astype(np.float32)
    mats = lambda n, kk: np.stack([_kweight(R, name, n, kk).reshape(-1) for _ in range(E)])  # noqa: E731
    return "kmoe", [arr(R, (T, D)), idx, w, mats(F, D), mats(F, D), mats(D, F), fid, fid, fid, F,
                    int(R.integers(0, 3))], {}


def t_gated_delta_rule(R):
    T, Hk, rep, dk, dv = dim(R, 0), dim(R, 1, 3), dim(R, 1, 3), dim(R), dim(R)
    Hv = Hk * rep
    g = -np.abs(arr(R, (T, Hv)))   # log decays <= 0 and beta in [0, 1): a valid call stays finite
    beta = R.random((T, Hv)).astype(np.float32)
    state = None if R.random() < 0.3 else arr(R, (Hv, dk, dv))
    return "gated_delta_rule", [arr(R, (T, Hk, dk)), arr(R, (T, Hk, dk)), arr(R, (T, Hv, dv)), g, beta, state,
                                float(dk) ** -0.5, bool(R.random() < 0.9), 1e-6], {}


def t_causal_conv1d(R):
    T, C, K = dim(R, 0), dim(R), dim(R, 1, 5)
    state = None if R.random() < 0.3 else arr(R, (K - 1, C))
    args = [arr(R, (T, C)), arr(R, (C, K)), state, bool(R.random() < 0.5)]
    if R.random() < 0.5:   # Mamba-2's conv has a bias (None: the Gated DeltaNet's, the 4-argument call)
        args.append(None if R.random() < 0.2 else arr(R, (C,)))
    return "causal_conv1d", args, {}


def t_ssm_scan(R):
    T, G, rep, P, N = dim(R, 0), dim(R, 1, 3), dim(R, 1, 3), dim(R), dim(R)
    H = G * rep
    A = -np.exp(arr(R, (H,), scale=0.5))   # decay rates < 0 and steps >= 0: a valid call stays finite
    opt = lambda shape: None if R.random() < 0.3 else arr(R, shape)  # noqa: E731
    lo = float(R.choice([0.0, 0.0, 1e-3]))
    hi = float(R.choice([np.inf, np.inf, 0.1, 10.0]))
    return "ssm_scan", [arr(R, (T, H, P)), arr(R, (T, H)), A, arr(R, (T, G, N)), arr(R, (T, G, N)), opt((H,)),
                        opt((H, P, N)), opt((H,)), bool(R.random() < 0.8), lo, hi], {}


def t_geglu_act(R):
    n = dim(R, 0, 40)
    return "geglu_act", [arr(R, (n,)), arr(R, (n,))], {}


def t_silu_act(R):
    n = dim(R, 0, 40)
    return "silu_act", [arr(R, (n,)), arr(R, (n,))], {}


def t_gqa_attention(R):
    c = make_cache(R, "gqa")
    hkv, dk, _ = c._dims
    T = int(R.integers(0, c.length(0) + 1)) if R.random() < 0.9 else c.length(0) + 1
    layer = int(R.integers(0, c.n_layers))
    hq = hkv * dim(R, 1, 3)
    if T * hq * dk > (1 << 22):  # 20 x 2379 x 1344 (256 MB of random queries) ran past the time limit under ASan
        hq = hkv
    # sinks (GPT-OSS) on half the calls: one logit per query head (the mutator breaks shape, dtype, values)
    kw = {"sinks": arr(R, (hq,), scale=3.0)} if R.random() < 0.5 else {}
    return "gqa_attention", [arr(R, (T, hq, dk)), c, layer, 0.0, int(R.integers(0, 4))], kw


def t_mla_attention(R):
    c = make_cache(R, "mla")
    _, rank, dr = c._dims
    H, Dn, Dv = dim(R), dim(R, 0), dim(R)
    T = int(R.integers(0, c.length(0) + 1))
    w = arr(R, (H * (Dn + Dv), rank), WDT[int(R.integers(0, 3))], 0.1)
    strat = str(R.choice(["naive", "absorbed", "flash"]))
    return "mla_attention", [arr(R, (T, H, Dn)), arr(R, (T, H, dr)), c, int(R.integers(0, c.n_layers)), w, Dv, 0.0,
                             strat, int(R.integers(0, 4))], {}


def _kvb_split(R, H, rank, Dn, Dv):
    """A valid KVBSplit (core.attention): k_b [H, R, Dn] and v_b [H, Dv, R], each float (f32, f16,
    bf16 bits) or q8_0 when its rows are whole blocks (the GGUF pair as stored)."""
    from glmbench.core import quant
    from glmbench.core.attention import KVBSplit

    def one(shape):
        if shape[-1] % 32 == 0 and R.random() < 0.5:
            return quant.quantize(arr(R, shape, np.float32, 0.1), "q8_0")
        return arr(R, shape, WDT[int(R.integers(0, 3))], 0.1)
    return KVBSplit(one((H, rank, Dn)), one((H, Dv, rank)))


def t_mla_attention_kb_vb(R):
    c = make_cache(R, "mla")
    _, rank, dr = c._dims
    H, Dn, Dv = dim(R), dim(R) * (32 if R.random() < 0.3 else 1), dim(R)
    # at most ~4M weights: 67 heads x 608 x 1394 (57 MB of q8_0 packed in the harness, 2 s) ran past
    # the time limit under ASan + UBSan before glmbench was called
    H = min(H, max(1, (1 << 22) // (rank * (Dn + Dv))))
    s = _kvb_split(R, H, rank, Dn, Dv)
    T = int(R.integers(0, c.length(0) + 1))
    strat = str(R.choice(["naive", "absorbed", "flash"]))
    return "mla_attention_kb_vb", [arr(R, (T, H, Dn)), arr(R, (T, H, dr)), c, int(R.integers(0, c.n_layers)),
                                   *s._args(), Dv, 0.0, strat, int(R.integers(0, 4)), s.packed_v(), s.packed_k()], {}


def t_mla_kv_b_f32(R):
    H, rank, Dn, Dv = dim(R), dim(R) * (32 if R.random() < 0.3 else 1), dim(R) * (32 if R.random() < 0.3 else 1), dim(R)
    s = _kvb_split(R, H, rank, Dn, Dv)
    return "mla_kv_b_f32", [*s._args(), Dn, rank], {}


_SPECS: list = []


def _layer_specs():
    """A few real layer specs (tiny MLA and GQA models, dense and MoE) to mutate: float matrices, and
    block formats in their packed layouts with GGUF's k_b / v_b (decode-only plans)."""
    if not _SPECS:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from test_layer import quantized_layer, tiny, tiny_k
        from glmbench.models import model as M
        for name in ("glm-4.7-flash", "qwen3-30b-a3b", "deepseek-v2-lite", "qwen3-32b"):
            cfg = tiny(name)
            for i in range(2):
                layer = M.build_layer(cfg, i, "f32", seed=i)
                _SPECS.append((cfg, layer._c_spec()))
        for name, variant in (("glm-4.7-flash", "q4_K_M"), ("qwen3-30b-a3b", "iq4_nl+mxfp4"), ("glm-4.7-flash", "q4_0")):
            cfg = tiny_k(name)
            for i in range(2):
                _SPECS.append((cfg, quantized_layer(cfg, i, variant)._c_spec()))
    return _SPECS


def _mutate_spec(R, spec):
    spec = dict(spec)
    if R.random() < 0.5:
        for _ in range(int(R.integers(1, 3))):
            key = str(R.choice(sorted(spec)))
            r = R.random()
            if r < 0.15:
                del spec[key]
            else:
                v = spec[key]
                if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], np.ndarray) and R.random() < 0.8:  # (packed bytes, format id)
                    v = (mutate_array(R, v[0]), v[1]) if R.random() < 0.5 else (v[0], mutate_scalar(R, v[1]))
                    spec[key] = v
                else:
                    spec[key] = mutate_array(R, v) if isinstance(v, np.ndarray) else mutate_scalar(R, v)
    return spec


def t_layer_plan(R):
    specs = _layer_specs()
    _, spec = specs[int(R.integers(0, len(specs)))]
    return "layer_plan", [_mutate_spec(R, spec)], {}, True


def t_layer_forward(R):
    from glmbench.core.kvcache import KVCache
    specs = _layer_specs()
    cfg, spec = specs[int(R.integers(0, len(specs)))]
    plan = _core().layer_plan(spec)
    cap = dim(R, 1, 24)
    if cfg.attention == "mla":
        c = KVCache.mla(2, cap, cfg.kv_lora_rank, cfg.qk_rope_head_dim, kv=str(R.choice(FMTS[:3])), block_size=4)
    else:
        c = KVCache.gqa(2, cap, cfg.n_kv_heads, cfg.head_dim, cfg.v_head_dim or cfg.head_dim,
                        kv=str(R.choice(FMTS[:3])), block_size=4)
    c.fill_synthetic(int(R.integers(0, cap + 1)))
    T = 1 if R.random() < 0.5 else dim(R, 1, 4)  # a plan with block formats takes T = 1 only
    pos = (c.length(0) + np.arange(T)).astype(np.int64)
    return "layer_forward", [plan, arr(R, (T, cfg.hidden_size)), c, int(R.integers(0, 2)), pos,
                             str(R.choice(["naive", "absorbed", "flash"])), int(R.integers(-2, T + 2))], {}


def t_kvcache(R):
    """The cache type: construction from random sizes, then a random method on it."""
    from glmbench.core._loader import _core as c
    if R.random() < 0.3:  # the raw constructor with mutated sizes
        args = ["gqa" if R.random() < 0.5 else "mla", dim(R, 1, 3), dim(R, 1, 40), dim(R, 1, 3), 32, 32,
                str(R.choice(FMTS)), int(R.choice([1, 4, 64]))]
        args, kw, _ = mutate_args(R, args, {})
        return c.KVCacheBase, args, kw
    cache = make_cache(R, filled=R.random() < 0.7)
    n_heads, dk, dv = cache._dims
    T = dim(R, 0, 4)
    op = str(R.choice(["append", "read", "length", "reset", "fill_synthetic", "sizes"]))
    if op == "append":
        shp = ((T, n_heads, dk), (T, n_heads, dv)) if cache.kind == "gqa" else ((T, dk), (T, dv))
        args = [int(R.integers(0, cache.n_layers)), arr(R, shp[0]), arr(R, shp[1])]
    elif op in ("read", "length"):
        args = [int(R.integers(0, cache.n_layers))]
    elif op == "fill_synthetic":
        args = [int(R.integers(0, cache.capacity_tokens + 1)), int(R.integers(0, 99))]
    else:
        args = []
    args, kw, _ = mutate_args(R, args, {})
    base = c.KVCacheBase
    if op == "sizes":
        return (lambda: [cache.bytes_per_token, cache.bytes_used, cache.bytes_allocated, cache.capacity_tokens,
                         cache.kv, cache.kind, cache.n_layers, cache.block_size, cache._dims,
                         cache.bytes_in_blocks]), [], {}
    return getattr(base, op), [cache] + args, kw


def t_bench(R):
    k = int(R.integers(0, 4))
    if k == 0:
        return "bench_bandwidth", [int(R.choice([1, 7, 1000, 4096])), int(R.integers(1, 3))], {}
    if k == 1:
        if R.random() < 0.3:
            return "bench_vnni", [int(R.choice([1, 10, 1000])), int(R.integers(1, 3))], {}
        if R.random() < 0.3:
            kw = {"scales": int(R.choice([0, 1, 2, 4, 8, 9, -1]))} if R.random() < 0.5 else {}
            return "bench_int8", [int(R.choice([1, 10, 1000])), int(R.integers(1, 3))], kw
        if R.random() < 0.3:
            return "bench_bf16dot", [int(R.choice([1, 10, 1000])), int(R.integers(1, 3))], {}
        return "bench_fma", [int(R.choice([1, 10, 1000])), int(R.integers(1, 3))], {}
    n = dim(R, 1, 4096)
    if k == 3:
        return "bench_read", [np.ones(n, np.float32), int(R.integers(0, 3))], {}
    return "bench_probe", [np.zeros(n, np.float32), np.ones(n, np.float32), np.ones(n, np.float32), 1], {}


def t_controls(R):
    """The global switches and readings (each restored after the call)."""
    name = str(R.choice(["_attn_set_bf16", "_linear_set_gemv_max_t", "_linear_set_pairs", "_linear_set_portable",
                         "set_num_threads", "get_num_threads", "workspace_bytes", "workspace_blocks",
                         "reset_workspace_peak", "qversions", "qgemm_versions", "kversions", "_attn_bf16",
                         "_linear_has_avx512", "_linear_simd", "_linear_set_hgemm", "_linear_hgemm", "_hgemm_kernels",
                         "_linear_gemv_max_t", "keep_heap", "_mla_set_f16_tile", "_mla_f16_tile",
                         "_gqa_set_f16_tile", "_gqa_f16_tile",
                         "_mla_set_own_gemm", "_mla_own_gemm"]))
    args = {"_attn_set_bf16": [True], "_linear_set_gemv_max_t": [int(R.integers(0, 64))],
            "_linear_set_pairs": [True], "_linear_set_portable": [False],
            "set_num_threads": [int(R.integers(1, 5))], "_linear_set_hgemm": ["auto"], "_mla_set_f16_tile": [True],
            "_mla_set_own_gemm": [True], "_gqa_set_f16_tile": [True],
            "_linear_hgemm": [str(R.choice(["bf16", "f16"]))], "_hgemm_kernels": [str(R.choice(["bf16", "f16"]))]}.get(name, [])
    return name, args, {}


TARGETS = {f.__name__[2:]: f for f in (t_rms_norm, t_layer_norm, t_rope, t_linear, t_hgemm, t_swiglu, t_moe_route, t_moe_experts, t_quantize,
                                        t_dequantize, t_qlinear, t_qrepack, t_qunpack, t_qgemm, t_qmoe,
                                        t_kdequantize, t_quantize_q8_K, t_klinear, t_krepack, t_klinear_packed, t_kmoe, t_geglu_act, t_silu_act,
                                        t_gated_delta_rule, t_causal_conv1d, t_ssm_scan,
                                        t_gqa_attention, t_mla_attention, t_mla_attention_kb_vb, t_mla_kv_b_f32, t_layer_plan,
                                        t_layer_forward, t_kvcache, t_bench, t_controls)}

# Values the controls would keep if a mutated call changed them: put back after every input.
_CONTROL_RESET = (("_attn_set_bf16", True), ("_linear_set_gemv_max_t", 0), ("_linear_set_pairs", True),
                  ("_linear_set_portable", False), ("_linear_set_hgemm", "auto"), ("_mla_set_f16_tile", True),
                  ("_mla_set_own_gemm", True), ("_gqa_set_f16_tile", True))


def _digest(v):
    if isinstance(v, np.ndarray):
        return hashlib.sha1(np.ascontiguousarray(v).view(np.uint8).tobytes() if v.size else b"").hexdigest(), v.shape
    if isinstance(v, (list, tuple)):
        return tuple(_digest(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _digest(x)) for k, x in sorted(v.items(), key=lambda kv: str(kv[0])))
    return None


def _finite(out):
    if isinstance(out, np.ndarray):
        return out.dtype.kind != "f" or bool(np.isfinite(out).all())
    if isinstance(out, tuple):
        return all(_finite(x) for x in out)
    return True


def run_binding_input(R, target):
    c = _core()
    made = TARGETS[target](R)
    fn, args, kw = made[:3]
    premutated = len(made) > 3
    if isinstance(fn, str):
        fn = getattr(c, fn)
        args, kw, mutated = (args, kw, True) if premutated else mutate_args(R, args, kw)
    else:
        mutated = True  # t_kvcache mutates its own arguments
    threads = c.get_num_threads()
    if fn is c.set_num_threads and args and isinstance(args[0], int) and not 1 <= args[0] <= 64:
        args = [4]  # a count of 10**6 is accepted and then starts that many threads (issue 16 item 6)
    if fn.__name__.startswith("bench_"):  # a valid count may still run for minutes: keep valid ones small
        def small(i, a):
            if not isinstance(a, int) or isinstance(a, bool):
                return a
            reps = i == len(args) - 1
            if reps and 3 < a <= 1000:  # the C side's bound on reps is 1000
                return 3
            return 4096 if not reps and 10**5 < a <= 2**32 else a
        args = [small(i, a) for i, a in enumerate(args)]
    # bench_probe writes its first array (the triad's output) and geglu_act / silu_act work in place on their
    # first, by design
    checked = args[1:] if fn.__name__ in ("bench_probe", "geglu_act", "silu_act") else args
    before = [_digest(a) for a in checked] + [_digest(v) for v in kw.values()]
    try:
        out = fn(*args, **kw)
        ok = "ok"
    except BINDING_OK as e:
        out, ok = None, f"{type(e).__name__}: {str(e)[:70]}"
    finally:
        for name, v in _CONTROL_RESET:
            getattr(c, name)(v)
        c.set_num_threads(threads)
    after = [_digest(a) for a in checked] + [_digest(v) for v in kw.values()]
    if before != after:
        raise Finding(f"{fn.__name__}: an input array was modified")
    cur, _ = c.workspace_bytes()
    if cur or c.workspace_blocks():
        raise Finding(f"{fn.__name__}: {cur} bytes of workspace not given back ({c.workspace_blocks()} blocks)")
    if ok == "ok" and not mutated and not _finite(out):
        raise Finding(f"{fn.__name__}: non-finite output from a valid call on finite inputs")
    return ok


# ---- the readers ------------------------------------------------------------------------------
def _seed_docs():
    """(reader name, file suffix, parsed document) for every seed file."""
    from glmbench.models import configs
    docs = []
    for name in configs.builtin_names():
        with open(configs.builtin_path(name)) as f:
            docs.append(("config", ".json", json.load(f)))
    for sub, reader in (("hardware", "hardware"), ("runtime", "runtime")):
        d = os.path.join(ROOT, "glmbench", "data", sub)
        for fn in sorted(os.listdir(d)):
            with open(os.path.join(d, fn)) as f:
                docs.append((reader, ".json", json.load(f)))
    from glmbench import report
    study = report.Study(models=("glm-4.7-flash", "qwen3-32b"), depths=(1024, 4096))
    recs = json.loads(json.dumps(report.sweep(study, tests=("tg", "mem"), progress=False), default=str))
    docs.append(("records", ".json", recs))
    docs.append(("records", ".csv", recs))
    # other tools' output as people paste it (tests/data: the format samples, verbatim public pastes)
    for sub in ("formats", "pasted"):
        d = os.path.join(ROOT, "tests", "data", sub)
        for fn in sorted(os.listdir(d)) if os.path.isdir(d) else ():
            if fn.lower() != "readme.md" and os.path.isfile(os.path.join(d, fn)):
                with open(os.path.join(d, fn), encoding="utf-8", errors="replace") as f:
                    docs.append(("results", os.path.splitext(fn)[1] or ".txt", f.read()))
    return docs


# what a paste gets wrong: a table's pipes, a device line, a number, a line cut, moved or doubled
_PASTE_BITS = ("|", "||", " | ", "±", "nan", "inf", "-1", "0", "1e309", "99999999999999999999", " @ d", "pp0", "tg0",
               "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6", "build: ", "\t", "\n", "{", "}", '"', ",",
               "ggml_cuda_init: found 2 CUDA devices:", "-sm row", "-dev CUDA1", "| --- |", "N_KV", "S_PP t/s",
               "============ Serving Benchmark Result ============", "Max request concurrency:", "CUDA_VISIBLE_DEVICES=0,1",
               "-ub 0", "pp512 @ d-5", "é\x00")


def _mutate_paste(R, text: str) -> bytes:
    """A pasted result with one to four edits: a bit inserted, a span cut, a line replaced or two
    swapped, a number turned into an extreme, a span doubled; 30%: byte-level edits too."""
    for _ in range(int(R.integers(1, 5))):
        if not text:
            text = str(R.choice(_PASTE_BITS))
            continue
        i, op = int(R.integers(0, len(text))), R.random()
        lines = text.split("\n")
        a, b = int(R.integers(0, len(lines))), int(R.integers(0, len(lines)))
        if op < 0.25:
            text = text[:i] + str(R.choice(_PASTE_BITS)) + text[i:]
        elif op < 0.45:
            text = text[:i] + text[i + int(R.integers(1, 40)):]
        elif op < 0.6:
            lines[a] = str(R.choice(_PASTE_BITS)) + lines[a][int(R.integers(0, len(lines[a]) + 1)):]
            text = "\n".join(lines)
        elif op < 0.75:
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif op < 0.85:
            nums = list(re.finditer(r"\d+(?:\.\d+)?", text))
            if nums:
                m = nums[int(R.integers(0, len(nums)))]
                text = text[:m.start()] + str(R.choice(["0", "-3", "1e400", "nan", "1" * 30, "0.0"])) + text[m.end():]
        else:
            text = text[:i] + text[i:i + int(R.integers(1, 200))] * 2 + text[i + 1:]
    data = text.encode("utf-8", "surrogatepass")
    return _byte_edits(R, data) if R.random() < 0.3 else data


def _byte_edits(R, data: bytes) -> bytes:
    """One to three byte-level edits: a byte flipped, a span cut, or random bytes inserted."""
    b = bytearray(data)
    for _ in range(int(R.integers(1, 4))):
        k, i = int(R.integers(0, 3)), int(R.integers(0, max(1, len(b))))
        if k == 0 and b:
            b[i] = int(R.integers(0, 256))
        elif k == 1:
            del b[i:i + int(R.integers(1, 50))]
        else:
            b[i:i] = bytes(R.integers(0, 256, int(R.integers(1, 8))).astype(np.uint8))
    return bytes(b)


def _mutate_doc(R, doc, depth=0):
    """A structural mutation: one value somewhere replaced by another type or an extreme."""
    if isinstance(doc, dict) and doc and (depth < 3 or R.random() < 0.5):
        doc = dict(doc)
        key = list(doc)[int(R.integers(0, len(doc)))]
        r = R.random()
        if r < 0.1:
            del doc[key]
        elif r < 0.15:
            doc["x" + str(int(R.integers(0, 9)))] = 1
        else:
            doc[key] = _mutate_doc(R, doc[key], depth + 1)
        return doc
    if isinstance(doc, list) and doc and R.random() < 0.8:
        doc = list(doc)
        i = int(R.integers(0, len(doc)))
        doc[i] = _mutate_doc(R, doc[i], depth + 1)
        return doc
    return R.choice(np.array([None, True, 0, -1, 1, 2**31, 2**63, 10**30, 1e30, 1e-30, -0.5, 1e308, "", "x", "nan",
                              "1K", [], {}, [1, 2], {"a": 1}, float("nan"), float("inf"), "é\x00"], dtype=object))


def _text(R, reader, suffix, doc):
    from glmbench.results import records
    text = None
    if suffix == ".csv":
        try:
            text = records.to_csv(doc)
        except (TypeError, AttributeError, ValueError):  # a mutation that is no list of records: as text
            text = json.dumps(doc, allow_nan=True, default=str)
    else:
        text = json.dumps(doc, allow_nan=True, default=str)
    if R.random() < 0.3:  # byte-level: flip, cut, or insert
        return _byte_edits(R, text.encode())
    return text.encode()


def _read(reader, path):
    if reader == "config":
        from glmbench.models import configs
        cfg = configs.load(path)
        # what every command does next with a config
        return (cfg.total_params(), cfg.weight_bytes("bf16"), cfg.kv_bytes_per_token("f16"), configs.layer_kinds(cfg),
                configs.route_groups(cfg), cfg.tensor_shapes())
    if reader == "hardware":
        from glmbench.predict import hardware
        return hardware.load_profile(path)
    if reader == "runtime":
        from glmbench.predict import costmodel
        return costmodel.load_runtime(path)
    if reader == "results":
        from glmbench.results import importers
        return importers.read(path)
    from glmbench.results import records
    return records.read_records(path)


_DOCS: list = []


def _layers_beyond(doc, limit=10**6) -> bool:
    v = doc.get("num_hidden_layers") if isinstance(doc, dict) else None
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > limit


def run_reader_input(R, target, tmp):
    if not _DOCS:
        _DOCS.extend(_seed_docs())
    docs = [d for d in _DOCS if d[0] == target]
    reader, suffix, doc = docs[int(R.integers(0, len(docs)))]
    if reader == "results":
        data = _mutate_paste(R, doc) if R.random() < 0.9 else doc.encode()
    else:
        if R.random() < 0.9:
            for _ in range(int(R.integers(1, 3))):
                doc = _mutate_doc(R, doc)
        data = _text(R, reader, suffix, doc)
    if reader == "config" and _layers_beyond(doc):
        # known finding (bench/fuzz/results.md), bounded by issue 16 item 5 in another branch:
        # configs.load builds a tuple over every layer in C (tuple(range(L))), which no alarm
        # interrupts; skipped so the run goes on, and counted
        return "known: num_hidden_layers beyond 10**6"
    path = os.path.join(tmp, f"input{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    try:
        _read(reader, path)
        ok = "ok"
    except READER_OK as e:
        ok = f"{type(e).__name__}: {str(e)[:70]}"
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem not in str(e):  # the file (or, for a config, the model it names after the file)
            ok = "unnamed " + ok
    with open(path, "rb") as f:
        if f.read() != data:
            raise Finding(f"{reader} reader modified its input file")
    return ok


READERS = ("config", "hardware", "runtime", "records", "results")


# ---- the loop ---------------------------------------------------------------------------------
def fuzz(target: str, n: int, seed: int, timeout: float, log) -> dict:
    outcomes, findings = Counter(), []
    tmp = tempfile.mkdtemp(prefix="glmbench-fuzz-")
    t0 = time.perf_counter()
    # everything imported and built once before the clock runs (an alarm inside an import breaks it)
    if target in READERS and not _DOCS:
        _DOCS.extend(_seed_docs())
        from glmbench.models import configs  # noqa: F401
        from glmbench.predict import costmodel, hardware  # noqa: F401
        from glmbench.results import records  # noqa: F401
    if target.startswith("layer_"):
        _layer_specs()
    signal.signal(signal.SIGALRM, _alarm)
    if target in READERS:  # a config that makes a reader loop (2**31 layers) also eats memory fast: 1 s at most
        timeout = min(timeout, 1.0)
    for i in range(n):
        R = np.random.default_rng([seed, i, sum(map(ord, target))])
        faulthandler.dump_traceback_later(max(3 * timeout, 30.0), exit=True)
        _ARMED[0] = True
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            # disarmed the moment the call ends: an alarm due just then (under ASan on a busy machine)
            # raised Hang in the finally below, outside the try, and ended the whole run
            try:
                ok = run_reader_input(R, target, tmp) if target in READERS else run_binding_input(R, target)
            finally:
                _ARMED[0] = False
            outcomes[ok.split(":")[0] if ok != "ok" else "ok"] += 1
        except Exception as e:  # noqa: BLE001 - every other exception is a finding
            tb = traceback.format_exc(limit=4)
            findings.append(dict(target=target, seed=seed, index=i, error=f"{type(e).__name__}: {e}"[:300],
                                 where=tb.strip().splitlines()[-3:]))
            if log:
                log.write(json.dumps(findings[-1]) + "\n")
                log.flush()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            faulthandler.cancel_dump_traceback_later()
    return dict(target=target, inputs=n, seconds=round(time.perf_counter() - t0, 1), outcomes=dict(outcomes),
                findings=findings)


def fuzz_atheris(target: str, n: int, timeout: float) -> None:  # pragma: no cover - optional engine
    """libFuzzer (through atheris) drives the same generators: its input bytes seed them, and the
    Python side (glmbench's modules, this harness) is instrumented for coverage. A finding stops
    the run with atheris's report of the input (a file crash-<sha1> it writes)."""
    import atheris
    if target in READERS and not _DOCS:
        _DOCS.extend(_seed_docs())
    if target.startswith("layer_"):
        _layer_specs()
    _core()
    tmp = tempfile.mkdtemp(prefix="glmbench-fuzz-")
    atheris.instrument_all()

    def one(data: bytes):
        R = np.random.default_rng(list(data) or [0])
        run_reader_input(R, target, tmp) if target in READERS else run_binding_input(R, target)

    atheris.Setup([sys.argv[0], f"-runs={n}", f"-timeout={max(1, int(timeout))}"], one)
    atheris.Fuzz()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", action="append", help=f"one of {', '.join(list(TARGETS) + list(READERS))} "
                                                       "(repeatable; default: all)")
    ap.add_argument("--n", type=int, default=10_000, help="inputs per target (default: 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5.0,
                    help="seconds one input may take: past it, a finding (default: 5)")
    ap.add_argument("--max-memory-gib", type=float, default=8.0,
                    help="address-space limit of the run without ASan (default: 8; 0: none)")
    ap.add_argument("--engine", choices=("random", "atheris"), default="random")
    ap.add_argument("--out", help="write the summary (JSON) here")
    ap.add_argument("--log", help="append each finding (JSON lines) here as it happens")
    a = ap.parse_args(argv)
    targets = a.target or list(TARGETS) + list(READERS)
    bad = [t for t in targets if t not in TARGETS and t not in READERS]
    if bad:
        ap.error(f"unknown target(s) {bad}")
    if a.engine == "atheris":
        if len(targets) != 1:
            ap.error("--engine atheris runs one --target at a time")
        fuzz_atheris(targets[0], a.n, a.timeout)
        return 0
    from tqdm.auto import tqdm
    print(f"C core: {_core().__file__}", file=sys.stderr)
    if not os.environ.get("GLMBENCH_FUZZ_ASAN") and a.max_memory_gib > 0:
        # a runaway input must not take a shared machine's memory (ASan reserves terabytes of
        # address space for its shadow, so under run_asan.sh only the readers' 1 s limit holds)
        import resource
        lim = int(a.max_memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    log = open(a.log, "a") if a.log else None
    summary = []
    for t in tqdm(targets, desc="fuzz", unit="target", file=sys.stderr):
        s = fuzz(t, a.n, a.seed, a.timeout, log)
        summary.append(s)
        tqdm.write(f"{t:14s} {s['inputs']:6d} inputs {s['seconds']:7.1f} s  findings {len(s['findings']):4d}  "
              f"{dict(Counter(s['outcomes']).most_common(4))}", file=sys.stdout)
    if a.out:
        from glmbench.results.records import atomic_write_text
        atomic_write_text(a.out, json.dumps(dict(seed=a.seed, n=a.n, asan=bool(os.environ.get("GLMBENCH_FUZZ_ASAN")),
                                                 core=_core().__file__, targets=summary), indent=1, default=str))
    return 1 if any(s["findings"] for s in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
