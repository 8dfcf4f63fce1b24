"""Load the compiled C core. OpenBLAS comes from the scipy-openblas32 wheel: the extension was
linked against libscipy_openblas.so at build time, and here we preload that exact file with
RTLD_GLOBAL so the dynamic loader resolves the extension's dependency by soname (the build
environment's copy is gone after `pip install`)."""
import ctypes
import os

import scipy_openblas32

# OpenBLAS's worker threads spin for 2^28 cycles (~0.1 s) after each call before sleeping, which
# starves the C core's OpenMP threads on a small machine (seen here: a 5 ms op took 0.5 s on 2
# cores). 2^4 cycles, then sleep. Read once when the library loads; a user's own setting wins.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

_lib = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
ctypes.CDLL(_lib, mode=ctypes.RTLD_GLOBAL)

from . import _core  # noqa: E402

try:  # built only where nvcc was found (setup.py); glmbench.HAS_CUDA says which
    from . import _cuda  # noqa: F401
    HAS_CUDA = True
except ImportError:
    _cuda = None
    HAS_CUDA = False
