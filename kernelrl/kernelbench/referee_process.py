"""KernelBench's two referee processes (harness/referee_side.py): the task's reference model alone, and the
candidate's `ModelNew` alone (its extensions from the run's folder, a build the build step saw fail replayed at once),
both built under the same seed with the reference's weights given to the candidate where names and shapes agree, as
the worker builds them; every call made right after the same torch.manual_seed (a task that draws random numbers
repeats itself so, as the worker judges it).

Outputs are compared by the pair's tolerance profile under the rule the worker uses (kernelbench/trivial.py): the
reference's process first asks which trivial outputs (zeros, a constant, another input's answer) that tolerance would
pass; where one would, the candidate's must also meet the scale-aware error, and where even that cannot tell them
apart the task's verdict goes into the ruling (a forged report cannot drop it)."""

from __future__ import annotations

import copy
import random

import numpy
import torch
from torch.utils import cpp_extension

from kernelrl.harness.compare import closeness, nonfinite_mismatches
from kernelrl.harness.referee_side import RefereeSide
from kernelrl.harness.referee_side import serve as serve_side
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.kernelbench.build import use_extension_dir
from kernelrl.kernelbench.failed_builds import replaying
from kernelrl.kernelbench.inputs import _flatten
from kernelrl.kernelbench.tasks import load_module
from kernelrl.kernelbench.trivial import (Rule, needs_exact_reference, probe, rms, scale_error, task_verdict,
                                          with_noise)

INIT_SEED = 42  # the seed both sides are built under (the same weights), as the worker builds both
CALL_SEED = 7  # torch.manual_seed before every call, on both sides
INTEGER_DIGEST_SLACK = 1e-9  # an integer output's digest tolerance (a float tolerance let wrong indices through)
PROBE_SEEDS = (11, 12)  # the reference's outputs on two input sets: what a trivial output would pass


def serve(conn, role: str, payload: dict) -> None:
    serve_side(conn, role, payload, Side, on_confined=_candidate_builds)


def _candidate_builds(payload: dict) -> None:
    """The candidate's extensions from the run's folder; a build the build step saw fail fails here at once, as in the
    worker (not compiled again for minutes)."""
    if payload.get("extensions_dir"):
        use_extension_dir(payload["extensions_dir"], payload["candidate_path"])
    cpp_extension._run_ninja_build = replaying(cpp_extension._run_ninja_build, payload.get("failed_builds") or [],
                                               on_note=lambda note: None)


class Side(RefereeSide):
    def __init__(self, role: str, payload: dict):
        super().__init__(role, torch.device(payload["device"]))
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.profile = payload.get("tolerance_profile", "strict")
        self.task = load_module(payload["task_path"])
        init = list(self.task.get_init_inputs())
        reference = self._build(self.task.Model, init)
        if role == "candidate":
            model = self._build(load_module(payload["candidate_path"]).ModelNew, init)
            own = model.state_dict()  # the reference's weights where names and shapes agree, as the worker gives
            model.load_state_dict({k: v for k, v in reference.state_dict().items()
                                   if k in own and own[k].shape == v.shape}, strict=False)
            del reference
            self.model = model.to(self.device)
            self.probes: list = []
            self.task_notes: list[str] = []
        else:
            self.model = reference.to(self.device)
            self.probes, self.task_notes = self._probe()

    def _build(self, cls, init):
        torch.manual_seed(INIT_SEED)
        with torch.device(self.device):
            return cls(*init)

    def inputs(self, seed: int) -> list:
        """The task's inputs for `seed`, on both sides the same: torch's, NumPy's and Python's generators seeded alike
        (the worker hands both models one draw; here each process draws its own)."""
        torch.manual_seed(seed)
        numpy.random.seed(seed % 2**32)
        random.seed(seed)
        with torch.device(self.device):
            return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in self.task.get_inputs()]

    def call(self, inputs: list, model=None) -> list:
        torch.manual_seed(CALL_SEED)
        with torch.no_grad():
            outs = _flatten((model or self.model)(*inputs))
        if not all(isinstance(o, torch.Tensor) for o in outs):
            raise TypeError("an output is not a tensor")
        return outs

    def _probe(self) -> tuple[list, list[str]]:
        """The reference's trivial-output probes (trivial.probe, with its own float64 error where an output would be
        judged scale-aware, as the worker's reference_probe does), and notes; none where they do not fit. Its outputs
        are freed before the cache is given back: the candidate's process shares the device."""
        try:
            return self._probes(), []
        except Exception as exc:  # no memory for two outputs, or no float64 kernel: judged by atol = rtol alone
            return [], [f"no trivial-output probe in the referee ({type(exc).__name__}: {str(exc)[:160]}): outputs "
                        f"compared by atol = rtol alone"]
        finally:
            self.release()

    def _probes(self) -> list:
        refs, other = (self.call(self.inputs(seed)) for seed in PROBE_SEEDS)
        probes = probe(refs, other)
        del other
        if needs_exact_reference(probes):
            exact = copy.deepcopy(self.model).double()
            inputs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                      for x in self.inputs(PROBE_SEEDS[0])]
            probes = with_noise(probes, refs, self.call(inputs, exact))
        return probes

    def facts(self) -> dict:
        if self.role != "reference":
            return {}
        return {"task_verdicts": task_verdict(self.probes) if self.probes else {}, "notes": self.task_notes}

    def tolerance(self, out: torch.Tensor) -> float:
        if not (out.is_floating_point() or out.is_complex()):  # integers are judged equal: float64 summation slack
            return INTEGER_DIGEST_SLACK
        return output_tolerance(out.dtype, self.profile)

    def _rule(self, i: int, tol: float) -> Rule:
        return self.probes[i].rule(tol) if i < len(self.probes) and self.probes[i] is not None else Rule.ALLCLOSE

    def spread_floor(self, i: int, out: torch.Tensor) -> float:
        """An output judged scale-aware errs relative to |r| + rms(r): its spread's floor is its rms, not atol's 1."""
        if self._rule(i, output_tolerance(out.dtype, self.profile)) is Rule.SCALE:
            return rms(out)
        return 1.0

    def compare_one(self, i: int, theirs: torch.Tensor, mine: torch.Tensor) -> str | None:
        tol = output_tolerance(mine.dtype, self.profile)
        wrong, _ = nonfinite_mismatches(theirs, mine)
        max_abs, _, tightest = closeness(theirs, mine, tol, finite_only=True)
        if wrong or not tightest <= tol:
            return (f"output {i}: max abs error {max_abs:.3g} beyond atol = rtol = {tol:g}"
                    + (f", {wrong} non-finite elements unmatched" if wrong else ""))
        if self._rule(i, tol) is Rule.SCALE and not (err := scale_error(theirs, mine)) <= tol:  # NaN fails too
            return (f"output {i}: scale-aware error {err:.3g} beyond {tol:g} (a trivial output meets atol = rtol = "
                    f"{tol:g} on this task; the worker's rule asks both)")
        return None
