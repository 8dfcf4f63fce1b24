"""Load the compiled C core. OpenBLAS comes from the scipy-openblas32 wheel: the extension was
linked against libscipy_openblas.so at build time, and here we preload that exact file with
RTLD_GLOBAL so the dynamic loader resolves the extension's dependency by soname (the build
environment's copy is gone after `pip install`).

Where the core was not built (no C compiler or no OpenMP, e.g. a Mac without libomp, or
GLMBENCH_CORE=0), importing this module raises `CoreUnavailable` (an ImportError) that says why;
predictions, reports and charts never import it (tests/test_layout.py checks)."""
import ctypes
import os


class CoreUnavailable(ImportError):
    """The compiled C core is not importable here; measured ops need it."""


def _unavailable(why: str) -> CoreUnavailable:
    return CoreUnavailable(
        f"glmbench's C core (glmbench.core._core) is not available: {why}. Predictions, reports, "
        "sweeps and charts work without it; measured ops (kernels, Model, `glmbench measure`) need it: "
        "reinstall with a C compiler and OpenMP (`pip install .`; setup.py prints why a build was skipped)")


# OPENBLAS_THREAD_TIMEOUT (OpenBLAS's idle workers sleep at once instead of spinning ~0.1 s, which
# starved the C core's OpenMP threads on 2 cores: a 5 ms op took 0.5 s) is set by glmbench/__init__.py,
# which runs before this module and before NumPy loads; the OpenBLAS preloaded here reads it too.

try:
    import scipy_openblas32
    _lib = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
    ctypes.CDLL(_lib, mode=ctypes.RTLD_GLOBAL)
except (ImportError, OSError) as e:  # the core links OpenBLAS; without it the import below fails too
    _blas_error = f"OpenBLAS (scipy-openblas32) could not be loaded ({e})"
else:
    _blas_error = None

try:
    from glmbench.core import _core  # noqa: E402,F401
except ImportError as e:
    raise _unavailable(_blas_error or f"the extension was not built or does not load ({e})") from None
