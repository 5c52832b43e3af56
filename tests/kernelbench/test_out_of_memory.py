"""Whose verdict an out-of-memory error is (kernelrl/kernelbench/worker_process.py `_out_of_memory`, judge.py's
checks), on the CPU with a stand-in worker that claims CUDA: the candidate's only where the reference's own call
fits beside the same copies, else the task's (`task too large`); the stream-order check routes its candidate call
through the same rule (the H100 run's 96_HuberLoss got `exception` there, for the reference's own size)."""

import gc
import weakref

import pytest
import torch

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench import memory_plan
from kernelrl.kernelbench.judge import JudgeMixin
from kernelrl.kernelbench.memory_report import allocator_state, reachable_storages
from kernelrl.kernelbench.worker_process import KBWorker

OOM = ("CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 2.22 GiB "
       "is free. Including non-PyTorch memory, this process has 76.95 GiB memory in use. Of the allocated memory "
       "60.10 GiB is allocated by PyTorch, and 16.02 GiB is reserved by PyTorch but unallocated.")


class StandIn(JudgeMixin):
    """The checks' collaborators, no device: the candidate's call runs out of memory; the reference's fits or not."""

    cuda = True
    mem_plan = None
    base_seed = 0
    _out_of_memory = KBWorker._out_of_memory

    def __init__(self, reference_fits: bool):
        self.reference_fits, self.freed = reference_fits, 0

    def _inputs(self, tmod, seed, dist):
        return [torch.ones(4)]

    def _clone(self, xs):
        return [x.clone() for x in xs]

    def sync(self):
        pass

    def begin(self, *args):
        pass

    def _free(self):
        self.freed += 1

    def _cand_call(self, cand, xs, phase, **kwargs):
        raise Rejected(Verdict.EXCEPTION, f"OutOfMemoryError: {OOM[:150]}")

    def _reference(self, tid, ref, pristine, phase):
        if not self.reference_fits:
            raise Rejected(Verdict.TOO_LARGE, f"the reference's own call ran out of device memory at {phase}")
        return self._clone(pristine), torch.ones(4)


@pytest.fixture(autouse=True)
def no_spin(monkeypatch):
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None)


def test_stream_order_out_of_memory_is_the_tasks_where_the_reference_runs_out_too():
    with pytest.raises(Rejected) as caught:
        StandIn(reference_fits=False)._check_stream_order(0, None, None, None)
    assert caught.value.verdict is Verdict.TOO_LARGE and "stream order (memory)" in caught.value.detail


def test_stream_order_out_of_memory_is_the_candidates_where_the_reference_fits():
    with pytest.raises(Rejected) as caught:
        StandIn(reference_fits=True)._check_stream_order(0, None, None, None)
    assert caught.value.verdict is Verdict.EXCEPTION
    assert "the reference's own call fits beside the same copies" in caught.value.detail


def test_an_out_of_memory_line_keeps_what_the_allocator_held():
    assert allocator_state(RuntimeError(OOM)) == "; 60.10 GiB allocated, 16.02 GiB cached but unallocated"
    assert allocator_state(RuntimeError("CUDA error: an illegal memory access")) == ""


@pytest.mark.parametrize("input_gib, released", [(4, True), (0, False)])
def test_a_large_tasks_cache_is_released_before_checks_of_another_size(input_gib, released):
    worker = StandIn(reference_fits=True)
    worker.mem_plan = memory_plan.full(memory_plan.Footprint(input_gib * memory_plan.GIB, 4 * memory_plan.MIB))
    worker._release_cached()
    assert worker.freed == (1 if released else 0)


class CopiesWatched(StandIn):
    """Records, when the reference runs, which of the check's input copies (every `_clone`) are still alive."""

    def __init__(self, candidate_fits: bool):
        super().__init__(reference_fits=True)
        self.candidate_fits, self.copies, self.alive_at_reference = candidate_fits, [], None

    def _clone(self, xs):
        out = [x.clone() for x in xs]
        self.copies += [weakref.ref(x) for x in out]
        return out

    def _cand_call(self, cand, xs, phase, **kwargs):
        if not self.candidate_fits:
            return super()._cand_call(cand, xs, phase)
        return torch.ones(4)

    def _reference(self, tid, ref, pristine, phase):
        gc.collect()
        self.alive_at_reference = (len(self.copies), sum(c() is not None for c in self.copies))
        return super()._reference(tid, ref, pristine, phase)


@pytest.mark.parametrize("candidate_fits", [True, False])
def test_the_stream_order_references_call_has_the_room_of_the_candidates_copies(candidate_fits):
    """45_Average_Pooling_2D's reference ran out at this check on the H100 beside three copies of its 16 GiB input:
    once the candidate's call is done (or ran out), its input copy and the staged one are gone."""
    worker = CopiesWatched(candidate_fits)
    try:
        worker._check_stream_order(0, None, None, None)
    except Rejected:
        assert not candidate_fits
    assert worker.alive_at_reference == (2, 0)  # the candidate's copy and the staged one, both gone


def test_the_storages_python_reaches_are_counted_once_each():
    """96_HuberLoss ran out with 78 GiB allocated where its plan counted 60: `task too large` now lists the device
    storages live Python objects hold, each once however many tensors view it."""
    odd = 7_340_155  # a size no other tensor of the test session has
    big = torch.zeros(odd, dtype=torch.uint8)
    views = [big[:10], big[5:].view(-1)]  # the same storage
    assert reachable_storages("cpu", min_bytes=odd).get(odd) == 1
    del big
    assert reachable_storages("cpu", min_bytes=odd).get(odd) == 1  # the views keep it alive
    del views
    assert odd not in reachable_storages("cpu", min_bytes=odd)
