"""Honest hand-written CUDA candidates for kernelrl's own KernelBench-format tasks (`tasks_own`), one file per task
under the task's file name, so `kernelrl kb eval --tasks kernelrl/kernelbench/tasks_own --candidates
kernelrl/kernelbench/candidates_own` pairs them. Each compiles its kernels with `load_inline` when imported (on a
GPU machine, with ninja on PATH): the CUDA source needs only <cuda_runtime.h> (`no_implicit_headers=True` keeps torch
headers out of nvcc's way), the C++ glue is one `torch::Tensor f(torch::Tensor ...)` per entry point, launching on
the caller's current stream. `CANDIDATES_DIR` is the folder to pass to `--candidates`."""

from pathlib import Path

CANDIDATES_DIR = Path(__file__).parent
