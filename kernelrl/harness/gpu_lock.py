"""One measurement at a time on a GPU, across processes.

Two kernelrl jobs timing on one GPU at once (two training runs, a bench beside a tune) each measure the other's
kernels as noise, and an interleaved group no longer compares its members under the same conditions. Every local
measurement therefore holds an exclusive lock on each GPU it can see (an `flock` on a file named by the GPU's UUID,
released by the kernel when the holder dies, so a killed job never leaves a GPU locked). Builds run outside it,
so two jobs still overlap their nvcc work with each other's timing. A job that has to wait says so."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from contextlib import ExitStack, contextmanager
from pathlib import Path

LOCK_DIR_ENV = "KERNELRL_GPU_LOCK_DIR"  # where the lock files live (default: the system's temporary folder)


def visible_gpus(smi_lines: list[str] | None = None, visible: str | None = None) -> list[str]:
    """The UUIDs of the GPUs this process can use: nvidia-smi's list narrowed by CUDA_VISIBLE_DEVICES (indices or
    UUIDs, as CUDA reads it); [] without nvidia-smi (nothing to share)."""
    if smi_lines is None:
        smi = shutil.which("nvidia-smi")
        if not smi:
            return []
        try:
            smi_lines = subprocess.run([smi, "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                                       text=True, timeout=20).stdout.strip().splitlines()
        except (OSError, subprocess.TimeoutExpired):
            return []
    gpus = [tuple(f.strip() for f in line.split(",", 1)) for line in smi_lines if "," in line]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if visible is None:
        return [uuid for _, uuid in gpus]
    chosen = []
    for entry in (e.strip() for e in visible.split(",")):
        if not entry:
            break  # CUDA stops at the first empty or invalid entry
        found = [uuid for index, uuid in gpus
                 if entry == index or (entry.startswith("GPU-") and uuid.startswith(entry))]
        if not found:
            break
        chosen.append(found[0])
    return chosen


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def exclusive_gpus(say=None, gpus: list[str] | None = None, lock_dir: str | None = None):
    """Hold every visible GPU (sorted, so two jobs never wait on each other in a circle) for the block."""
    gpus = visible_gpus() if gpus is None else gpus
    root = Path(lock_dir or os.environ.get(LOCK_DIR_ENV) or "/tmp")
    with ExitStack() as stack:
        for uuid in sorted(set(gpus)):
            path = root / f"kernelrl-{uuid}.lock"
            handle = stack.enter_context(open(path, "a+"))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if say:
                    say(f"waiting for {uuid}: another kernelrl job is measuring on it ({_holder(path)})")
                fcntl.flock(handle, fcntl.LOCK_EX)
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}\n")
            handle.flush()
        yield
