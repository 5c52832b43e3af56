"""`kernelrl train eval --tasks`: free-form policies on held-out KernelBench tasks, judged by the KernelBench
evaluator on the CPU (a small task, the eager baseline), beside the task's own Model as a candidate."""

import csv

import pytest

from kernelrl.cli import build_parser, main
from kernelrl.train import heldout
from kernelrl.train.specs import vocabulary
from kernelrl.train.tiny import write_random_model

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''
DOUBLED = ("```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
           "    def forward(self, x):\n        return x + x\n```\n")


class Writer:
    """Stands in for a saved model: writes a correct ModelNew and a reply without code, and keeps its prompts."""
    prompts: list = []

    def __init__(self, folder, temperature, max_new_tokens):
        pass

    def sample(self, prompts, n):
        Writer.prompts += prompts
        return [[DOUBLED if i % 2 == 0 else "no code here" for i in range(n)] for _ in prompts]

    def close(self):
        pass


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_random_model(tmp_path_factory.mktemp("policy"), snippets=vocabulary(), hidden=32, layers=1,
                              heads=2, max_positions=512)


@pytest.fixture(scope="module")
def task_run(tmp_path_factory, model_dir):
    tasks = tmp_path_factory.mktemp("tasks")
    (tasks / "1_Double.py").write_text(TASK)
    out = tmp_path_factory.mktemp("out")
    patch = pytest.MonkeyPatch()
    patch.setattr(heldout, "Policy", Writer)
    try:
        args = build_parser().parse_args(["train", "eval", "--tasks", str(tasks), "--device", "cpu", "--rounds", "1",
                                          "--policy", f"w={model_dir}", "--k", "2", "--reference", "--out", str(out)])
        summary = heldout.run_heldout(args, say=lambda _: None)
    finally:
        patch.undo()
    return out, summary


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_policy_is_prompted_with_the_task_itself(task_run):
    assert Writer.prompts and all("class Model" in p and "ModelNew" in p for p in Writer.prompts)


def test_a_correct_model_new_verifies_and_a_reply_without_code_is_malformed(task_run):
    rows = {r["sample"]: r for r in read(task_run[0] / "heldout.csv") if r["method"] == "w"}
    assert rows["0"]["verified"] == "1" and float(rows["0"]["speedup_vs_baseline"]) > 0
    assert rows["1"]["verified"] == "0" and rows["1"]["category"] == "malformed"


def test_the_reference_runs_as_a_candidate(task_run):
    [row] = [r for r in read(task_run[0] / "heldout.csv") if r["method"] == "reference"]
    assert row["verified"] == "1" and row["task"] == "1_Double"


def test_best_csv_names_the_task_and_the_objective(task_run):
    assert list(read(task_run[0] / "best.csv")[0]) == ["method", "task", "speedup_vs_eager", "verified"]


def test_each_code_completion_is_kept_beside_its_digest(task_run):
    out = task_run[0]
    [row] = [r for r in read(out / "heldout.csv") if r["method"] == "w" and r["sample"] == "0"]
    kept = (out / "completions" / "w" / "1_Double" / "0.txt").read_text()
    assert kept == DOUBLED and row["spec"] == heldout.shown_spec(kept) and row["spec"].startswith("code ")


@pytest.mark.parametrize("extra, words", [(["--random", "2"], "--random and --cost-model"),
                                          (["--cost-model"], "--random and --cost-model"),
                                          (["--shapes", "64x64x64"], "not both")])
def test_shape_methods_with_tasks_are_one_clear_line(tmp_path, extra, words, capsys):
    (tmp_path / "1_Double.py").write_text(TASK)
    rc = main(["train", "eval", "--tasks", str(tmp_path), "--device", "cpu", "--reference", *extra,
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and words in err


def test_reference_without_tasks_is_one_clear_line(tmp_path, capsys):
    rc = main(["train", "eval", "--shapes", "64x64x64", "--runner", "dummy", "--reference", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--reference needs --tasks" in err


def test_a_missing_task_folder_is_one_clear_line(tmp_path, capsys):
    rc = main(["train", "eval", "--tasks", str(tmp_path / "nope"), "--reference", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--tasks" in err and "nope" in err
