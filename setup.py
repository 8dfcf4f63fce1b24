"""Build glmbench._core (C11 + NumPy C API + OpenMP + OpenBLAS) and, when nvcc is present,
glmbench._cuda (kernels/*.cu + cuBLAS).

Environment flags (no side effects: no git, no network):
  GLMBENCH_NATIVE=0   do not pass -march=native (portable binary)
  GLMBENCH_CUDA=0|1   0: never build the CUDA extension; 1: require it (fail if nvcc is missing);
                      unset: build it when nvcc is found, else print one line and build CPU-only
  GLMBENCH_CUDA_ARCHS semicolon list of SM versions for nvcc (default "80;86;90")
  GLMBENCH_DEBUG=1    -O0 -g instead of -O3
"""
import glob
import os
import shutil
import sys

import numpy
import scipy_openblas32
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _flag(name, default=None):
    v = os.environ.get(name)
    return default if v is None or v == "" else v


def core_extension():
    cflags = ["-std=c11", "-fopenmp", "-Wall", "-Wno-unused-function", "-fno-strict-aliasing"]
    if _flag("GLMBENCH_DEBUG") == "1":
        cflags += ["-O0", "-g"]
    else:
        cflags += ["-O3"]
    if _flag("GLMBENCH_NATIVE", "1") != "0":
        cflags += ["-march=native"]
    sources = sorted(glob.glob(os.path.join("csrc", "*.c")))
    return Extension(
        "glmbench._core",
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


def cuda_extension():
    """The CUDA extension, or None with one clear line saying why it is skipped."""
    mode = _flag("GLMBENCH_CUDA")
    if mode == "0":
        print("glmbench: GLMBENCH_CUDA=0, building CPU-only", file=sys.stderr)
        return None
    nvcc = _find_nvcc()
    cu_sources = sorted(glob.glob(os.path.join("kernels", "*.cu")))
    if nvcc is None or not cu_sources:
        why = "nvcc not found" if nvcc is None else "no kernels/*.cu sources"
        if mode == "1":
            raise RuntimeError(f"GLMBENCH_CUDA=1 but {why}")
        print(f"glmbench: {why}, building CPU-only (set GLMBENCH_CUDA=1 to require CUDA)",
              file=sys.stderr)
        return None
    cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    c_sources = sorted(glob.glob(os.path.join("kernels", "*.c")))
    ext = Extension(
        "glmbench._cuda",
        sources=c_sources + cu_sources,
        include_dirs=["kernels", "csrc", numpy.get_include(), os.path.join(cuda_home, "include")],
        library_dirs=[os.path.join(cuda_home, "lib64"), os.path.join(cuda_home, "lib64", "stubs")],
        libraries=["cudart", "cublas", "cublasLt"],
        runtime_library_dirs=[os.path.join(cuda_home, "lib64")],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
        extra_compile_args=["-std=c11", "-O3", "-Wall"],
    )
    ext._nvcc = nvcc
    return ext


class BuildExt(build_ext):
    """build_ext that hands .cu files to nvcc and everything else to the C compiler."""

    def build_extension(self, ext):
        nvcc = getattr(ext, "_nvcc", None)
        if nvcc is None:
            return super().build_extension(ext)
        archs = _flag("GLMBENCH_CUDA_ARCHS", "80;86;90").split(";")
        cu = [s for s in ext.sources if s.endswith(".cu")]
        ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
        objdir = os.path.join(self.build_temp, "cuda")
        os.makedirs(objdir, exist_ok=True)
        objs = []
        for src in cu:
            obj = os.path.join(objdir, os.path.basename(src) + ".o")
            if not os.path.exists(obj) or os.path.getmtime(obj) < max(
                    os.path.getmtime(p) for p in [src] + glob.glob("kernels/*.h") + glob.glob("kernels/*.cuh")):
                cmd = [nvcc, "-c", src, "-o", obj, "-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                       "-Ikernels", "-Icsrc", "--expt-relaxed-constexpr"]
                for a in archs:
                    cmd += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
                print(" ".join(cmd))
                self.spawn(cmd)
            objs.append(obj)
        ext.extra_objects = list(ext.extra_objects or []) + objs
        super().build_extension(ext)


exts = [core_extension()]
_cu = cuda_extension()
if _cu is not None:
    exts.append(_cu)

setup(ext_modules=exts, cmdclass={"build_ext": BuildExt})
