"""`kernelrl doctor` (kernelrl/cli/doctor.py): what the machine offers, what each absence disables, and exit code 0
only where tune and bench can run. CPU-only: absences and a GPU are faked through the module's seams."""

from __future__ import annotations

import json
import subprocess

import pytest

from kernelrl.cli import doctor, main
from kernelrl.harness import sandbox

GIB = 1 << 30
H200 = doctor.GpuInfo(True, "NVIDIA H200", (9, 0), total_bytes=140 * GIB, free_bytes=139 * GIB, count=1)


def rows_of(capsys) -> dict:
    return {r["what"]: r for r in json.loads(capsys.readouterr().out)["rows"]}


def fake_run(cmd, timeout, env=None):
    """A healthy GPU machine's commands: nvidia-smi, nvcc --version, nvcc compiles, the confined CUDA probe."""
    if cmd[0].endswith("nvidia-smi"):
        out = "570.86.15\n"
    elif cmd[1:] == ["--version"]:
        out = "Cuda compilation tools, release 12.8, V12.8.93\n"
    else:
        out = f"confinement: Landlock ABI 7\n{doctor.PROBE_OK}\n"
    return subprocess.CompletedProcess(cmd, 0, out, "")


@pytest.fixture
def healthy(monkeypatch):
    """Everything present: a GPU, a CUDA build of torch, nvidia-smi, nvcc, CUTLASS, ninja, Triton, the extras,
    Landlock."""
    import torch
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(doctor, "gpu_info", lambda: H200)
    monkeypatch.setattr(doctor, "_run", fake_run)
    monkeypatch.setattr(doctor, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(doctor, "cutlass_include_dirs", lambda: ["/site/cutlass_library/source/include"])
    monkeypatch.setattr(doctor, "_module", lambda name, import_it=False: (True, "9.9"))
    monkeypatch.setattr(doctor.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: (7, ""))
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    monkeypatch.setattr("kernelrl.kernelbench.memory_plan.host_available", lambda: 128 * GIB)


def test_without_a_gpu_it_exits_1_and_says_what_to_do(monkeypatch, capsys):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on this machine (torch's CPU build)
    assert main(["doctor", "--json"]) == 1
    gpu = rows_of(capsys)["GPU"]
    assert gpu["status"] == "missing" and gpu["required"]
    assert "GPU machine" in gpu["action"]


def test_with_a_gpu_and_everything_present_it_exits_0(healthy, capsys):
    assert main(["doctor", "--json"]) == 0
    rows = rows_of(capsys)
    assert {what: r["status"] for what, r in rows.items() if r["status"] != "ok"} == {}
    assert "NVIDIA H200" in rows["GPU"]["detail"] and "570.86.15" in rows["NVIDIA driver"]["detail"]


def test_a_missing_nvcc_is_needed_and_says_what_it_disables(healthy, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "find_nvcc", lambda: None)
    assert main(["doctor", "--json"]) == 1
    nvcc = rows_of(capsys)["nvcc"]
    assert nvcc["status"] == "missing" and nvcc["blocks"]
    assert "no kernel builds" in nvcc["action"] and "KERNELRL_NVCC" in nvcc["action"]


def test_a_missing_ninja_is_a_missing_row_that_does_not_block(healthy, monkeypatch, capsys):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None if name == "ninja" else f"/usr/bin/{name}")
    assert main(["doctor", "--json"]) == 0  # tune and bench still run
    ninja = rows_of(capsys)["ninja"]
    assert ninja["status"] == "missing" and not ninja["blocks"]
    assert "load_inline" in ninja["action"] and "fast path" in ninja["action"]


@pytest.mark.skipif(not sandbox.landlock_abi()[0], reason=f"needs Linux Landlock: {sandbox.landlock_abi()[1]}")
def test_the_sandbox_row_names_landlock_s_abi_and_no_probe_without_a_gpu(monkeypatch):
    monkeypatch.delenv(sandbox.SANDBOX_ENV, raising=False)
    monkeypatch.setattr(doctor, "_run", lambda *a, **k: pytest.fail("no CUDA probe without a GPU"))
    row = doctor.check_sandbox(doctor.GpuInfo(False, error="no GPU"))
    assert row.status == "ok"
    assert f"Landlock ABI {sandbox.landlock_abi()[0]}" in row.detail and "CUDA probe not run" in row.detail


def test_json_output_parses(capsys):
    main(["doctor", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out["ok"], bool)
    assert {"what", "status", "detail", "action", "required", "blocks"} <= set(out["rows"][0])
    assert {r["status"] for r in out["rows"]} <= {"ok", "missing", "warning"}


def test_the_table_ends_with_the_verdict(healthy, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "find_nvcc", lambda: None)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "kernelrl doctor" in out and "ninja" in out
    assert out.strip().splitlines()[-1].startswith("tune and bench cannot run here: nvcc")
