"""The background-activity check on a real HGEMM library, no GPU needed: loading a library runs its static
initializers, and the corpus cheat's starts a host thread there (tests/gpu/test_verification.py judges it end to
end on the GPU)."""

import ctypes
from pathlib import Path

import pytest

from kernelrl.harness.verdicts import Verdict
from kernelrl.harness.worker_base import Fatal, WorkerBase, os_threads
from tests.native_helpers import build_libraries

ROOT = Path(__file__).resolve().parents[2]
FILES = {"honest": ROOT / "examples" / "hgemm_wmma.cu",
         "cheat": ROOT / "tests" / "gpu" / "hgemm_corpus" / "cheat_background_thread.cu"}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    return build_libraries(tmp_path_factory.mktemp("background"), FILES)


def load_and_check(path: str) -> None:
    worker = WorkerBase(None, {"secret": 1})
    before = os_threads()
    ctypes.CDLL(path)
    worker.check_no_background(before, "loading the candidate")


@pytest.mark.nvcc
def test_loading_an_honest_library_leaves_no_thread(libraries):
    load_and_check(libraries["honest"])


@pytest.mark.nvcc
def test_a_library_that_starts_a_thread_when_loaded_is_background_activity(libraries):
    with pytest.raises(Fatal) as err:
        load_and_check(libraries["cheat"])
    assert err.value.verdict is Verdict.BACKGROUND_ACTIVITY and "1 thread(s)" in err.value.detail


class ScriptedClock:
    """A host clock that advances by the seconds a (fake) synchronize took: no real waiting, no timing in tests."""

    def __init__(self, busy_s: float):
        self.t, self.busy_s, self.synced = 0.0, busy_s, 0

    def now(self) -> float:
        return self.t

    def sync(self) -> None:
        self.synced += 1
        self.t += self.busy_s


def test_a_device_that_settles_within_the_budget_passes_and_reports_the_wait():
    clock = ScriptedClock(busy_s=0.002)
    waited = WorkerBase(None, {"secret": 1}).check_device_settled(clock.now, clock.sync, "loading", budget_s=0.1)
    assert clock.synced == 1 and waited == pytest.approx(0.002)


def test_gpu_work_left_running_after_a_load_is_background_activity():
    clock = ScriptedClock(busy_s=1.0)
    with pytest.raises(Fatal) as err:
        WorkerBase(None, {"secret": 1}).check_device_settled(clock.now, clock.sync, "loading the candidate",
                                                             budget_s=0.1)
    assert err.value.verdict is Verdict.BACKGROUND_ACTIVITY
    assert "GPU busy for 1000 ms" in err.value.detail
