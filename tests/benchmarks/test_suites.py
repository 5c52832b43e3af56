"""`python -m benchmarks`: --list names every suite, an unknown suite is one line and exit 2, the GPU key falls back
to `cpu` without nvidia-smi, and a CPU suite (footprints) runs and writes summary.md with its command (seconds)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import runner
from benchmarks.catalog import SUITES

ROOT = Path(__file__).resolve().parent
while not (ROOT / "benchmarks" / "__main__.py").exists():  # this file moves into tests/ (or a folder of it)
    ROOT = ROOT.parent

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
'''


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def test_list_names_every_suite_with_its_gpu_need():
    done = _cli("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(SUITES)
    assert 5 <= len(SUITES) <= 8
    for line in lines:
        assert "gpu: " in line
    assert "gpu: no" in next(line for line in lines if line.startswith("footprints"))


def test_unknown_suite_is_one_line_and_exit_2():
    done = _cli("no_such_suite")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert "no_such_suite" in done.stderr and "--list" in done.stderr


def test_unknown_step_is_one_line_and_exit_2(tmp_path):
    done = _cli("footprints", "--out", str(tmp_path), "--steps", "nope")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_gpu_key_from_name_and_cpu_without_nvidia_smi(monkeypatch):
    assert runner.gpu_key("NVIDIA H100 80GB HBM3") == "h100"
    assert runner.gpu_key("NVIDIA H200") == "h200"
    monkeypatch.setenv("PATH", "")  # no nvidia-smi
    assert runner.detect_gpu() == "cpu"


def test_gpu_suite_without_gpu_refuses(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))  # python, no nvidia-smi
    done = _cli("llama", "--out", str(tmp_path), env=env)
    assert done.returncode == 2 and "need a GPU" in done.stderr
    assert not (tmp_path / "summary.md").exists()


def test_hand_written_summary_is_kept(tmp_path):
    (tmp_path / "summary.md").write_text("# a committed result\n")
    done = _cli("footprints", "--out", str(tmp_path), "--kernelbench", str(tmp_path / "kb"))
    assert done.returncode == 2 and "--force" in done.stderr
    assert (tmp_path / "summary.md").read_text() == "# a committed result\n"


def test_footprints_runs_and_writes_summary_with_the_command(tmp_path):
    pytest.importorskip("torch")
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "19_ReLU.py").write_text(TASK)
    out = tmp_path / "out"
    args = ["footprints", "--out", str(out), "--kernelbench", str(tmp_path / "kb"), "--levels", "1"]
    done = _cli(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (out / "summary.md").read_text()
    assert "python -m benchmarks " + " ".join(args) in summary
    for key in ("python", "torch", "gpu_key"):
        assert f"| {key} |" in summary
    assert "| footprints | 0 |" in summary
    assert "19_ReLU" in (out / "kb_footprints.txt").read_text()
    assert (out / "kb_footprints.json").exists()
