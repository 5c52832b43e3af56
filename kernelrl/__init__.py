"""kernelrl: make GPU kernels faster than the vendor libraries, measured honestly on your own GPU."""

__version__ = "0.1.0"


def load_library(root):
    """Load a tuned library folder (see kernelrl.library); imported lazily so the CLI needs no torch at start."""
    from kernelrl.library.runtime import load_library as _load
    return _load(root)


def hgemm(a, b, out=None):
    """C = A @ B (fp16) through the loaded tuned library; see kernelrl.library.runtime for the dispatch rules."""
    from kernelrl.library.runtime import hgemm as _hgemm
    return _hgemm(a, b, out)
