"""Packages a KernelBench candidate needs and this environment lacks: found from its source before any worker
starts, the pair's verdict `environment` without running it, and the run names each missing package once."""

import ast

from kernelrl.cli import main
from kernelrl.kernelbench.requirements import declared, missing_packages, unconditional_imports
from kernelrl.kernelbench.worker import KBSettings, run_pairs
from tests.kb_helpers import task

TASK = task(rows=8, cols=4)

NEEDS_MISSING = '''# requires: torch, surely-not-a-distribution>=1.0
import torch
import kernelrl_absent_dsl
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
'''

OPTIONAL = '''import torch
import torch.nn as nn
try:
    import kernelrl_absent_dsl
except ImportError:
    kernelrl_absent_dsl = None

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
'''


def test_declared_requirements_are_distribution_names_without_versions():
    assert declared("# requires: nvidia-cutlass-dsl>=4.0, numpy\n#requires: numpy\nx = 1\n") == \
        ["nvidia-cutlass-dsl", "numpy"]


def test_only_module_level_imports_outside_try_count():
    assert unconditional_imports(ast.parse(OPTIONAL)) == ["torch"]
    assert unconditional_imports(ast.parse(NEEDS_MISSING)) == ["torch", "kernelrl_absent_dsl"]


def test_missing_packages_names_the_declared_and_the_imported(tmp_path):
    (tmp_path / "c.py").write_text(NEEDS_MISSING)
    (tmp_path / "o.py").write_text(OPTIONAL)
    assert missing_packages(tmp_path / "c.py") == ["surely-not-a-distribution", "kernelrl_absent_dsl"]
    assert missing_packages(tmp_path / "o.py") == []


def test_a_candidate_needing_a_missing_package_gets_environment_without_a_worker(tmp_path):
    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "cand.py").write_text(NEEDS_MISSING)

    def no_worker(conn, payload):
        raise AssertionError("a worker was started")

    out = run_pairs([(str(tmp_path / "task.py"), str(tmp_path / "cand.py"))], KBSettings(device="cpu"),
                    worker_target=no_worker)
    (rec,) = out[0]
    assert rec["verdict"] == "environment" and "kernelrl_absent_dsl" in rec["detail"]


def test_the_run_names_each_missing_package_once(tmp_path, capsys):
    (tmp_path / "t").mkdir()
    (tmp_path / "c").mkdir()
    for name in ("a", "b"):
        (tmp_path / "t" / f"{name}.py").write_text(TASK)
        (tmp_path / "c" / f"{name}.py").write_text(NEEDS_MISSING)
    code = main(["kb", "eval", "--tasks", str(tmp_path / "t"), "--candidates", str(tmp_path / "c"),
                 "--device", "cpu", "--db", str(tmp_path / "r.db")])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count("this environment lacks") == 1 and "kernelrl_absent_dsl (needed by 2 candidates)" in out
