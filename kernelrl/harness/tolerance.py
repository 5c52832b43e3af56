"""The one tolerance rule of KernelBench-style outputs, by the reference output's dtype: the worker judges with it,
records it beside the error, and the RL reward divides the recorded error by the recorded tolerance, so the two
can never disagree. (HGEMM's rule depends on the accumulator and K: `kernelrl.verify.checks.tolerance`.)"""

from __future__ import annotations

HALF_TOLERANCE = 1e-2  # fp16 and bf16 outputs: atol = rtol
FLOAT_TOLERANCE = 1e-4  # fp32 and wider (TF32 off in the reference)
HALF_NAMES = ("float16", "bfloat16", "half")


def output_tolerance(dtype) -> float:
    """atol = rtol for an output of this dtype (a torch.dtype or its name)."""
    name = str(dtype).removeprefix("torch.")
    return HALF_TOLERANCE if name in HALF_NAMES else FLOAT_TOLERANCE
