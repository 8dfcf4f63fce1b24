"""Build glmbench.core._core (C11 + NumPy C API + OpenMP + OpenBLAS) and, when nvcc is present,
glmbench.cuda._cuda (kernels/*.cu + cuBLAS).

The C core is optional: where it cannot be built (no C compiler, no OpenMP, e.g. a Mac without
libomp) or GLMBENCH_CORE=0, the install finishes with a warning and the package still predicts,
reports and draws (glmbench report, sweep, models, hardware, compare, plot); measured ops then
raise an ImportError that says why (glmbench/core/_loader.py).

Environment flags (no side effects: no git, no network):
  GLMBENCH_CORE=0     do not build the C core (predictions only); =1: a failed build is an error
  GLMBENCH_NATIVE=0   do not pass -march=native (portable binary)
  GLMBENCH_CUDA=0|1   0: never build the CUDA extension; 1: require it (fail if nvcc is missing);
                      unset: build it when nvcc is found, else print one line and build CPU-only
  GLMBENCH_CUBLAS_DIR folder of an nvidia-cublas wheel (include/, lib/) when cuBLAS is not in the CUDA root
  GLMBENCH_CUDA_ARCHS semicolon list of SM versions for nvcc (default "80;86;90")
  GLMBENCH_DEBUG=1    -O0 -g instead of -O3
"""
import glob
import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _flag(name, default=None):
    v = os.environ.get(name)
    return default if v is None or v == "" else v


def core_extension():
    # build requirements of the C core only (pyproject's build-system installs them)
    import numpy
    import scipy_openblas32
    # -fno-wrapv: undoes the -fwrapv Python's own CFLAGS put first on the command line (CPython needs
    # it; the C core does not: it keeps clear of signed overflow, which the UBSan fuzz builds check).
    # With -fwrapv the q4_K decode GEMV read 0.85-0.91x as fast from DRAM (Zen 2, 2 threads; Qwen3-32B-
    # shaped Q4_K_M decode 29.5 -> 31.1 tok/s without it): bench/results/session24_iq4_gemv_zen2_2026-12-04.md
    cflags = ["-std=c11", "-fopenmp", "-Wall", "-Wno-unused-function", "-fno-strict-aliasing", "-fno-wrapv"]
    if _flag("GLMBENCH_DEBUG") == "1":
        cflags += ["-O0", "-g"]
    else:
        cflags += ["-O3"]
    if _flag("GLMBENCH_NATIVE", "1") != "0":
        cflags += ["-march=native"]
    sources = sorted(glob.glob(os.path.join("csrc", "*.c")))
    return Extension(
        "glmbench.core._core",
        sources=sources,
        include_dirs=["csrc", numpy.get_include(), scipy_openblas32.get_include_dir()],
        library_dirs=[scipy_openblas32.get_lib_dir()],
        libraries=[scipy_openblas32.get_library()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
        extra_compile_args=cflags,
        extra_link_args=["-fopenmp"],
    )


def _find_nvcc():
    cand = shutil.which("nvcc")
    if cand:
        return cand
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    return None


def _cuda_home(nvcc):
    """The CUDA root that holds cuda_runtime.h (nvcc may be a wrapper script, not a symlink)."""
    cands = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "/usr/local/cuda"]
    for home in cands:
        if home and os.path.exists(os.path.join(home, "include", "cuda_runtime.h")):
            return home
    return None


def _find_cublas(cuda_home):
    """(include_dir, lib_dir, [link names]) for cuBLAS + cuBLASLt, or None. Looks in the CUDA
    root, then in the NVIDIA wheels (nvidia-cublas: nvidia/cu13/..., nvidia/cublas/... for cu12)
    on sys.path, which is where PyTorch's CUDA builds put it."""
    roots = [(os.path.join(cuda_home, "include"), os.path.join(cuda_home, "lib64"))]
    # pip builds in an isolated environment that cannot see the user's nvidia-cublas wheel:
    # GLMBENCH_CUBLAS_DIR names its folder (the one holding include/cublas_v2.h and lib/).
    if _flag("GLMBENCH_CUBLAS_DIR"):
        d = _flag("GLMBENCH_CUBLAS_DIR")
        roots.insert(0, (os.path.join(d, "include"), os.path.join(d, "lib")))
    for p in sys.path:
        for sub in ("cu13", "cublas"):
            d = os.path.join(p or ".", "nvidia", sub)
            roots.append((os.path.join(d, "include"), os.path.join(d, "lib")))
    for inc, lib in roots:
        if not os.path.exists(os.path.join(inc, "cublas_v2.h")):
            continue
        names = []
        for base in ("cublas", "cublasLt"):
            plain = os.path.join(lib, f"lib{base}.so")
            versioned = sorted(glob.glob(os.path.join(lib, f"lib{base}.so.[0-9]*")), key=len)
            if os.path.exists(plain):
                names.append(base)
            elif versioned:
                names.append(":" + os.path.basename(versioned[0]))  # gcc -l:libcublas.so.13
        if len(names) == 2:
            return inc, lib, names
    return None


