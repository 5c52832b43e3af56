"""The environment every result records: GPU, driver, CUDA, torch, clocks, date, host."""

from __future__ import annotations

import datetime as dt
import platform
import shutil
import subprocess

from kernelrl.build.toolchain import find_nvcc, nvcc_version

QUERY = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,memory.total"


def gpu_info() -> dict:
    """What nvidia-smi says about GPU 0 (no CUDA context needed); empty without a GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    try:
        out = subprocess.run([smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if not out:
        return {}
    fields = [f.strip() for f in out[0].split(",")]
    keys = ["gpu", "driver", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "temperature_c", "power_w",
            "memory_mib"]
    return dict(zip(keys, fields))


def collect(extra: dict | None = None) -> dict:
    env: dict[str, str | None] = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                  "host": platform.node(), "python": platform.python_version()}
    try:
        import torch  # optional here: evolve reads gpu_info() from this module without loading torch
        env["torch"] = torch.__version__
        env["torch_cuda"] = torch.version.cuda
    except ImportError:
        env["torch"] = None
    nvcc = find_nvcc()
    env["nvcc"] = nvcc_version(nvcc) if nvcc else None
    env.update(gpu_info())
    env.update(extra or {})
    return env


def gpu_key(env: dict) -> str:
    """The GPU part of database keys: results from another card never mix."""
    return env.get("gpu") or "no-gpu"
