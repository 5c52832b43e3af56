"""HGEMM candidate sources built for sm_90a on a machine without a GPU (nvcc only): their static initializers run
when a test loads them, which is what the load-time checks read."""

from pathlib import Path

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain


def build_libraries(cache_dir: Path, files: dict[str, Path]) -> dict[str, str]:
    """name -> built library path, for each named source (every build must succeed)."""
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=cache_dir)
    built = builder.build_many([BuildRequest(p.read_text(), name=n, origin=str(p)) for n, p in files.items()],
                               workers=2)
    assert all(b.ok for b in built), [b.error for b in built]
    return {n: b.lib_path for n, b in zip(files, built)}