def cuda_extension():
    """The CUDA extension, or None with one clear line saying why it is skipped."""
    mode = _flag("GLMBENCH_CUDA")
    if mode == "0":
        print("glmbench: GLMBENCH_CUDA=0, building CPU-only", file=sys.stderr)
        return None
    nvcc = _find_nvcc()
    cu_sources = sorted(glob.glob(os.path.join("kernels", "*.cu")))
    cuda_home = _cuda_home(nvcc) if nvcc else None
    if nvcc is None or not cu_sources or cuda_home is None:
        why = ("nvcc not found" if nvcc is None else "no kernels/*.cu sources" if not cu_sources
               else f"no CUDA headers (cuda_runtime.h) beside {nvcc}; set CUDA_HOME")
        if mode == "1":
            raise RuntimeError(f"GLMBENCH_CUDA=1 but {why}")
        print(f"glmbench: {why}, building CPU-only (set GLMBENCH_CUDA=1 to require CUDA)",
              file=sys.stderr)
        return None
    c_sources = sorted(glob.glob(os.path.join("kernels", "*.c")))
    libs, lib_dirs = ["cudart"], [os.path.join(cuda_home, "lib64")]
    nvcc_flags = []
    cublas = _find_cublas(cuda_home)
    if cublas:
        inc, lib, names = cublas
        nvcc_flags += ["-DGB_HAVE_CUBLAS", "-I" + inc]
        libs += names
        if lib not in lib_dirs:
            lib_dirs.append(lib)
    else:
        print("glmbench: cuBLAS headers not found (CUDA root or the nvidia-cublas wheel): "
              "linear layers use the built-in tensor-core GEMM; `pip install nvidia-cublas` adds cuBLAS",
              file=sys.stderr)
    ext = Extension(
        "glmbench.cuda._cuda",
        sources=c_sources + cu_sources,
        include_dirs=["kernels"],
        library_dirs=lib_dirs,
        libraries=libs + ["stdc++"],
        runtime_library_dirs=lib_dirs,
        extra_compile_args=["-std=c11", "-O3", "-Wall"],
    )
    ext._nvcc = nvcc
    ext._nvcc_flags = nvcc_flags
    return ext


class BuildExt(build_ext):
    """build_ext that hands .cu files to nvcc (in parallel, one process per core) and everything
    else to the C compiler."""

    def build_extension(self, ext):
        try:
            return self._build_extension(ext)
        except Exception as e:  # noqa: BLE001 - any compiler/linker failure: warn, finish the install
            if _flag("GLMBENCH_CORE") == "1" or (ext.name.endswith("_cuda") and _flag("GLMBENCH_CUDA") == "1"):
                raise
            print(f"\nglmbench: WARNING: {ext.name} could not be built ({type(e).__name__}: {e}).\n"
                  "glmbench: the package installs without it: predictions, reports, sweeps and charts work; "
                  + ("measured ops (kernels, Model, `glmbench measure`) raise ImportError saying why.\n"
                     if ext.name.endswith("_core") else "`glmbench measure --device cuda` is unavailable.\n")
                  + "glmbench: set GLMBENCH_CORE=1 to make a failed C-core build an error.\n", file=sys.stderr)

    def _build_extension(self, ext):
        nvcc = getattr(ext, "_nvcc", None)
        if nvcc is None:
            return super().build_extension(ext)
        import concurrent.futures
        import hashlib
        import subprocess

        archs = [a for a in _flag("GLMBENCH_CUDA_ARCHS", "80;86;90").split(";") if a]
        cu = [s for s in ext.sources if s.endswith(".cu")]
        ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
        objdir = os.path.join(self.build_temp, "cuda")
        os.makedirs(objdir, exist_ok=True)
        opt = ["-O0", "-g", "-G"] if _flag("GLMBENCH_DEBUG") == "1" else ["-O3", "-lineinfo"]
        base = [nvcc, "-c", "-std=c++17", "-Xcompiler", "-fPIC", "-Ikernels",
                "--expt-relaxed-constexpr"] + opt + list(ext._nvcc_flags)
        for a in archs:
            base += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
        # The object's name carries a hash of the nvcc command, the source and every kernels/
        # header, so a changed flag or file always rebuilds it (mtimes are not enough when several
        # builds share this tree), and a finished object is renamed into place whole.
        headers = sorted(glob.glob("kernels/*.h") + glob.glob("kernels/*.cuh"))
        common = hashlib.sha1(" ".join(base).encode())
        for h in headers:
            with open(h, "rb") as f:
                common.update(f.read())
        jobs, objs = [], []
        for src in cu:
            digest = common.copy()
            with open(src, "rb") as f:
                digest.update(f.read())
            obj = os.path.join(objdir, f"{os.path.basename(src)}.{digest.hexdigest()[:12]}.o")
            objs.append(obj)
            if not os.path.exists(obj):
                jobs.append(base + [src, "-o", obj + f".tmp{os.getpid()}"])

        def run(cmd):
            print(" ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode == 0:
                os.replace(cmd[-1], cmd[-1].rsplit(".tmp", 1)[0])
            return cmd, r

        failed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            for cmd, r in pool.map(run, jobs):
                if r.stdout or r.stderr:
                    print(r.stdout + r.stderr, file=sys.stderr)
                if r.returncode != 0:
                    failed.append(cmd[-3])
        if failed:
            raise RuntimeError(f"nvcc failed on {', '.join(failed)} (messages above)")
        ext.extra_objects = list(ext.extra_objects or []) + objs
        ext.depends = list(ext.depends or []) + objs  # a new object relinks the module
        super().build_extension(ext)


exts = []
if _flag("GLMBENCH_CORE") == "0":
    print("glmbench: GLMBENCH_CORE=0, not building the C core: predictions, reports and charts work; "
          "measured ops will raise ImportError", file=sys.stderr)
else:
    exts.append(core_extension())
    _cu = cuda_extension()
    if _cu is not None:
        exts.append(_cu)

setup(ext_modules=exts, cmdclass={"build_ext": BuildExt})
