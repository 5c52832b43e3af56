"""KernelBench-format loading and matching: each bad input becomes its own one-line reason; the run goes on."""

import textwrap

import pytest

from kernelrl.kernelbench.evaluate import static_eval
from kernelrl.kernelbench.tasks import inspect_candidate, inspect_task, load_module

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return [1]
'''
CAND = TASK.replace("class Model(", "class ModelNew(")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def only(report):
    assert len(report.verdicts) == 1, [v.reasons for v in report.verdicts]
    return report.verdicts[0]


def test_matching_by_stem_passes(tmp_path):
    write(tmp_path / "t" / "softmax.py", TASK)
    write(tmp_path / "c" / "softmax.py", CAND)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.ok and v.status == "passed static checks"


def test_level_folders_keep_same_stems_apart(tmp_path):
    for level in (1, 2):
        write(tmp_path / "t" / f"level{level}" / "1_Op.py", TASK)
    write(tmp_path / "c" / "level2" / "1_Op.py", CAND)
    report = static_eval([str(tmp_path / "t")], [str(tmp_path / "c")])
    by_task = {v.task.name: v for v in report.verdicts}
    assert by_task["level2/1_Op"].candidate.name == "level2/1_Op" and by_task["level2/1_Op"].ok
    assert by_task["level1/1_Op"].status == "no candidate"


def test_kernelbench_number_matches_other_name(tmp_path):
    write(tmp_path / "t" / "level1" / "19_ReLU.py", TASK)
    write(tmp_path / "c" / "level1" / "19_relu_fast.py", CAND)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.ok and v.candidate.stem == "19_relu_fast"


def test_explicit_map(tmp_path):
    write(tmp_path / "t" / "softmax.py", TASK)
    write(tmp_path / "c" / "mine.py", CAND)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")], ["softmax=mine"]))
    assert v.ok and v.candidate.stem == "mine"


def test_bad_map_entry_is_one_line(tmp_path):
    write(tmp_path / "t" / "softmax.py", TASK)
    report = static_eval([str(tmp_path / "t")], [str(tmp_path / "t")], ["softmax=nothere", "oops"])
    assert any("no candidate named nothere" in e for e in report.errors)
    assert any("--map oops: expected task=candidate" in e for e in report.errors)


def test_missing_path_is_one_line(tmp_path):
    report = static_eval([str(tmp_path / "nope")], [str(tmp_path)])
    assert report.errors == [f"{tmp_path / 'nope'}: no such file or folder"]


@pytest.mark.parametrize("drop, missing", [
    ("class Model(", "Model"), ("def get_inputs(", "get_inputs"), ("def get_init_inputs(", "get_init_inputs")])
def test_task_missing_a_name(tmp_path, drop, missing):
    write(tmp_path / "t" / "a.py", TASK.replace(drop, drop.replace("(", "_x(")))
    write(tmp_path / "c" / "a.py", CAND)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.status == "bad task" and v.reasons == [f"task a: defines no {missing}"]


def test_candidate_that_does_not_parse(tmp_path):
    write(tmp_path / "t" / "a.py", TASK)
    write(tmp_path / "c" / "a.py", "class ModelNew(:\n")
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.status == "bad candidate" and v.reasons[0].startswith("candidate a: does not parse: line 1")


def test_candidate_without_modelnew(tmp_path):
    write(tmp_path / "t" / "a.py", TASK)
    write(tmp_path / "c" / "a.py", TASK)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.reasons == ["candidate a: defines no ModelNew"]


@pytest.mark.parametrize("old, new, what", [
    ("def __init__(self, dim, eps=1e-5)", "def __init__(self, dim)", "constructor"),
    ("def __init__(self, dim, eps=1e-5)", "def __init__(self, dim, eps=1e-6)", "constructor"),
    ("def forward(self, x)", "def forward(self, x, y)", "forward"),
])
def test_signature_mismatch(tmp_path, old, new, what):
    write(tmp_path / "t" / "a.py", TASK)
    write(tmp_path / "c" / "a.py", CAND.replace(old, new))
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert len(v.reasons) == 1 and v.reasons[0].startswith(f"candidate a: {what} signature differs: Model(")


@pytest.mark.parametrize("old, new", [
    ("def __init__(self, dim, eps=1e-5)", "def __init__(self, size, eps=1e-5)"),  # renamed
    ("def __init__(self, dim, eps=1e-5)", "def __init__(self, size, epsilon=1e-5)"),
    ("def forward(self, x)", "def forward(self, A)"),  # KernelBench's own model_new_ex_add_cute.py does this
    ("def forward(self, x)", "def forward(self, *inputs)"),
    ("def forward(self, x)", "def forward(self, x, scale=1.0)"),  # an extra argument no call passes
])
def test_signatures_are_compared_by_arity_and_defaults_not_names(tmp_path, old, new):
    write(tmp_path / "t" / "a.py", TASK)
    write(tmp_path / "c" / "a.py", CAND.replace(old, new))
    assert only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")])).reasons == []


def test_task_without_candidate_and_candidate_without_task(tmp_path):
    write(tmp_path / "t" / "a.py", TASK)
    write(tmp_path / "c" / "b.py", CAND)
    report = static_eval([str(tmp_path / "t")], [str(tmp_path / "c")])
    assert sorted(r for v in report.verdicts for r in v.reasons) == [
        "b: no task matches this candidate", "task a: no candidate"]


def test_inspection_does_not_run_the_candidate(tmp_path):
    path = write(tmp_path / "a.py", "raise SystemExit('ran')\nclass ModelNew:\n    pass\n")
    assert inspect_candidate(path).error is None


def test_load_module_gives_each_file_its_own_namespace(tmp_path):
    a = load_module(write(tmp_path / "x" / "m.py", TASK))
    b = load_module(write(tmp_path / "y" / "m.py", TASK.replace("[1]", "[0]")))
    assert a.__name__ != b.__name__ and a.get_init_inputs() == [1] and b.get_init_inputs() == [0]
    assert inspect_task(tmp_path / "x" / "m.py").init.args == ("dim", "eps")


def test_flat_candidates_match_level_tasks_by_stem(tmp_path):
    write(tmp_path / "t" / "level3" / "7_Net.py", TASK)
    write(tmp_path / "c" / "7_Net.py", CAND)
    v = only(static_eval([str(tmp_path / "t")], [str(tmp_path / "c")]))
    assert v.ok and v.task.name == "level3/7_Net"


def test_a_subclass_of_a_class_in_the_same_file_keeps_its_constructors_signature(tmp_path):
    from kernelrl.kernelbench.tasks import inspect_candidate
    (tmp_path / "c.py").write_text("import torch.nn as nn\n\nclass Base(nn.Module):\n    def __init__(self, a, b=2):\n"
                                   "        super().__init__()\n\n    def forward(self, x):\n        return x\n\n"
                                   "class ModelNew(Base):\n    pass\n")
    c = inspect_candidate(tmp_path / "c.py")
    assert c.init.args == ("a", "b") and c.init.defaults == ("2",) and c.forward.args == ("x",)
