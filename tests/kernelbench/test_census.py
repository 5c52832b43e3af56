"""The kernel census (kernelrl/kernelbench/census.py) on the CPU, where it counts aten operators: a call that runs
the reference's operators covers it whatever else it runs; one that computes the same values its own way does not."""

from collections import Counter

import pytest
import torch

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.census import covers, describe, launched
from kernelrl.kernelbench.worker_process import KBWorker
from kernelrl.run.protocol import RECYCLE

X = torch.randn(8, 32)


def reference():
    return torch.softmax(X, dim=-1)


def own_way():
    e = torch.exp(X - X.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def test_the_reference_s_operators_are_counted_by_name():
    names = launched(reference, cuda=False)
    assert names["aten::softmax"] == 1 and all(n.startswith("aten::") for n in names)


def test_a_call_that_runs_the_reference_beside_its_own_work_covers_it():
    ref = launched(reference, cuda=False)
    assert covers(launched(lambda: (own_way(), reference()), cuda=False), ref)
    assert covers(launched(lambda: torch.empty_like(X).copy_(reference()), cuda=False), ref)


def test_the_same_values_computed_another_way_do_not_cover_it():
    assert torch.allclose(own_way(), reference(), atol=1e-6)
    assert not covers(launched(own_way, cuda=False), launched(reference, cuda=False))


def test_fewer_launches_than_the_reference_do_not_cover_it():
    assert not covers(Counter({"k": 1}), Counter({"k": 2}))
    assert covers(Counter({"k": 3, "other": 1}), Counter({"k": 2}))


def test_an_empty_reference_is_never_covered():
    assert not covers(Counter({"k": 1}), Counter())


def test_the_verdict_line_names_the_most_frequent_kernels_first():
    assert describe(Counter({"a": 1, "b": 5, "c": 2, "d": 1}), limit=2) == "b x5, c x2 and 2 more"


class AfterPair:
    """KBWorker's `_after_pair` with nothing to free."""

    _after_pair = KBWorker._after_pair
    mem_plan = None
    residue = None  # nothing captured: nothing left behind to look for
    own_extensions = None  # no extension folder

    def __init__(self, profiled: bool):
        self.profiled = profiled

    def _free(self):
        pass


@pytest.mark.parametrize("profiled, failure, expected", [
    (True, None, RECYCLE),  # a correct candidate's census: the next pair gets a fresh process
    (False, None, None),
    (False, Rejected(Verdict.WRONG_VALUES), None),
    (False, Rejected(Verdict.STALE_RESULT), RECYCLE),  # a defence verdict, as before
])
def test_a_worker_that_profiled_cuda_serves_no_further_pair(profiled, failure, expected):
    """CUPTI's teardown after the profiler is known to break CUDA graphs replayed later in the process with an illegal
    address (pytorch#75504, #112507): a later pair's verdict must not depend on an earlier pair's census."""
    assert AfterPair(profiled)._after_pair(failure) == expected
