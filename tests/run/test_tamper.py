"""The HGEMM worker's watch over the evaluator's Python and torch's dispatcher (kernelrl/harness/guards.py and
dispatch_guard.py, Worker._check_tamper): a native candidate can run Python in the worker's process through the C
API. The corpus's cheat_python_at_load, built here
and loaded as the worker loads candidates, replaces the output comparison at load; the snapshot taken before names
it and puts it back, and the worker ends with that method's `harness patch`."""

import ctypes
from pathlib import Path

import pytest

import kernelrl.harness.stats
import kernelrl.run.worker as worker_module
from kernelrl.harness.dispatch_guard import DispatchGuard
from kernelrl.harness.guards import Snapshot
from kernelrl.harness.installed import library_prefixes
from kernelrl.harness.verdicts import Verdict
from kernelrl.harness.worker_base import Fatal

CHEAT = Path(__file__).resolve().parents[1] / "gpu" / "hgemm_corpus" / "cheat_python_at_load.cu"


@pytest.mark.nvcc
def test_a_library_that_runs_python_at_load_is_seen_and_put_back(tmp_path):
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=tmp_path)
    (built,) = builder.build_many([BuildRequest(CHEAT.read_text(), name="cheat_python_at_load")], workers=1)
    assert built.ok, built.log[-2000:]
    snapshot, real = Snapshot.capture(), worker_module.compare_output
    ctypes.CDLL(built.lib_path)  # no GPU needed: its constructor runs Python, its kernel never runs here
    assert worker_module.compare_output is not real
    assert snapshot.changed() == [("harness patch", "kernelrl.run.worker.compare_output")]
    assert worker_module.compare_output is real and snapshot.changed() == []


def bare_worker():
    worker = object.__new__(worker_module.Worker)  # no CUDA here: only the checks
    worker.tamper, worker.dispatch = Snapshot.capture(), DispatchGuard(library_prefixes())
    return worker


def test_the_worker_ends_with_the_running_method_s_verdict_when_its_python_changed():
    worker = bare_worker()
    real = kernelrl.harness.stats.summarize
    kernelrl.harness.stats.summarize = lambda samples: {"median": 0.0}
    try:
        with pytest.raises(Fatal) as caught:
            worker._check_state("device timing")
    finally:
        kernelrl.harness.stats.summarize = real
    assert caught.value.verdict is Verdict.HARNESS_PATCH
    assert caught.value.detail.startswith("kernelrl.harness.stats.summarize replaced during device timing")


def test_a_replaced_timer_is_a_timer_patch():
    import torch
    worker = bare_worker()
    real = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *args, **kwargs: None
    try:
        with pytest.raises(Fatal) as caught:
            worker._check_tamper("loading the candidate")
    finally:
        torch.cuda.synchronize = real
    assert caught.value.verdict is Verdict.TIMER_PATCH


def test_a_kernel_registered_for_a_torch_operator_ends_the_worker():
    import torch
    worker = bare_worker()
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("sinc", lambda x: x.new_zeros(x.shape), "CPU")
        with pytest.raises(Fatal) as caught:
            worker._check_tamper("loading the candidate", everything=True)
    finally:
        lib._destroy()
    assert caught.value.verdict is Verdict.HARNESS_PATCH and "the CPU kernel of aten::sinc" in caught.value.detail


@pytest.mark.nvcc
def test_a_library_that_sets_the_judge_on_the_worker_object_at_load_ends_the_worker(tmp_path):
    worker = bare_worker()
    ctypes.CDLL(built(tmp_path, "cheat_replaces_worker_judge"))  # its constructor runs Python; no GPU needed
    assert "_judge" in vars(worker)  # the route works: the worker's own object, found through the heap
    with pytest.raises(Fatal) as caught:
        worker._check_tamper("loading the candidate")
    assert caught.value.verdict is Verdict.HARNESS_PATCH and caught.value.detail.startswith("_judge set on")
    assert "_judge" not in vars(worker)


def built(tmp_path, name: str) -> str:
    """A corpus library built for sm_90a (nvcc, no GPU): its path."""
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=tmp_path)
    (result,) = builder.build_many([BuildRequest(CHEAT.with_name(f"{name}.cu").read_text(), name=name)], workers=1)
    assert result.ok, result.log[-2000:]
    return result.lib_path


@pytest.mark.nvcc
def test_a_library_that_rewrites_the_worker_s_tagged_reports_at_load_is_not_seen_in_the_worker(tmp_path):
    """The hole the referee closes (run/referee.py; its GPU test rejects this cheat): its constructor replaces the
    pickling function in the sender's slot, and a report that said its GEMM was wrong reaches the runner tagged with
    the worker's key, verified and three times faster than torch."""
    import multiprocessing
    from kernelrl.harness.channel import Receiver, Sender, new_key
    mine, theirs = multiprocessing.Pipe()
    key = new_key()
    sender, worker = Sender(mine, key), bare_worker()
    ctypes.CDLL(built(tmp_path, "cheat_forges_worker_report"))
    worker._check_tamper("loading the candidate")  # nothing of the worker's Python changed: no verdict
    torch_rec = {"method": "torch", "mode": "offline", "verified": True, "time_us_median": 30.0, "samples": 7}
    cheat_rec = {"method": "cheat_forges_worker_report", "mode": "offline", "verified": False,
                 "reason": "wrong values: error 1 exceeds", "verdict": "wrong values", "time_us_median": None}
    sender.send(("task", 0, [torch_rec, cheat_rec]))
    _, _, records = Receiver(theirs, key).recv()
    assert records[1]["verified"] is True and records[1]["time_us_median"] == 10.0
