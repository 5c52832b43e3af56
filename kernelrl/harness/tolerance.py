"""The tolerance rules of KernelBench-style outputs (atol = rtol, by the reference output's dtype), in two
profiles: the worker judges with the one a run names, records every output's tightest passing tolerance beside
it, and so reports both; the RL reward divides the recorded error by the recorded tolerance, so the two can never
disagree. (HGEMM's rule depends on the accumulator and K: `kernelrl.verify.checks.tolerance`.)

- `strict` (the default): fp32 and wider 1e-4 (TF32 off in the reference), fp16 and bf16 1e-2, as torchbench and
  KernelBench's current `get_tolerance_for_precision` judge;
- `kernelbench`: 1e-2 for every dtype, as KernelBench v0 and v0.1 judged, and with them CUDA-L1 and the published
  fast_p tables: a kernel that uses TF32 or another reduction order passes it and may fail `strict`."""

from __future__ import annotations

from kernelrl.errors import UserError

HALF_TOLERANCE = 1e-2  # fp16 and bf16 outputs: atol = rtol
FLOAT_TOLERANCE = 1e-4  # fp32 and wider (TF32 off in the reference)
KERNELBENCH_TOLERANCE = 1e-2  # every dtype, KernelBench v0/v0.1
HALF_NAMES = ("float16", "bfloat16", "half")
PROFILES = ("strict", "kernelbench")
STRICTEST = "strict"  # the profile whose tolerance is the tightest for every dtype


class UnknownProfile(UserError, ValueError):
    """A tolerance profile name that is not one of PROFILES."""


def output_tolerance(dtype, profile: str = "strict") -> float:
    """atol = rtol for an output of this dtype (a torch.dtype or its name) under a tolerance profile."""
    if profile == "kernelbench":
        return KERNELBENCH_TOLERANCE
    if profile != "strict":
        raise UnknownProfile(f"unknown tolerance profile {profile!r}; choose from {', '.join(PROFILES)}")
    name = str(dtype).removeprefix("torch.")
    return HALF_TOLERANCE if name in HALF_NAMES else FLOAT_TOLERANCE


def loosest_tolerance(dtype) -> float:
    """The largest tolerance any profile allows for this dtype: beyond it an output fails every profile."""
    return max(output_tolerance(dtype, p) for p in PROFILES)


def passes(profile: str, dtype, tightest: float) -> bool:
    """Whether outputs whose tightest passing tolerance is `tightest` pass `profile` (NaN passes nothing)."""
    return tightest <= output_tolerance(dtype, profile)


def input_independent(task_verdicts: dict | None) -> bool:
    """Whether a KernelBench record's `task_verdicts` (profile -> why a trivial output passes there,
    kernelbench/trivial.py) are the task's own verdict: even the strictest profile cannot tell right from trivial,
    so the reference ignores its input. Otherwise only a looser profile's tolerance is blind on the task."""
    return STRICTEST in (task_verdicts or {})
