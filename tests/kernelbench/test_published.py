"""Published kernel sets (`kb eval --published cuda-l1:FILE`): each kernel judged against the task text it was
written for, the claimed speedups carried into the CSV beside the measured ones, a task without a released kernel
reported as such, and a malformed set refused with one line (CPU worker)."""

import csv
import json

import pytest

from kernelrl.cli import main
from kernelrl.kernelbench.published import PublishedSetError, read_published

TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.{op}(x)

def get_inputs():
    return [torch.randn(32, 16)]

def get_init_inputs():
    return []
'''

KERNEL = TASK.replace("class Model(", "class ModelNew(").split("def get_inputs")[0]


def cuda_l1_line(level, task_id, op, kernel, eager_claim):
    return json.dumps({"level_id": level, "task_id": task_id, "ref_code": TASK.format(op=op), "custom_code": kernel,
                       "score_default": eager_claim, "score_torch_compile_default": None,
                       "score_torch_compile_reduce_overhead": None, "score_cuda_graph": None, "score_cudnn": None})


@pytest.fixture
def published(tmp_path):
    lines = [cuda_l1_line(1, 1, "tanh", KERNEL.format(op="tanh"), 2.5),
             cuda_l1_line(1, 2, "relu", KERNEL.format(op="sigmoid"), 3.0),  # wrong: another op
             cuda_l1_line(2, 1, "tanh", "", None)]  # no kernel released
    path = tmp_path / "h100.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_published_set_is_judged_against_its_own_tasks_with_the_claims_beside(published, tmp_path, capsys):
    out_csv = tmp_path / "out.csv"
    code = main(["kb", "eval", "--published", f"cuda-l1:{published}", "--published-dir", str(tmp_path / "pub"),
                 "--device", "cpu", "--rounds", "2", "--csv", str(out_csv), "--db", str(tmp_path / "r.db")])
    printed = capsys.readouterr().out
    assert code == 1 and "3 tasks, 2 kernels released" in printed
    assert "claimed against measured speedup over eager" in printed  # the one correct kernel's claim, 2.5
    rows = {(r["task"], r["verified"]): r for r in csv.DictReader(open(out_csv))}
    good = next(r for (task, ok), r in rows.items() if ok == "1")
    assert good["claimed_speedup"] == "2.5" and good["baseline"] == "eager" and float(good["speedup"]) > 0
    bad = [r for (task, ok), r in rows.items() if ok == "0"]
    assert any(r["verdict"] == "wrong values" and r["claimed_speedup"] == "3" for r in bad)
    assert any(r["verdict"] == "contract" and "no candidate" in r["reason"] for r in bad), bad


def test_a_set_of_an_unknown_format_is_one_clear_line(published):
    with pytest.raises(PublishedSetError, match="FORMAT one of cuda-l1"):
        read_published(f"kernelbook:{published}")


def test_an_entry_without_its_task_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"level_id": 1, "task_id": 3}) + "\n")
    with pytest.raises(PublishedSetError, match="entry 1 lacks ref_code"):
        read_published(f"cuda-l1:{path}")


def test_tasks_and_a_published_set_together_are_refused(published, capsys):
    code = main(["kb", "eval", "--published", f"cuda-l1:{published}", "--tasks", "x", "--device", "cpu"])
    assert code == 2 and "leave out --tasks and --candidates" in capsys.readouterr().err


def test_a_published_set_can_be_judged_level_by_level(published, tmp_path, capsys):
    code = main(["kb", "eval", "--published", f"cuda-l1:{published}", "--published-levels", "2",
                 "--published-dir", str(tmp_path / "pub"), "--device", "cpu", "--static-only"])
    out = capsys.readouterr().out
    assert code == 1 and "1 tasks, 0 kernels released" in out


def test_neither_tasks_nor_a_published_set_is_one_line(capsys):
    code = main(["kb", "eval", "--device", "cpu"])
    assert code == 2 and "needs --tasks and --candidates" in capsys.readouterr().err


def test_a_kernel_written_as_the_string_none_is_not_released(tmp_path):
    path = tmp_path / "h100.json"
    path.write_text(cuda_l1_line(1, 8, "tanh", "None", 7.2) + "\n" + cuda_l1_line(1, 9, "tanh", "None\n", None) + "\n")
    _, kernels = read_published(f"cuda-l1:{path}")
    assert [k.kernel_text for k in kernels] == [None, None]


def test_kb_export_writes_the_stored_pairs_as_eval_wrote_them(published, tmp_path, capsys):
    eval_csv, export_csv, db = tmp_path / "eval.csv", tmp_path / "export.csv", tmp_path / "r.db"
    main(["kb", "eval", "--published", f"cuda-l1:{published}", "--published-dir", str(tmp_path / "pub"),
          "--device", "cpu", "--rounds", "1", "--csv", str(eval_csv), "--db", str(db)])
    assert main(["kb", "export", "--db", str(db), "--csv", str(export_csv)]) == 0
    evaluated = [r for r in csv.DictReader(open(eval_csv)) if r["baseline"]]  # timed pairs: the ones stored
    exported = {(r["task"], r["baseline"]): r for r in csv.DictReader(open(export_csv))}
    for row in evaluated:
        stored = exported[(row["task"], row["baseline"])]
        for column in ("verified", "verdict", "speedup", "claimed_speedup", "correct_strict", "correct_kernelbench",
                       "rounds_run"):
            assert stored[column] == row[column], column
        assert "candidate load" in json.loads(stored["phase_s"])  # where the worker's time went


def test_kb_export_of_a_missing_database_is_one_line(tmp_path, capsys):
    assert main(["kb", "export", "--db", str(tmp_path / "none.db"), "--csv", str(tmp_path / "x.csv")]) != 0
    assert "no such database" in capsys.readouterr().err
