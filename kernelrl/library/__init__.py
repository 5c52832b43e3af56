"""The tuned library: a folder with manifest.json, per-kernel .cu sources and built shared libraries, and the
runtime that dispatches torch tensors to them (kernelrl.load_library, kernelrl.hgemm, torch.ops.kernelrl.hgemm)."""

from kernelrl.library.runtime import Library, LibraryError, hgemm, load_library

__all__ = ["Library", "LibraryError", "hgemm", "load_library"]
