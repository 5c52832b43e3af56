"""KernelBench's two referee processes (harness/referee_side.py): the task's reference model alone, and the
candidate's `ModelNew` alone (its extensions from the run's folder, a build the build step saw fail replayed at once),
both built under the same seed with the reference's weights given to the candidate where names and shapes agree, as
the worker builds them; outputs compared by the pair's tolerance profile."""

from __future__ import annotations

import torch
from torch.utils import cpp_extension

from kernelrl.harness.compare import closeness, nonfinite_mismatches
from kernelrl.harness.referee_side import RefereeSide
from kernelrl.harness.referee_side import serve as serve_side
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.kernelbench.build import use_extension_dir
from kernelrl.kernelbench.failed_builds import replaying
from kernelrl.kernelbench.tasks import load_module

INIT_SEED = 42  # the seed both sides are built under (the same weights), as the worker builds both


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
        else:
            self.model = reference.to(self.device)

    def _build(self, cls, init):
        torch.manual_seed(INIT_SEED)
        with torch.device(self.device):
            return cls(*init)

    def inputs(self, seed: int) -> list:
        torch.manual_seed(seed)
        with torch.device(self.device):
            return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in self.task.get_inputs()]

    def call(self, inputs: list) -> list:
        with torch.no_grad():
            out = self.model(*inputs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if not all(isinstance(o, torch.Tensor) for o in outs):
            raise TypeError("an output is not a tensor")
        return outs

    def tolerance(self, out: torch.Tensor) -> float:
        return output_tolerance(out.dtype, self.profile)

    def compare_one(self, i: int, theirs: torch.Tensor, mine: torch.Tensor) -> str | None:
        tol = output_tolerance(mine.dtype, self.profile)
        wrong, _ = nonfinite_mismatches(theirs, mine)
        max_abs, _, tightest = closeness(theirs, mine, tol, finite_only=True)
        if wrong or not tightest <= tol:
            return (f"output {i}: max abs error {max_abs:.3g} beyond atol = rtol = {tol:g}"
                    + (f", {wrong} non-finite elements unmatched" if wrong else ""))
        return None
