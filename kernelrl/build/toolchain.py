"""Find nvcc, the GPU architecture to build for, and the include/library paths of CUTLASS and cuBLAS."""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.errors import UserError


class ToolchainError(UserError, RuntimeError):
    """The CUDA toolchain cannot do what was asked; the message says what to install or pass."""


def arch_flags(arch: str) -> list[str]:
    """nvcc flags for an architecture written as 'sm_90a', '90a', 'sm_80' or '8.0'.

    Hopper gets the arch-specific 90a target so wgmma and setmaxnreg are available (HOPPER.md: the -gencode form)."""
    text = arch.strip().lower().replace("sm_", "").replace("compute_", "").replace(".", "")
    match = re.fullmatch(r"(\d{2,3})(a?)", text)
    if not match:
        raise ToolchainError(f"unknown architecture {arch!r}: write it like sm_90a or sm_80")
    number, suffix = match.groups()
    if number == "90":
        suffix = "a"
    return ["-gencode", f"arch=compute_{number}{suffix},code=sm_{number}{suffix}"]


def detect_arch() -> str | None:
    """The compute capability of GPU 0 as 'sm_XY', or None without a visible NVIDIA GPU."""
    if "torch" in sys.modules or importlib.util.find_spec("torch"):
        try:
            import torch

            if torch.cuda.is_available():
                major, minor = torch.cuda.get_device_capability(0)
                return f"sm_{major}{minor}"
        except Exception:  # a broken driver looks like no GPU here; the runner reports the real error
            pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=20).stdout.strip().splitlines()
            if out and re.fullmatch(r"\d+\.\d+", out[0].strip()):
                return "sm_" + out[0].strip().replace(".", "")
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def find_nvcc() -> str | None:
    for candidate in (os.environ.get("KERNELRL_NVCC"), shutil.which("nvcc"),
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@functools.lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"release (\d+\.\d+), V([\d.]+)", out)
    return match.group(2) if match else out.strip().splitlines()[-1]


def cutlass_include_dirs() -> list[str]:
    """CUTLASS/CuTe headers shipped in the PyPI package nvidia-cutlass (cutlass_library/source/...)."""
    spec = importlib.util.find_spec("cutlass_library")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        include = root / "source" / "include"
        if (include / "cutlass" / "cutlass.h").exists():
            return [str(include), str(root / "source" / "tools" / "util" / "include")]
    return []


def _nvidia_wheel_dirs(sub: str) -> list[str]:
    """Directories like site-packages/nvidia/cu13/<sub> or nvidia/cublas/<sub> from NVIDIA's PyPI wheels."""
    found = []
    for base in sys.path:
        for pattern in ("nvidia/cu1*/" + sub, "nvidia/cublas/" + sub):
            found.extend(sorted(glob.glob(os.path.join(base, pattern)), reverse=True))
    extra = os.environ.get("KERNELRL_CUBLAS_ROOT")
    if extra:
        found.insert(0, os.path.join(extra, sub))
    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]


def cublas_paths(nvcc: str | None) -> tuple[str, str]:
    """(include dir, library dir) for cuBLAS/cuBLASLt.

    The library that torch already loaded is preferred, so one process never holds two cuBLAS builds."""
    toolkit = Path(nvcc).resolve().parent.parent if nvcc else None
    includes = _nvidia_wheel_dirs("include")
    libs = _nvidia_wheel_dirs("lib")
    if toolkit:
        includes.append(str(toolkit / "include"))
        libs += [str(toolkit / "lib64"), str(toolkit / "targets" / "x86_64-linux" / "lib")]
    include = next((d for d in includes if os.path.exists(os.path.join(d, "cublasLt.h"))), None)
    lib = next((d for d in libs if glob.glob(os.path.join(d, "libcublasLt.so*"))), None)
    if include is None or lib is None:
        raise ToolchainError("cuBLAS headers or libraries not found: pip install nvidia-cublas "
                             "(or set KERNELRL_CUBLAS_ROOT to a folder with include/ and lib/)")
    return include, lib


@dataclass(frozen=True)
class Toolchain:
    """What a build needs to know about the machine: nvcc, its version, the target architecture."""

    nvcc: str
    version: str
    arch: str
    include_dirs: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def discover(cls, arch: str | None = None, with_cutlass: bool = True) -> "Toolchain":
        nvcc = find_nvcc()
        if nvcc is None:
            raise ToolchainError("nvcc not found: install the CUDA toolkit, put nvcc on PATH or set KERNELRL_NVCC")
        arch = arch or os.environ.get("KERNELRL_ARCH") or detect_arch()
        if arch is None:
            raise ToolchainError("no GPU to detect the architecture from: pass --arch (e.g. --arch sm_90a)")
        arch_flags(arch)  # validate early
        includes = tuple(cutlass_include_dirs()) if with_cutlass else ()
        return cls(nvcc=nvcc, version=nvcc_version(nvcc), arch=arch, include_dirs=includes)
