"""Which kernels a call launches, counted by name (torch.profiler: the device's kernels on CUDA, aten operators on
the CPU), and whether a candidate's call launched every one the reference's does.

The catalogues' "benign" hacks (Makora's baseline, no-op, unused-output and forgotten kernels, a ghost
optimisation branch; KernelArena's library call) compute the output with PyTorch's own kernels, the reference's,
whatever else they launch beside them: verified, and timed at about 1x, they still take a correct reward. A
candidate whose call launched each of the reference's kernels at least as often as the reference does is
`reference kernels`, where the run asks for its own kernels (KBSettings.own_kernels). A candidate that calls
PyTorch for part of the work (cuBLAS for a GEMM, a fused kernel of its own for the rest) launches a different set and
is judged as before. What it leaves open: a candidate that behaves differently under the profiler (it would have to
compute a correct output with other kernels in that call), and a reference of one kernel that the candidate
reaches through another PyTorch op launching the same kernel."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch.profiler import ProfilerActivity, profile

from kernelrl.harness.verdicts import Rejected, Verdict

NOT_KERNELS = ("Memcpy", "Memset")  # copies and fills the runtime names like kernels: not the computation


def launched(call: Callable[[], object], cuda: bool) -> Counter:
    """The kernels `call` launched (CUDA; the caller synchronizes inside `call`), or its aten operators (CPU), by
    name and count."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        call()
    names: Counter = Counter()
    for event in prof.events():
        if cuda:
            if event.device_type == torch.autograd.DeviceType.CUDA and not event.name.startswith(NOT_KERNELS):
                names[event.name] += 1
        elif event.name.startswith("aten::"):
            names[event.name] += 1
    return names


def covers(candidate: Counter, reference: Counter) -> bool:
    """Whether the candidate launched each of the reference's kernels at least as often as the reference did."""
    return bool(reference) and all(candidate[name] >= n for name, n in reference.items())


def describe(reference: Counter, limit: int = 3) -> str:
    """The reference's kernels, the most frequent first, for the verdict's line."""
    top = ", ".join(f"{name} x{n}" for name, n in reference.most_common(limit))
    more = len(reference) - limit
    return top + (f" and {more} more" if more > 0 else "")


class CensusMixin:
    """KBWorker's census check (it provides `_inputs`, `_clone`, `_cand_call`, `_call`, `begin`, `sync`, `cuda`:
    kernelrl/kernelbench/worker_process.py)."""

    if TYPE_CHECKING:  # KBWorker's (for the type checker only: the guards watch the class's names)
        cuda: bool
        profiled: bool
        base_seed: int
        _inputs: Callable[..., list]
        _clone: Callable[[list], list]
        _cand_call: Callable[..., object]
        _call: Callable[..., object]
        begin: Callable[..., None]
        sync: Callable[[], None]

    def _census(self, tid, tmod, ref, cand) -> Rejected | None:
        """`reference kernels` where the candidate's call on the task's inputs launched every kernel the reference's
        launches on a clone of them (kernelbench/census.py); the last check of a pair that passed every other."""
        inputs = self._inputs(tmod, self.base_seed, "task", host=False)
        cand_in, ref_in = self._clone(inputs), inputs  # the candidate's copy made outside the profiled call
        self.sync()
        self.begin(tid, "candidate", "census")

        def candidate_call():
            self._cand_call(cand, cand_in, "census")
            self.sync()
        if self.cuda:  # CUPTI, set up and torn down by the profiler, breaks CUDA graphs replayed later in this
            # process with an illegal address (pytorch#75504, #112507): no later pair may run here (worker_process
            # `_after_pair` recycles the worker)
            self.profiled = True
        try:
            own = launched(candidate_call, self.cuda)
        except Rejected as exc:  # the candidate raised in this call: its verdict, as in any other
            return exc
        self.begin(tid, "reference", "census")

        def reference_call():
            self._call(ref, ref_in)
            self.sync()
        theirs = launched(reference_call, self.cuda)
        if covers(own, theirs):
            return Rejected(Verdict.REFERENCE_KERNELS, f"its call launched each of the reference's "
                            f"{'kernels' if self.cuda else 'operators'} ({describe(theirs)}): PyTorch "
                            f"computed the output, whatever else ran beside it")
        return None
