"""What device memory holds when a KernelBench task runs out of it, for its `task too large` line: the allocator's
own figures from PyTorch's message (live tensors against a fragmented cache), and the storages Python still reaches
(copies the harness holds, against memory nothing in Python reaches: C++ caches, graph pools)."""

from __future__ import annotations

import gc
import re
from collections import Counter
from typing import TYPE_CHECKING

import torch

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench import memory_plan
from kernelrl.kernelbench.watch import _short


def allocator_state(exc: BaseException) -> str:
    """What PyTorch's out-of-memory message says the allocator held (cut from `_short`'s first 200 characters):
    live tensors against blocks cached but unallocated, which tells a plan that counted too little from a
    fragmented cache."""
    found = re.search(r"([\d.]+ \w?iB) is allocated by PyTorch, and ([\d.]+ \w?iB) is reserved by PyTorch but "
                      r"unallocated", str(exc))
    return f"; {found[1]} allocated, {found[2]} cached but unallocated" if found else ""


def reachable_storages(device_type: str = "cuda", min_bytes: int = 256 << 20) -> dict[int, int]:
    """{bytes: how many} of the storages of at least `min_bytes` on `device_type` that live Python objects reach,
    each storage once however many tensors view it."""
    sizes: dict[int, int] = {}  # storage address -> bytes
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.Tensor) and obj.device.type == device_type:  # type(): no proxy's __class__
            storage = obj.untyped_storage()
            if storage.nbytes() >= min_bytes:
                sizes[storage.data_ptr()] = storage.nbytes()
    return dict(Counter(sizes.values()))


def reachable_tensors() -> str:
    """For `task too large`, beside the allocator's figures: the device storages of 256 MiB or more that Python
    still reaches, largest first. It tells copies the harness holds from memory nothing in Python reaches (C++
    caches, graph pools): 96_HuberLoss ran out with 78 GiB allocated where its plan counted 60."""
    counts = reachable_storages()
    if not counts:
        return "; no device tensor of 256 MiB or more reachable from Python"
    listed = ", ".join(f"{k} x {memory_plan.gib(n)} GiB" for n, k in sorted(counts.items(), reverse=True))
    return f"; reachable from Python: {listed} ({memory_plan.gib(sum(n * k for n, k in counts.items()))} GiB)"


class MemoryReportMixin:
    """KBWorker's memory lines (it provides `mem_plan`, `mem_base`, `cuda` and `current`)."""

    if TYPE_CHECKING:  # KBWorker's (for the type checker only: the guards watch the class's names)
        mem_plan: memory_plan.Plan | None
        mem_base: int
        cuda: bool
        current: tuple

    def _memory_report(self) -> dict:
        """The records' `memory`: the task's plan (its peak phase, the GiB it expected there with and without the
        margin, what was free) beside the pair's own peak allocation above the models (CUDA only)."""
        plan = self.mem_plan
        if not (self.cuda and plan is not None and plan.phases):
            return {}
        gib = memory_plan.GIB
        return {"plan_peak_gib": round(max(plan.phases.values()) / gib, 2), "plan_phase": plan.peak_phase,
                "plan_need_gib": round(plan.need / gib, 2), "free_gib": round(plan.free / gib, 2),
                "pair_peak_gib": round((torch.cuda.max_memory_allocated() - self.mem_base) / gib, 2)}

    def _too_large(self, exc: BaseException, who: str) -> Rejected:
        """`task too large` for an out-of-memory error of the reference's own call or the harness's copies (never
        the candidate's verdict), with what the task's memory plan expected."""
        plan = self.mem_plan
        expected = (f"; its memory plan expected about {memory_plan.gib(plan.need)} GiB at its peak of "
                    f"{memory_plan.gib(plan.free)} GiB free") if plan is not None and self.cuda else ""
        reachable = reachable_tensors() if self.cuda else ""
        return Rejected(Verdict.TOO_LARGE, f"{who} ran out of device memory at {self.current[2]} beside the "
                                           f"harness's copies ({_short(exc)}{allocator_state(exc)}{reachable})"
                                           f"{expected}")
