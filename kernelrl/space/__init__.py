"""Kernel spaces: parametric HGEMM families. Importing this package registers every family in SPACES."""

from kernelrl.space.base import SPACES, KernelSpace, Variant

for _module in ("mma_sync", "cutlass_sm90", "small", "wgmma"):
    try:
        __import__(f"kernelrl.space.{_module}")
    except ModuleNotFoundError as exc:  # a family still being written is simply absent
        if exc.name != f"kernelrl.space.{_module}":
            raise

__all__ = ["SPACES", "KernelSpace", "Variant"]
