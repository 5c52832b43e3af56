"""The HGEMM workload's two referee processes (harness/referee_side.py): torch alone, and one candidate library
alone (loaded with ctypes after the process confined itself: its constructors run there, never beside the harness).

Both draw the same inputs for a seed (verify.checks.make_inputs, `normal`). The reference's side is timed as the
worker's `torch` baseline is (torch.matmul into a preallocated C; for nt problems the mm with W's transposed view,
fp16 accumulation where the problem asks for it) and judges values by the exact product (an fp32 sum, TF32 off)
rounded once to the output's dtype; a candidate's output is compared by the worker's rule (verify.checks.
compare_output) with one more rounding allowed for the reference's own. The candidate's side calls kernelrl_hgemm
on its own stream, with its workspace (set to 0xFF before each checked call, as the worker's is)."""

from __future__ import annotations

import contextlib

import torch

from kernelrl.harness.referee_side import RefereeSide
from kernelrl.harness.referee_side import serve as serve_side
from kernelrl.harness.verdicts import Verdict
from kernelrl.run.methods import Buffers, Candidate, MethodError
from kernelrl.verify.checks import BF16_EPS, FP16_EPS, TORCH_DTYPES, compare_output, make_inputs, reference, tolerance
from kernelrl.workloads.hgemm import GemmProblem


def serve(conn, role: str, payload: dict) -> None:
    serve_side(conn, role, payload, Side)


class _HostStream:
    """The stream argument of a library called on the CPU (the referee's own tests): a null handle."""

    cuda_stream = None


class Side(RefereeSide):
    def __init__(self, role: str, payload: dict):
        super().__init__(role, torch.device(payload["device"]))
        self.problem = GemmProblem(**payload["problem"])
        p = self.problem
        torch.backends.cuda.matmul.allow_tf32 = False
        if hasattr(torch.backends.cuda.matmul, "allow_fp16_accumulation"):  # as the worker sets it for torch
            torch.backends.cuda.matmul.allow_fp16_accumulation = p.acc == "fp16"
        self.dtype = TORCH_DTYPES[p.dtype]
        self.stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else _HostStream()
        self.method: Candidate | None = None
        self.ws: torch.Tensor | None = None
        self.needs_bt = p.layout == "nt"  # the reference reads W (N x K) as the worker's torch baseline does
        if role == "candidate":
            try:
                self.method = Candidate(payload["name"], payload["lib_path"])
                if not self.method.supports(p.m, p.n, p.k):
                    raise RuntimeError(f"kernelrl_hgemm_supports says no to {p.name}, which its worker measured")
                ws_bytes = self.method.workspace_bytes(p.m, p.n, p.k)
            except MethodError as exc:
                raise RuntimeError(exc.verdict.reason(exc.detail)) from None
            self.ws = torch.empty(ws_bytes, dtype=torch.uint8, device=self.device) if ws_bytes else None
            self.needs_bt = self.method.needs_bt

    def inputs(self, seed: int) -> list:
        """A, B, B^T (N x K) and C poisoned with NaN. Both sides make the same set, whichever copy of B they read:
        making B^T is not charged to one side only (the runner charges input making beyond the reference's)."""
        p = self.problem
        a, b = make_inputs(p.m, p.n, p.k, "normal", seed, device=self.device, dtype=p.dtype)
        c = torch.full((p.m, p.n), float("nan"), dtype=self.dtype, device=self.device)
        return [a, b, b.t().contiguous(), c]

    def call(self, inputs: list) -> list:
        """One call on this side's own stream, as the worker calls every method: the inputs were made and
        synchronized before (`prepare`, `answer`), and `go` ends with a device-wide synchronize."""
        a, kn, nk, c = inputs
        b = nk if self.needs_bt else kn
        if self.method is None:  # the worker's torch baseline
            with torch.cuda.stream(self.stream) if isinstance(self.stream, torch.cuda.Stream) \
                    else contextlib.nullcontext():
                if self.needs_bt:
                    torch.mm(a, b.t(), out=c)
                else:
                    torch.matmul(a, b, out=c)
            return [c]
        bufs = Buffers(a, kn, nk, c)  # the candidate reads the one its layout names (b_of)
        rc = self.method.bind(self.problem, bufs, self.ws, self.stream)()
        if rc:
            raise RuntimeError(f"kernelrl_hgemm returned {rc}")
        return [c]

    def answer(self, inputs: list) -> list:
        if self.method is not None:
            if self.ws is not None:  # a kernel that relies on a zeroed workspace must zero it itself
                self.ws.fill_(0xFF)
            self.sync()  # the inputs and the workspace were written on the default stream
            return self.call(inputs)
        a, kn, _, _ = inputs
        return [reference(a, kn).to(self.dtype)]

    def compare_one(self, i: int, theirs: torch.Tensor, mine: torch.Tensor) -> str | None:
        p = self.problem
        outcome = compare_output(theirs.to(self.device), mine.to(self.device).float(), p.acc, p.k)
        if outcome.ok or (outcome.verdict is Verdict.WRONG_VALUES and outcome.max_rel_err <= self._allowed()):
            return None
        return f"output {i}: {outcome.reason}"

    def _allowed(self) -> float:
        """The worker's tolerance and one more rounding: the reference here is the exact product rounded once."""
        p = self.problem
        return tolerance(p.acc, p.k, p.dtype) + (BF16_EPS if p.dtype == "bf16" else FP16_EPS)

    def tolerance(self, out: torch.Tensor) -> float:
        return self._allowed()

    def spread_floor(self, i: int, out: torch.Tensor) -> float:
        """The output's root mean square: compare_output's errors are relative to |r| + rms."""
        return float(torch.linalg.vector_norm(out, dtype=torch.float32)) / max(out.numel(), 1) ** 0.5
