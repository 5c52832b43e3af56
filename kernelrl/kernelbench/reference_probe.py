"""What the reference itself says about a KernelBench task before any candidate code runs (the worker's
`ReferenceProbeMixin`): whether it is random (a second call on the same inputs differs: then judged under one seed per
call, or `random reference`), and which trivial outputs (zeros, a constant, another input's answer) each tolerance
profile could not tell from its answer (kernelbench/trivial.py), with the task's own verdict where even the
scale-aware error cannot. It provides `_seed_call` for the judged calls of a random task; KBWorker provides `_inputs`,
`_call`, `_manual_seed`, `_judge_values`, `_mismatch`, `begin`, `sync` and `_free`
(kernelrl/kernelbench/worker_process.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from kernelrl.harness.tolerance import PROFILES, output_tolerance
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.inputs import _flatten
from kernelrl.kernelbench.judge import new_errors
from kernelrl.kernelbench.trivial import (ALTERNATIVES, alternative, needs_exact_reference, probe, task_verdict,
                                          with_noise)
from kernelrl.kernelbench.watch import _short


class ReferenceProbeMixin:
    """KBWorker's look at the reference before any candidate code (see the module)."""

    if TYPE_CHECKING:  # KBWorker's (for the type checker only: the guards watch the class's names)
        base_seed: int
        seeded: bool
        call_seed: int
        task_notes: list[str]
        task_verdicts: dict
        trivial_probes: list
        trivial_audit: dict
        _inputs: Callable[..., list]
        _call: Callable[..., object]
        _manual_seed: Callable[[int], object]
        _judge_values: Callable[..., None]
        _mismatch: Callable[..., object]
        _free: Callable[[], None]
        begin: Callable[..., None]
        sync: Callable[[], None]

    def _probe_trivial(self, tid, tmod, ref) -> Rejected | None:
        """Before any candidate code runs: the reference's outputs on the task's inputs and on other inputs (another
        seed, the task's distribution), and from them each output's trivial alternatives (kernelbench/trivial.py):
        the rule each output is judged by under each profile, and the task's own verdict where even the
        scale-aware error cannot tell right from trivial. The pair's verdict if the reference fails here."""
        self.begin(tid, "reference", "trivial outputs")
        outs = []
        try:
            for seed in (self.base_seed, self.base_seed + 1):
                inputs = self._inputs(tmod, seed, "task")
                if self.seeded:  # a random task: only the inputs differ
                    self._manual_seed(self.base_seed)
                outs.append(_flatten(self._call(ref, inputs)))
                del inputs
            self.sync()
            self.trivial_probes = probe(*outs)
            if needs_exact_reference(self.trivial_probes) and not self.seeded:  # (a random task's float64 run
                # draws other random numbers: its difference says nothing of rounding)
                self.trivial_probes = self._with_exact_reference(tmod, ref, outs[0])
            self.task_verdicts = task_verdict(self.trivial_probes)
            self.trivial_audit = self._judge_trivial(*outs)
        except torch.OutOfMemoryError as exc:
            del outs
            self._free()
            return Rejected(Verdict.TOO_LARGE, f"two reference outputs (the task's inputs and other inputs, to see "
                                               f"what a trivial output would pass) do not fit: {_short(exc)}")
        del outs
        self._free()
        return None

    def _with_exact_reference(self, tmod, ref, refs: list) -> list:
        """The probes with the reference's own error against the same model and inputs in float64 (trivial.py
        `with_noise`): where it exceeds a tolerance the output is rounding error around an exact value that does not
        depend on the input. A model that cannot run in float64 keeps the probes as they were, with a note."""
        try:
            exact = copy.deepcopy(ref).double()
            inputs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                      for x in self._inputs(tmod, self.base_seed, "task")]
            if self.seeded:
                self._manual_seed(self.base_seed)
            exact_out = _flatten(self._call(exact, inputs))
            self.sync()
        except Exception as exc:  # an op without a float64 kernel, or no memory for it
            self.task_notes.append(f"no float64 reference ({_short(exc)}): outputs that a trivial one passes are "
                                   f"judged scale-aware against the float32 reference alone")
            return self.trivial_probes
        return with_noise(self.trivial_probes, refs, exact_out)

    def _judge_trivial(self, refs: list, others: list) -> dict:
        """The tolerance audit of this task: {profile: {alternative: [within atol = rtol alone, correct by this
        judge]}}, each trivial output (zeros, a constant from other inputs' outputs, the output of other inputs)
        judged by `_judge_values`, the code every candidate's outputs go through, with the task's own verdict."""
        audit: dict[str, dict[str, list[bool]]] = {p: {} for p in PROFILES}
        for name in ALTERNATIVES:
            errs, within, equal = new_errors(), {p: True for p in PROFILES}, True
            for i, (r, other) in enumerate(zip(refs, others)):
                probe_i = self.trivial_probes[i] if i < len(self.trivial_probes) else None
                if not (isinstance(r, torch.Tensor) and r.numel()) or probe_i is None:
                    continue  # an output that is no tensor (on the other inputs): judged by equality, no alternative
                if probe_i.exact:  # integers, booleans: `_judge` asks equality, which an alternative meets only
                    same = probe_i.alternatives[name].tightest == 0  # where it is the reference (argmax's indices)
                    equal = equal and same
                    within = {p: w and same for p, w in within.items()}
                    continue
                alt = alternative(name, r, other)
                for p in PROFILES:
                    tol = output_tolerance(r.dtype, p)
                    within[p] = within[p] and self.trivial_probes[i].alternatives[name].tightest <= tol
                try:
                    self._judge_values(alt, r, other, errs, i)
                except Rejected:
                    pass  # errs["passes"] already says which profiles it failed
            for p in PROFILES:
                audit[p][name] = [within[p], equal and bool(errs["passes"][p]) and p not in self.task_verdicts]
        return audit

    def _random_reference(self, ref, inputs, first) -> Rejected | None:
        """Whether the reference is random (dropout in training mode, random numbers in forward): a second call on
        the same inputs differs from the first. Such a task is judged call by call under one seed (`seeded`: the
        candidate's checked call and its reference each right after the same torch.manual_seed), if that makes
        the reference repeat itself; if not, nothing can judge a candidate: `random reference`."""
        self.seeded = False
        if self._same_outputs(first, self._call(ref, inputs)):
            return None
        outs = []
        for _ in range(2):
            self._manual_seed(self.base_seed)
            outs.append(self._call(ref, inputs))
        if not self._same_outputs(*outs):
            return Rejected(Verdict.RANDOM_TASK, "the reference's outputs differ on the same inputs, even after the "
                                                 "same torch.manual_seed")
        self.seeded = True
        return None

    def _same_outputs(self, a, b) -> bool:
        """Outputs equal within the strict profile's tolerance (non-finite values the same)."""
        return all(self._mismatch(y, x, output_tolerance) is None for x, y in zip(_flatten(a), _flatten(b)))

    def _seed_call(self):
        """Before a judged candidate call of a random task: a fresh seed, which its reference repeats."""
        if self.seeded:
            self.call_seed = (self.call_seed + 1) & 0x7FFF_FFFF
            self._manual_seed(self.call_seed)
