"""The process's own settings as native code changes them, without Python seeing (kernelrl/harness/process_settings.py):
a signal handler installed through libc, a variable set with libc's setenv. Both workers read them: the KernelBench
worker puts them back at each pair's start, the HGEMM worker makes a change the changing method's verdict."""

import ast
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kernelrl.harness import process_settings
from tests.native_helpers import build_libraries

LIBC = ctypes.CDLL(None)
SIG_IGN = ctypes.c_void_p(1)


def test_a_handler_installed_through_libc_is_named_though_python_does_not_see_it():
    base = process_settings.read()
    LIBC.signal(int(signal.SIGUSR1), SIG_IGN)
    try:
        assert signal.getsignal(signal.SIGUSR1) == base.handlers[signal.SIGUSR1]  # Python's record: unchanged
        assert process_settings.process_changes(base, process_settings.read()) == ["the handler of SIGUSR1"]
    finally:
        process_settings.restore(base)


def test_a_handler_installed_through_libc_is_put_back():
    base = process_settings.read()
    LIBC.signal(int(signal.SIGUSR2), SIG_IGN)
    process_settings.restore(base)
    assert process_settings.process_changes(base, process_settings.read()) == []


def test_a_python_handler_set_and_put_back_reads_as_no_change():
    base = process_settings.read()
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)
    assert process_settings.process_changes(base, process_settings.read()) == ["the handler of SIGUSR1"]
    signal.signal(signal.SIGUSR1, previous)
    assert process_settings.process_changes(base, process_settings.read()) == []


def test_mask_timer_and_soft_limit_are_named():
    base = process_settings.read()
    old_mask = os.umask(0o077)
    signal.setitimer(signal.ITIMER_VIRTUAL, 60.0)
    try:
        changes = process_settings.process_changes(base, process_settings.read())
        assert any(c.startswith("the file-mode mask to 0o77") for c in changes), changes
        assert any(c.startswith("the interval timer ITIMER_VIRTUAL") for c in changes), changes
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        os.umask(old_mask)
    assert process_settings.process_changes(base, process_settings.read()) == []


def test_a_variable_set_through_libc_is_named_and_removed():
    base = process_settings.c_environ()
    LIBC.setenv(b"KERNELRL_TEST_NATIVE", b"1", 1)
    try:
        assert "KERNELRL_TEST_NATIVE" not in os.environ  # os.environ does not follow C
        assert process_settings.environ_changes(base, process_settings.c_environ()) == [
            "the environment variable KERNELRL_TEST_NATIVE"]
    finally:
        process_settings.restore_c_environ(base)
    assert process_settings.environ_changes(base, process_settings.c_environ()) == []
    assert os.getenv("KERNELRL_TEST_NATIVE") is None


# --- the HGEMM corpus's cheat, built for sm_90a and loaded without a GPU (its static initializer runs at load) -----
ROOT = Path(__file__).resolve().parents[2]
FILES = {"honest": ROOT / "examples" / "hgemm_wmma.cu",
         "cheat": ROOT / "tests" / "gpu" / "hgemm_corpus" / "cheat_timer_at_load.cu"}
# in a child: the cheat's timer would end this process three seconds after the load, were it not put back
LOAD = """import ctypes, sys
from kernelrl.harness import process_settings
base = process_settings.read()
ctypes.CDLL(sys.argv[1])
moved = process_settings.process_changes(base, process_settings.read())
process_settings.restore(base)
print(repr((moved, process_settings.process_changes(base, process_settings.read()))))
"""


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    return build_libraries(tmp_path_factory.mktemp("timer"), FILES)


def _load(path: str) -> tuple[list, list]:
    out = subprocess.run([sys.executable, "-c", LOAD, path], capture_output=True, text=True, timeout=120, check=True)
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


@pytest.mark.nvcc
def test_loading_an_honest_library_changes_no_process_setting(libraries):
    assert _load(libraries["honest"]) == ([], [])


@pytest.mark.nvcc
def test_a_library_that_sets_a_timer_and_a_handler_at_load_is_named_and_put_back(libraries):
    moved, after = _load(libraries["cheat"])
    assert any(m.startswith("the interval timer ITIMER_REAL") for m in moved), moved
    assert "the handler of SIGTERM" in moved, moved
    assert after == []
