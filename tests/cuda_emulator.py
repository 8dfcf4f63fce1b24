"""A CPU stand-in for glmbench.cuda._cuda, for testing the PYTHON side (glmbench/cuda/__init__.py,
glmbench/measure/cuda.py and bench/gpu_check.py) on machines without a GPU. It proves nothing
about the CUDA kernels: each op here is glmbench.core.reference on the same bf16 bits, so it only
checks that the wrappers pass the right addresses, sizes and order, that capture() replays what it
recorded, and that nothing copies to or from the host while a graph is being captured (a real GPU
refuses that too).

Device memory is a set of NumPy byte buffers at fake 256-byte-aligned addresses; pointer
arithmetic into them works as on a device. Under capture, every call is recorded instead of run,
and graph_launch replays the record.
"""
from __future__ import annotations

import bisect
import os
import time

import numpy as np

from glmbench.core import reference as ref


def _bf16_to_f64(u):
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _to_bf16(x):
    return ref.to_bf16(np.asarray(x, np.float32))


class Emulator:
    def __init__(self):
        self.bases, self.bufs = [], {}
        self.next = 1 << 20
        self.capturing, self.record, self.graphs = False, None, {}
        self.t = 0.0

    # ---- memory ----------------------------------------------------------------------------
    def _buf(self, ptr, nbytes):
        i = bisect.bisect_right(self.bases, ptr) - 1
        if i < 0:
            raise RuntimeError(f"emulator: address 0x{ptr:x} was never allocated")
        base = self.bases[i]
        buf = self.bufs[base]
        off = ptr - base
        if off + nbytes > buf.size:
            raise RuntimeError(f"emulator: access of {nbytes} bytes at +{off} overruns a {buf.size}-byte allocation")
        return buf[off:off + nbytes]

    def _a(self, ptr, dtype, n):
        dt = np.dtype(dtype)
        return self._buf(ptr, n * dt.itemsize).view(dt)

    def _bf(self, ptr, n):
        return _bf16_to_f64(self._a(ptr, np.uint16, n))

    def _put_bf(self, ptr, x):
        x = np.asarray(x).ravel()
        self._a(ptr, np.uint16, x.size)[:] = _to_bf16(x)

    def _no_capture(self, what):
        if self.capturing:
            raise RuntimeError(f"CUDA error 900 (cudaErrorStreamCaptureUnsupported): operation not permitted when "
                               f"stream is capturing, in {what} (emulator)")

    def device_count(self):
        return 1

    def device_info(self):
        return {"name": "CPU emulator", "sm_count": 1, "compute_capability": (0, 0), "total_memory": 1 << 34,
                "l2_bytes": 1 << 16, "smem_per_block_optin": 1 << 16}

    def mem_info(self):
        used = sum(b.size for b in self.bufs.values())
        return ((1 << 34) - used, 1 << 34)

    def have_cublas(self):
        return True

    def malloc(self, n):
        self._no_capture("cudaMalloc")
        p = self.next
        self.next += (int(n) + 511) // 256 * 256
        self.bases.append(p)
        self.bufs[p] = np.zeros(max(int(n), 1), np.uint8)
        return p

    def free(self, p):
        self._no_capture("cudaFree")
        i = self.bases.index(p)
        self.bases.pop(i)
        del self.bufs[p]

    def upload(self, dst, src):
        self._no_capture("cudaMemcpy (host to device)")
        b = np.frombuffer(memoryview(src).cast("B"), np.uint8)
        self._buf(dst, b.size)[:] = b

    def download(self, src, dst):
        self._no_capture("cudaMemcpy (device to host)")
        m = memoryview(dst).cast("B")
        np.frombuffer(m, np.uint8)[:] = self._buf(src, m.nbytes)

    def synchronize(self):
        self._no_capture("cudaStreamSynchronize")

    def event_create(self):
        return self.malloc(8)

    def event_destroy(self, e):
        self.free(e)

    def event_record(self, e):
        self._a(e, np.float64, 1)[0] = time.perf_counter() * 1e3

    def event_elapsed(self, a, b):
        return float(self._a(b, np.float64, 1)[0] - self._a(a, np.float64, 1)[0])

    def capture_begin(self):
        self._no_capture("cudaStreamBeginCapture")
        self.capturing, self.record = True, []

    def capture_end(self):
        if not self.capturing:
            raise RuntimeError("CUDA error 908 (cudaErrorStreamCaptureUnmatched): not capturing (emulator)")
        self.capturing = False
        h = self.malloc(8)
        self.graphs[h], self.record = self.record, None
        return h

    def graph_launch(self, h):
        for name, args in self.graphs[h]:
            getattr(self, "_" + name)(*args)

    def graph_destroy(self, h):
        del self.graphs[h]
        self.free(h)

    def __getattr__(self, name):
        """Device work (`_<name>` methods): recorded under capture, run otherwise."""
        impl = self.__class__.__dict__.get("_" + name)
        if impl is None:
            raise AttributeError(name)

        def call(*args):
            if self.capturing:
                self.record.append((name, args))
            else:
                impl(self, *args)
        return call

    # ---- device work ---------------------------------------------------------------------------
    def _copy(self, d, s, n):
        self._buf(d, n)[:] = self._buf(s, n).copy()

    def _copy_bench(self, d, s, n):
        self._copy(d, s, n)

    def _fill_u16(self, p, v, n):
        self._a(p, np.uint16, n)[:] = v

    def _fill_u32(self, p, v, n):
        self._a(p, np.uint32, n)[:] = v

    def _random_bf16(self, p, n, seed, scale):
        self._put_bf(p, np.random.default_rng(seed).uniform(-scale, scale, n))

    def _rms_norm(self, x, w, y, rows, dim, eps, v):
        if v not in (0, 1, 2):
            raise ValueError(f"rms_norm: `version` must be 0, 1 or 2, got {v}")
        self._put_bf(y, ref.rms_norm(self._bf(x, rows * dim).reshape(rows, dim), self._bf(w, dim), eps))

    def _rope(self, x, pos, y, T, H, Dh, theta, rd, off, layout, v):
        xs = self._bf(x, T * H * Dh).reshape(T, H, Dh)
        p = self._a(pos, np.int64, T)
        self._put_bf(y, ref.rope(xs, p, theta=theta, rot_dim=rd, rot_offset=off,
                                 layout="interleaved" if layout == 0 else "half"))

    def _linear_ex(self, x, w, b, y, T, N, K, nw, eps, res, v):
        if not (T <= 8 and K % 8 == 0 and v in (0, 2)):
            raise ValueError("linear: a fused norm or residual needs the GEMV (emulator)")
        X = self._bf(x, T * K).reshape(T, K)
        if nw:
            X = ref.rms_norm(X, self._bf(nw, K), eps)
        out = X @ self._bf(w, N * K).reshape(N, K).T
        if b:
            out = out + self._bf(b, N)
        if res:
            out = out + self._bf(res, T * N).reshape(T, N)
        self._put_bf(y, out)

    def _linear(self, x, w, b, y, T, N, K, v):
        if not 0 <= v <= 4:
            raise ValueError(f"linear: `version` must be 0..4, got {v}")
        out = self._bf(x, T * K).reshape(T, K) @ self._bf(w, N * K).reshape(N, K).T
        if b:
            out = out + self._bf(b, N)
        self._put_bf(y, out)

    def _silu_mul(self, g, u, h, T, F, ld, v):
        G = self._bf(g, (T - 1) * ld + F)
        U = self._bf(u, (T - 1) * ld + F)
        rows = np.arange(T)[:, None] * ld + np.arange(F)[None, :]
        self._put_bf(h, ref.silu(G[rows]) * U[rows])

    def _add(self, a, b, y, n):
        self._put_bf(y, self._bf(a, n) + self._bf(b, n))

    def _moe_route(self, x, wr, bias, idx, w, T, D, E, k, scoring, ng, tg, gscore, norm, scale, ws, v):
        self._a(ws, np.float32, T * E)  # the logits workspace must exist and be large enough
        if gscore not in (0, 1):  # the launcher's check (kernels/moe.cu); ref checks the pairing
            raise ValueError(f"moe_route: `group_score` must be 0 (top2_sum) or 1 (max), got {gscore}")
        X = self._bf(x, T * D).reshape(T, D)
        W = self._a(wr, np.float32, E * D).reshape(E, D)
        B = self._a(bias, np.float32, E) if bias else None
        i, ww = ref.moe_route(X, W, top_k=k, scoring="sigmoid" if scoring == 0 else "softmax", bias=B, n_group=ng,
                              topk_group=tg, group_score="top2_sum" if gscore == 0 else "max",
                              norm_topk_prob=bool(norm), routed_scaling_factor=scale)
        self._a(idx, np.int32, T * k)[:] = i.ravel()
        self._a(w, np.float32, T * k)[:] = ww.ravel()

    def moe_max_tiles(self, rows, E):
        return -(-rows // 64) + E

    def _moe_permute(self, idx, T, k, E, counts, offsets, sorted_tok, slot_of, tiles, n_tiles):
        a = self._a(idx, np.int32, T * k).copy()
        order = np.argsort(a, kind="stable")
        c = np.bincount(a, minlength=E)
        off = np.concatenate([[0], np.cumsum(c)]).astype(np.int32)
        self._a(counts, np.int64, E)[:] = c
        self._a(offsets, np.int32, E + 1)[:] = off
        if T * k:
            self._a(sorted_tok, np.int32, T * k)[:] = order // k
            s = np.empty(T * k, np.int32)
            s[order] = np.arange(T * k)
            self._a(slot_of, np.int32, T * k)[:] = s
        t = [(e, r) for e in range(E) for r in range(off[e], off[e + 1], 64)]
        if t:
            self._a(tiles, np.int32, 2 * len(t))[:] = np.array(t, np.int32).ravel()
        self._a(n_tiles, np.int32, 1)[0] = len(t)

    def _moe_gather(self, x, st, xs, rows, D):
        tok = self._a(st, np.int32, rows)
        self._put_bf(xs, self._bf(x, (int(tok.max()) + 1) * D).reshape(-1, D)[tok])

    def _moe_grouped_linear(self, xs, w, ys, offsets, tiles, n_tiles, rows, E, N, K, v):
        off = self._a(offsets, np.int32, E + 1)
        X = self._bf(xs, rows * K).reshape(rows, K)
        out = np.empty((rows, N))
        for e in range(E):
            if off[e + 1] > off[e]:
                out[off[e]:off[e + 1]] = X[off[e]:off[e + 1]] @ self._bf(w + e * N * K * 2, N * K).reshape(N, K).T
        self._put_bf(ys, out)

    def _moe_unpermute(self, ys, slot_of, w, shared, residual, y, T, k, D):
        s = self._a(slot_of, np.int32, T * k).reshape(T, k)
        Y = self._bf(ys, T * k * D).reshape(T * k, D)
        W = self._a(w, np.float32, T * k).reshape(T, k).astype(np.float64)
        out = np.einsum("tk,tkd->td", W, Y[s])
        if shared:
            out = out + self._bf(shared, T * D).reshape(T, D)
        if residual:
            out = out + self._bf(residual, T * D).reshape(T, D)
        self._put_bf(y, out)

    def _rows(self, table, page_size, n):
        t = self._a(table, np.int32, -(-n // page_size))
        tok = np.arange(n)
        return t[tok // page_size].astype(np.int64) * page_size + tok % page_size

    def _paged_append(self, pages, table, ps, rw, off, src, sw, T, start):
        rows = self._rows(table, ps, start + T)[start:]
        n_rows = int(rows.max()) + 1
        P = self._a(pages, np.uint16, n_rows * rw).reshape(n_rows, rw)
        P[rows, off:off + sw] = self._a(src, np.uint16, T * sw).reshape(T, sw)

    def _paged_gather(self, pages, table, ps, rw, off, dst, w, L):
        rows = self._rows(table, ps, L)
        n_rows = int(rows.max()) + 1
        P = self._a(pages, np.uint16, n_rows * rw).reshape(n_rows, rw)
        self._a(dst, np.uint16, L * w)[:] = P[rows, off:off + w].ravel()

    def gqa_workspace_bytes(self, T, Hq, Dv, S):
        return T * Hq * (S if S > 0 else 128) * (Dv + 2) * 4

    def gqa_plan(self, T, L, Hq, Hkv, Dh, Dv, v):
        if Hkv <= 0 or Hq % Hkv:
            raise ValueError(f"gqa_plan: `q_heads`={Hq} is not a multiple of `kv_heads`={Hkv}")
        k2 = T <= 4 and Dh == 128 and Dv == 128 and Hq // Hkv <= 16
        k3 = T <= 4 and Dh % 16 == 0 and Dv % 32 == 0 and Dh <= 256 and Dv <= 256 and Hq // Hkv <= 16
        k4 = T > 4 and Dh % 16 == 0 and Dv % 16 == 0 and Dh <= 128 and Dv <= 128
        k5 = k3 and Dh <= 128 and Dv <= 128
        ver = v or (5 if k5 else 3 if k3 else 2 if k2 else 4 if k4 else 1)
        if ver == 4:
            return ver, 1
        units = Hkv * T if ver >= 2 else Hq * -(-T // 16)
        return ver, max(1, min((396 if ver == 5 else 264) // max(units, 1), -(-L // 64), 128))

    def _gqa_attention(self, q, kp, vp, table, ps, out, T, L, Hq, Hkv, Dh, Dv, scale, S, ws, wsb, v):
        if os.environ.get("GLMBENCH_EMU_STICKY") == f"gqa_attention:{v}":  # fault injection (gpu_check's restart)
            raise RuntimeError("CUDA error 700 (cudaErrorIllegalAddress): an illegal memory access was encountered, "
                               "in launch of gqa_kernel (emulator)")
        if S > 1 and self.gqa_workspace_bytes(T, Hq, Dv, S) > wsb:
            raise ValueError("gqa_attention: workspace too small (emulator)")
        rows = self._rows(table, ps, L)
        n_rows = int(rows.max()) + 1
        K = self._bf(kp, n_rows * Hkv * Dh).reshape(n_rows, Hkv, Dh)[rows]
        V = self._bf(vp, n_rows * Hkv * Dv).reshape(n_rows, Hkv, Dv)[rows]
        Q = self._bf(q, T * Hq * Dh).reshape(T, Hq, Dh)
        self._put_bf(out, ref.gqa_attention(Q, K, V, scale))

    def mla_workspace_bytes(self, T, H, R, S):
        return T * H * (S if S > 0 else 132) * (R + 2) * 4

    def mla_plan(self, T, L, H):
        return max(1, min(132 // (max(T, 1) * -(-H // 32)), -(-L // 128), 132))

    def _mla_absorbed_attention(self, ql, qr, pages, table, ps, ol, T, L, H, R, Dr, scale, S, ws, wsb, v):
        if S > 1 and self.mla_workspace_bytes(T, H, R, S) > wsb:
            raise ValueError("mla_attention: workspace too small (emulator)")
        rows = self._rows(table, ps, L)
        n_rows = int(rows.max()) + 1
        P = self._bf(pages, n_rows * (R + Dr)).reshape(n_rows, R + Dr)[rows]
        q = np.concatenate([self._bf(ql, T * H * R).reshape(T, H, R), self._bf(qr, T * H * Dr).reshape(T, H, Dr)], -1)
        k = np.broadcast_to(P[:, None, :], (L, H, R + Dr))
        v_ = np.broadcast_to(P[:, None, :R], (L, H, R))
        self._put_bf(ol, ref.attention(q, k, v_, scale))

    def _attention_combine(self, ws, out, rows, S, Dv, v):
        if v not in (0, 1, 2):
            raise ValueError(f"attention_combine: `version` must be 0..2, got {v}")
        m = self._a(ws, np.float32, rows * S).reshape(rows, S).astype(np.float64)
        lse = self._a(ws + 4 * rows * S, np.float32, rows * S).reshape(rows, S).astype(np.float64)
        acc = self._a(ws + 8 * rows * S, np.float32, rows * S * Dv).reshape(rows, S, Dv).astype(np.float64)
        e = np.where(np.isneginf(m), 0.0, np.exp(m - m.max(axis=1, keepdims=True)))
        num = np.einsum("rs,rsd->rd", e, np.where(e[..., None] == 0, 0.0, acc))
        self._put_bf(out, num / (e * lse).sum(axis=1, keepdims=True))

    def _mla_absorb_q(self, qn, kvb, ql, T, H, Dn, Dv, R, v=0):
        if v not in (0, 1, 2):
            raise ValueError(f"mla_absorb_q: `version` must be 0..2, got {v}")
        W = self._bf(kvb, H * (Dn + Dv) * R).reshape(H, Dn + Dv, R)
        Q = self._bf(qn, T * H * Dn).reshape(T, H, Dn)
        self._put_bf(ql, np.einsum("thn,hnr->thr", Q, W[:, :Dn]))

    def _mla_absorb_o(self, ol, kvb, out, T, H, Dn, Dv, R):
        W = self._bf(kvb, H * (Dn + Dv) * R).reshape(H, Dn + Dv, R)
        O = self._bf(ol, T * H * R).reshape(T, H, R)
        self._put_bf(out, np.einsum("thr,hvr->thv", O, W[:, Dn:]))

    def _mla_split_kv(self, kv, rope, k, v, L, H, Dn, Dr, Dv):
        KV = self._bf(kv, L * H * (Dn + Dv)).reshape(L, H, Dn + Dv)
        RP = self._bf(rope, L * Dr).reshape(L, 1, Dr)
        self._put_bf(k, np.concatenate([KV[..., :Dn], np.broadcast_to(RP, (L, H, Dr))], -1))
        self._put_bf(v, KV[..., Dn:])

    def _swiglu_gemv(self, x, g, u, h, T, F, K):
        X = self._bf(x, T * K).reshape(T, K)
        G = X @ self._bf(g, F * K).reshape(F, K).T
        U = X @ self._bf(u, F * K).reshape(F, K).T
        self._put_bf(h, ref.silu(G) * U)

    def _moe_swiglu(self, x, st, g, u, h, offsets, rows, E, F, D):
        tok = self._a(st, np.int32, rows)
        off = self._a(offsets, np.int32, E + 1)
        X = self._bf(x, (int(tok.max()) + 1) * D).reshape(-1, D)[tok]
        out = np.empty((rows, F))
        for e in range(E):
            r0, r1 = off[e], off[e + 1]
            if r1 > r0:
                G = X[r0:r1] @ self._bf(g + e * F * D * 2, F * D).reshape(F, D).T
                U = X[r0:r1] @ self._bf(u + e * F * D * 2, F * D).reshape(F, D).T
                out[r0:r1] = ref.silu(G) * U
        self._put_bf(h, out)

    def _mla_prepare(self, q, c, w, eps, pos, theta, layout, pages, table, ps, start, qn, qr, T, H, Dn, Dr, R):
        lay = "interleaved" if layout == 0 else "half"
        Q = self._bf(q, T * H * (Dn + Dr)).reshape(T, H, Dn + Dr)
        C = self._bf(c, T * (R + Dr)).reshape(T, R + Dr)
        p = self._a(pos, np.int64, T)
        self._put_bf(qn, Q[..., :Dn])
        self._put_bf(qr, ref.rope(Q[..., Dn:], p, theta=theta, rot_dim=Dr, layout=lay))
        lat = ref.rms_norm(C[:, :R], self._bf(w, R), eps)
        kr = ref.rope(C[:, None, R:], p, theta=theta, rot_dim=Dr, layout=lay)[:, 0]
        rows = self._rows(table, ps, start + T)[start:]
        n_rows = int(rows.max()) + 1
        P = self._a(pages, np.uint16, n_rows * (R + Dr)).reshape(n_rows, R + Dr)
        P[rows, :R] = _to_bf16(lat)
        P[rows, R:] = _to_bf16(kr)

    def _concat_heads(self, a, b, y, rows, Da, Db):
        self._put_bf(y, np.concatenate([self._bf(a, rows * Da).reshape(rows, Da),
                                        self._bf(b, rows * Db).reshape(rows, Db)], -1))


def tiny_config(kind):
    """A tiny GLM-4.7-Flash-like (MLA + MoE, first layer dense) or Qwen3-like (GQA, q/k norm) config."""
    from glmbench.models import configs
    if kind == "glm":
        hf = {k: v for k, v in configs.load("glm-4.7-flash").hf.items() if not k.startswith("_")}
        hf.update(vocab_size=97, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=4, q_lora_rank=48, kv_lora_rank=32, qk_nope_head_dim=16,
                  qk_rope_head_dim=8, v_head_dim=24, n_routed_experts=8, num_experts_per_tok=2)
    else:
        hf = {k: v for k, v in configs.load("qwen3-32b").hf.items() if not k.startswith("_")}
        hf.update(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=16)
    return configs.load(hf)


def install():
    """Point glmbench.cuda at a fresh emulator; returns a function that restores the real module."""
    from glmbench import cuda
    old = cuda._C
    emu = Emulator()
    cuda._C = emu
    cuda._ONE_PAGE = None

    def restore():
        cuda._C = old
        cuda._ONE_PAGE = None
    return restore
