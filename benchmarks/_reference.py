"""Reference read bandwidth measured in the same run as the engine (STREAM-style read-only kernel).

The kernel is compiled here with the system C compiler (OpenMP, one thread per core) so that it is
independent of the BLAS the engines use; without a compiler it falls back to a threaded numpy max.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))


def _compile_kernel():
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    out = Path(tempfile.mkdtemp(prefix="anebench-ref-")) / "read_kernel.so"
    cmd = [compiler, "-O3", "-march=native", "-shared", "-fPIC", str(HERE / "read_kernel.c"), "-o", str(out)]
    if subprocess.run(cmd, capture_output=True, check=False).returncode != 0:
        return None
    lib = ctypes.CDLL(str(out))
    lib.read_sum.restype = ctypes.c_double
    lib.read_sum.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


class ReadKernel:
    def __init__(self, nbytes: int):
        self.array = np.ones(nbytes // 4, dtype=np.float32)
        self.lib = _compile_kernel()
        threads = os.cpu_count() or 1
        self.name = (f"C 8-stream read-only sum (-O3 -march=native), {threads} threads" if self.lib
                     else f"numpy max over {threads} threads (no C compiler)")
        self._pool = ThreadPoolExecutor(threads)
        self._parts = np.array_split(self.array, threads)  # ctypes releases the GIL during each call

    def _sum(self, part: np.ndarray) -> float:
        return self.lib.read_sum(part.ctypes.data, part.size)

    def once(self) -> None:
        if self.lib is not None:
            total = sum(self._pool.map(self._sum, self._parts))
            assert total == self.array.size  # the kernel really read every element
        else:
            list(self._pool.map(np.max, self._parts))

    def gbps(self, repeats: int = 10) -> float:
        from anebench.model import gbps, median  # after HERE's src/ is on the path

        self.once()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            self.once()
            times.append(time.perf_counter() - start)
        return gbps(self.array.nbytes, median(times))


def blas_line() -> str:
    from anebench.system.blas import OPENBLAS_OVERRIDES, blas_libraries

    libs = ", ".join(
        f"{b['library']} {b['version']} kernel={b['kernel']} threads={b['threads']}" for b in blas_libraries()
    )
    overrides = [f"{v}={os.environ[v]}" for v in OPENBLAS_OVERRIDES if os.environ.get(v)]
    return f"BLAS: {libs or 'none found'}; overrides: {', '.join(overrides) or 'none'}"
