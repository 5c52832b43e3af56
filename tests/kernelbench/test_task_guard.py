"""The task's module as loaded (kernelrl/kernelbench/task_guard.py): a changed size, a wrapped Model method, a
function's code swapped or a list of sizes edited in place is seen, named and put back; the harness's own use
leaves nothing to report."""

import types

import torch

from kernelrl.kernelbench.task_guard import TaskSnapshot
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kb_helpers import pairs_in, task

SOURCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

SHAPE = [64, 128]
BATCH = 64

def get_inputs():
    return [torch.randn(BATCH, *SHAPE[1:])]

def get_init_inputs():
    return []
'''


def _task():
    module = types.ModuleType("kernelrl_kb_task_test")
    exec(compile(SOURCE, "task.py", "exec"), vars(module))
    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == "builtins":
            value.__module__ = module.__name__  # exec's classes report the module it names
    module.Model.__module__ = module.__name__
    return module


def test_the_harness_using_the_task_changes_nothing():
    task = _task()
    snap = TaskSnapshot(task)
    task.Model()(*task.get_inputs())
    assert snap.changed() == []


def test_a_smaller_size_is_seen_and_put_back():
    task = _task()
    snap = TaskSnapshot(task)
    task.BATCH = 2
    assert snap.changed() == ["task module: BATCH replaced"]
    assert task.BATCH == 64 and snap.changed() == []


def test_a_wrapped_model_method_is_seen_and_put_back():
    task = _task()
    snap, forward = TaskSnapshot(task), task.Model.forward
    task.Model.forward = lambda self, x: forward(self, forward(self, x))
    assert any("task class Model: forward replaced" in c for c in snap.changed())
    assert task.Model.forward is forward


def test_a_method_added_to_the_model_class_is_seen():
    task = _task()
    snap = TaskSnapshot(task)
    task.Model.__call__ = lambda self, x: x
    assert any("names added or removed (__call__)" in c for c in snap.changed())


def test_a_list_of_sizes_edited_in_place_is_seen_and_put_back():
    task = _task()
    snap = TaskSnapshot(task)
    task.SHAPE[1] = 8
    assert snap.changed() == ["task module: SHAPE changed in place"]
    assert task.SHAPE == [64, 128]


def test_swapped_code_is_seen_and_put_back():
    task = _task()
    snap = TaskSnapshot(task)
    original = task.get_inputs.__code__
    task.get_inputs.__code__ = (lambda: [torch.zeros(1)]).__code__
    assert snap.changed() == ["task module: get_inputs: its code or defaults replaced"]
    assert task.get_inputs.__code__ is original


def test_compiling_the_reference_as_the_baselines_do_is_not_a_change():
    """torch.compile's dynamo adds `__compiled_fn_...`-style globals to the module of the function it traces: the
    harness's own compiled baselines, not the candidate's doing."""
    task = _task()
    snap = TaskSnapshot(task)
    compiled = torch.compile(task.Model(), backend="eager")
    compiled(*task.get_inputs())
    assert any(n.startswith("__") and n not in ("__builtins__", "__name__", "__doc__") for n in vars(task))
    assert snap.changed() == []


def test_a_swapped_module_type_is_seen_and_put_back():
    task = _task()
    snap = TaskSnapshot(task)

    class Shrunk(types.ModuleType):
        def __getattribute__(self, name):
            return (lambda: [torch.randn(2, 2)]) if name == "get_inputs" else super().__getattribute__(name)

    task.__class__ = Shrunk
    assert snap.changed() == ["task module: its type replaced"]
    assert type(task) is types.ModuleType and task.get_inputs()[0].shape == (64, 128)


def test_swapped_base_classes_are_seen_and_put_back():
    task = _task()
    snap, bases = TaskSnapshot(task), task.Model.__bases__

    class Slow(torch.nn.Module):
        pass

    task.Model.__bases__ = (Slow,)
    assert snap.changed() == ["task class Model: its base classes replaced"]
    assert task.Model.__bases__ is bases


def test_an_honest_pair_timed_beside_the_compiled_baseline_is_correct(tmp_path):
    """Through the worker: the compiled baseline's dynamo globals in the task module are no candidate's change
    (before the guard ignored them, every pair timed beside compile_default was `harness patch`)."""
    pairs = pairs_in(tmp_path, task(), {"honest": "torch.tanh(x)"})
    out = run_pairs(pairs, KBSettings(device="cpu", baselines=("eager", "compile_default"), rounds=2,
                                      calls_per_round=2, hang_timeout_s=240.0))
    assert pair_verdict(out[0]) == (True, None)
    assert {r["baseline"] for r in out[0] if r.get("baseline_us")} == {"eager", "compile_default"}
