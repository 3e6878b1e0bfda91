"""Which BLAS the PyTorch in this process runs, for the benchmarks that compare with it.

Debian's python3-torch calls whatever libblas.so.3 the loader finds, and without
libopenblas0-pthread (which scripts/setup installs) that is the netlib reference BLAS,
about 20 times slower on matrix products: a comparison with it flatters SexpGPU. So a
PyTorch peer prints `blas_line(torch)` before any figure, which is `refuse WHY` when the
BLAS is not an optimized one; the benchmark then reports no ratio.

The BLAS is the library that libtorch's own `sgemm_` resolves to (dladdr of the symbol
as libtorch_cpu sees it), so a second BLAS that is merely mapped is not mistaken for it.
"""
import ctypes
import os

# An optimized BLAS, by what its library's real path holds.
OPTIMIZED = {"openblas": ("/openblas", "libopenblas"), "mkl": ("libmkl_",), "blis": ("libblis",)}


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def sgemm_library():
    """The real path of the library whose sgemm_ libtorch calls, or None."""
    with open("/proc/self/maps") as maps:
        torch_libs = [line.split()[-1] for line in maps if "/libtorch_cpu" in line]
    if not torch_libs:
        return None
    try:
        sgemm = ctypes.CDLL(torch_libs[0], mode=os.RTLD_NOLOAD | os.RTLD_LAZY).sgemm_
    except (OSError, AttributeError):
        return None
    info = _DlInfo()
    if not ctypes.CDLL(None).dladdr(ctypes.cast(sgemm, ctypes.c_void_p), ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


def openblas_description(path):
    """`OpenBLAS 0.3.21 NO_LAPACKE core Zen`: its build and the kernels it chose here."""
    try:
        lib = ctypes.CDLL(path)
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        config = lib.openblas_get_config().decode()
        return f"{config.split(' DYNAMIC_ARCH')[0]} core {lib.openblas_get_corename().decode()}"
    except (OSError, AttributeError):
        return path


def torch_build(torch):
    """What PyTorch's build says of its BLAS and vector kernels (torch.__config__.show())."""
    shown = torch.__config__.show()
    blas = next((part.split("=", 1)[1] for part in shown.replace(",", " ").split() if part.startswith("BLAS_INFO=")),
                "?")
    kernels = next((line.split(":", 1)[1].strip() for line in shown.splitlines() if "CPU capability" in line), "?")
    return f"torch built with BLAS_INFO={blas}, kernels {kernels}"


def blas_line(torch):
    """`blas NAME (DETAILS)` for an optimized BLAS, else `refuse WHY`."""
    path = sgemm_library()
    found = next((name for name, marks in OPTIMIZED.items() if path and any(mark in path for mark in marks)), None)
    if found is None:
        return (f"refuse PyTorch's sgemm_ is {path or 'not found'} ({torch_build(torch)}), not an optimized BLAS: "
                "a reference BLAS would flatter us; apt-get install libopenblas0-pthread (scripts/setup does)")
    details = openblas_description(path) if found == "openblas" else path
    return f"blas {found} ({details}; {torch_build(torch)})"
