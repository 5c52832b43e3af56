"""Confined workers start CUDA and measure (issue 43: with Landlock on, CUDA failed to start in every worker, error
304, and nothing measured). Runs only where the kernel has Landlock: the H100 machine the device tool lends has it,
the H200 one may run under gVisor without it; each test's output names the sandbox line it ran under."""

from pathlib import Path

import pytest

from kernelrl.examples import TASKS_DIR
from kernelrl.harness.sandbox import landlock_abi
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.gpu.test_verification import CORPUS, evaluate, verdict

ABI, WHY = landlock_abi()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not ABI, reason=f"needs Linux Landlock: {WHY}")]


def test_a_confined_hgemm_worker_starts_cuda_and_measures(tmp_path):
    outcome = evaluate(tmp_path, [CORPUS / "honest_wmma.cu"])
    print("sandbox:", outcome.env.get("sandbox"))
    assert str(outcome.env.get("sandbox", "")).startswith("Landlock")
    for method in ("honest_wmma", "cublas_nn"):
        row = verdict(outcome, method)
        assert row["verified"] and row["time_us_median"] > 0, row["reason"]


def test_a_confined_kernelbench_worker_starts_cuda_and_measures(tmp_path):
    cand = tmp_path / "7_Softmax.py"
    cand.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n")
    env: dict = {}
    out = run_pairs([(str(TASKS_DIR / "7_Softmax.py"), str(cand))],
                    KBSettings(device="cuda", baselines=("eager",), rounds=2, hang_timeout_s=120.0), on_env=env.update)
    print("sandbox:", env.get("sandbox"))
    assert str(env.get("sandbox", "")).startswith("Landlock")
    ok, reason = pair_verdict(out[0])
    assert ok, reason
    assert out[0][0]["candidate_us"] > 0


def test_a_confined_worker_cannot_write_the_repository(tmp_path):
    """The grant that lets CUDA start (the worker's own threads' /proc entries) leaves the rest closed: a candidate
    that writes beside the task file at load gets `file write`, and the file is not there."""
    target = Path(TASKS_DIR).parent / "kr_sandbox_probe.txt"
    cand = tmp_path / "7_Softmax.py"
    cand.write_text("import torch\nimport torch.nn as nn\n"
                    f"open({str(target)!r}, 'w').write('x')\n\n\nclass ModelNew(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.softmax(x, dim=-1)\n")
    out = run_pairs([(str(TASKS_DIR / "7_Softmax.py"), str(cand))],
                    KBSettings(device="cuda", baselines=("eager",), rounds=2, hang_timeout_s=120.0))
    ok, reason = pair_verdict(out[0])
    assert not ok and reason.startswith(("file write", "exception")), reason
    assert not target.exists()
