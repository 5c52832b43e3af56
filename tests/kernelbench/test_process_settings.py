"""Process-global settings one pair's candidate can change, which reached a later pair's verdict or speedup in the
same KernelBench worker (found by a review; each case failed before kernelrl/harness/process_settings.py and
the kernel-choice switches of kernelrl/harness/device_state.py): a setter, then an honest candidate, in one run;
the honest candidate gets the verdict it gets when judged first."""

import os
import signal

from kernelrl.harness import process_settings
from tests.kb_helpers import candidate, judged_in_order


def _check(judged, *honest):
    """The honest candidates (by index) are accepted."""
    verdicts = [v for v, _, _ in judged]
    assert all(verdicts[i] == (True, None) for i in honest), verdicts


# --- torch.backends.mkldnn.conv.fp32_precision: the reference's convolutions in bf16 for every later pair ---------
CONV_TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, bias=False)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(4, 16, 24, 24)]

def get_init_inputs():
    return []
'''
# computes the task's convolution with torch's, as the reference does (its own pair passes: both sides in bf16);
# sets a torch.backends setting, which the static layer leaves alone and the precision check does not read
SETS_MKLDNN_CONV_BF16 = '''import torch
import torch.nn as nn

torch.backends.mkldnn.conv.fp32_precision = "bf16"

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, bias=False)

    def forward(self, x):
        return self.conv(x)
'''
# an honest fp32 convolution of its own (im2col and a float32 matmul, as a custom kernel computes it)
OWN_FP32_CONV = '''import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, bias=False)

    def forward(self, x):
        n, _, h, w = x.shape
        cols = F.unfold(x, 3)                                   # n, 16*9, L
        out = self.conv.weight.reshape(32, -1) @ cols           # n, 32, L
        return out.reshape(n, 32, h - 2, w - 2)
'''


def test_mkldnn_conv_precision_set_by_one_pair_does_not_decide_a_later_fp32_candidate(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": OWN_FP32_CONV, "sets": SETS_MKLDNN_CONV_BF16,
                                        "honest_after": OWN_FP32_CONV + "\n# a second honest candidate\n"},
                             task_source=CONV_TASK)
    _check(judged, 0, 2)
    assert judged[1][0][0] is False and "mkldnn.conv.fp32_precision" in judged[1][0][1], judged[1][0]


# --- sys.setrecursionlimit -----------------------------------------------------------------------------------------
SETS_RECURSION = '''import sys
sys.setrecursionlimit(250)
''' + candidate("torch.relu(x)")
RECURSES = '''
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)

ZERO = depth(400) - 400  # a recursive helper, well under Python's default limit
''' + candidate("torch.relu(x) + ZERO")


def test_recursion_limit_set_by_one_pair_does_not_reach_a_later_pair(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": RECURSES, "sets": SETS_RECURSION,
                                        "honest_after": RECURSES + "\n# a second honest candidate\n"})
    _check(judged, 0, 2)


# --- warnings filters ------------------------------------------------------------------------------------------------
SETS_WARNINGS = '''import warnings
warnings.simplefilter("error")
''' + candidate("torch.relu(x)")
WARNS = '''import warnings
warnings.warn("this kernel's launch config is a guess", UserWarning)
''' + candidate("torch.relu(x)")


def test_warnings_filter_set_by_one_pair_does_not_reach_a_later_pair(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": WARNS, "sets": SETS_WARNINGS,
                                        "honest_after": WARNS + "\n# a second honest candidate\n"})
    _check(judged, 0, 2)


# --- a builtin the guards do not list ----------------------------------------------------------------------------
SETS_BUILTIN = '''import importlib
_b = importlib.import_module("built" + "ins")
_round = _b.round
vars(_b)["round"] = lambda v, n=None: _round(v, n) + 1 if n is None and v == 0.25 else _round(v, n)
''' + candidate("torch.relu(x)")
USES_ROUND = '''
ZERO = round(0.25)  # a block count rounded
''' + candidate("torch.relu(x) + ZERO")


def test_builtin_replaced_by_one_pair_does_not_reach_a_later_pair(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": USES_ROUND, "sets": SETS_BUILTIN,
                                        "honest_after": USES_ROUND + "\n# a second honest candidate\n"})
    _check(judged, 0, 2)


# --- an import hook ------------------------------------------------------------------------------------------------
SETS_META_PATH = '''import importlib.abc, importlib.util, sys

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "graphlib" else None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        class TopologicalSorter:
            def __init__(self, graph):
                self.graph = graph
            def static_order(self):
                return sorted(self.graph, reverse=True)
        module.TopologicalSorter = TopologicalSorter

sys.meta_path.insert(0, _Finder())
''' + candidate("torch.relu(x)")
# orders its fused steps with the standard library (a module the worker has not imported yet)
IMPORTS_STDLIB = '''import graphlib
ZERO = 0 if list(graphlib.TopologicalSorter({"relu": {"load"}}).static_order()) == ["load", "relu"] else 1
''' + candidate("torch.relu(x) + ZERO")


def test_import_hook_installed_by_one_pair_does_not_reach_a_later_pair(tmp_path):
    # alone in its own run first (in one run its own first import would put the module in sys.modules for good)
    (alone, _, _), = judged_in_order(tmp_path / "alone", {"honest": IMPORTS_STDLIB})
    judged = judged_in_order(tmp_path / "after", {"sets": SETS_META_PATH, "honest_after": IMPORTS_STDLIB})
    assert alone == (True, None), alone
    _check(judged, 1)


# --- resource limits -----------------------------------------------------------------------------------------------
SETS_RLIMIT = '''import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (40, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
''' + candidate("torch.relu(x)")
OPENS_FILES = '''import os, tempfile
handles = [open(os.path.join(tempfile.gettempdir(), f"part{i}.txt"), "w") for i in range(48)]
for h in handles:
    h.close()
''' + candidate("torch.relu(x)")


def test_resource_limit_set_by_one_pair_does_not_reach_a_later_pair(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": OPENS_FILES, "sets": SETS_RLIMIT,
                                        "honest_after": OPENS_FILES + "\n# a second honest candidate\n"})
    _check(judged, 0, 2)


# --- torch.backends.mkldnn.enabled: the reference's convolutions slowed for every later pair ----------------------
CONV5_TASK = CONV_TASK.replace("nn.Conv2d(16, 32, 3, bias=False)", "nn.Conv2d(64, 64, 5, bias=False)").replace(
    "torch.randn(4, 16, 24, 24)", "torch.randn(8, 64, 32, 32)")
# torch's convolution, as the reference's; turns oneDNN off (a torch.backends setting: neither the static layer nor
# the precision check reads it)
SETS_MKLDNN_OFF = '''import torch
import torch.nn as nn

torch.backends.mkldnn.enabled = False

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 5, bias=False)

    def forward(self, x):
        return self.conv(x)
'''
# an honest convolution of its own (im2col and a matmul): oneDNN's switch does not touch it
OWN_CONV5 = OWN_FP32_CONV.replace("nn.Conv2d(16, 32, 3, bias=False)", "nn.Conv2d(64, 64, 5, bias=False)").replace(
    "F.unfold(x, 3)", "F.unfold(x, 5)").replace("reshape(32, -1)", "reshape(64, -1)").replace(
    "reshape(n, 32, h - 2, w - 2)", "reshape(n, 64, h - 4, w - 4)")


# reads the switch at its load: oneDNN off would make the reference's convolution several times slower
READS_ONEDNN = OWN_CONV5.replace("class ModelNew",
                                 "assert torch.backends.mkldnn.enabled, 'oneDNN off'\n\nclass ModelNew")


def test_onednn_switched_off_by_one_pair_is_on_again_for_a_later_pair(tmp_path):
    judged = judged_in_order(tmp_path, {"honest_first": READS_ONEDNN, "sets": SETS_MKLDNN_OFF,
                                        "honest_after": READS_ONEDNN + "\n# a second honest candidate\n"},
                             task_source=CONV5_TASK)
    _check(judged, 0, 2)


def test_a_switch_a_candidate_sets_is_put_back_and_said(tmp_path):
    (verdict, notes, _), = judged_in_order(tmp_path, {"sets": SETS_MKLDNN_OFF}, task_source=CONV5_TASK)
    assert verdict == (True, None), verdict
    assert "torch.backends.mkldnn.enabled = False (was True) during load: put back" in notes, notes


# lowers the hard limit too, which an unprivileged worker could not raise again
LOWERS_HARD_RLIMIT = SETS_RLIMIT.replace("(40, resource.getrlimit(resource.RLIMIT_NOFILE)[1])", "(40, 40)")


def test_a_pair_that_lowered_a_hard_resource_limit_retires_its_worker(tmp_path, capfd):
    assert LOWERS_HARD_RLIMIT != SETS_RLIMIT
    judged = judged_in_order(tmp_path, {"sets": LOWERS_HARD_RLIMIT, "honest_after": OPENS_FILES})
    _check(judged, 1)
    assert "a fresh worker after this pair, which lowered the hard limit RLIMIT_NOFILE to 40" in capfd.readouterr().err


# --- the settings no case above can show in a worker (as root a file-mode mask stops nobody; a timer's firing
# depends on how long each pair takes): put back directly ----------------------------------------------------------
def test_the_file_mode_mask_is_put_back():
    base = process_settings.read()
    old = os.umask(0o777)
    try:
        process_settings.restore(base)
        assert os.umask(old) == base.umask
    finally:
        os.umask(base.umask)


def test_an_interval_timer_a_pair_set_is_stopped_and_its_handler_put_back():
    base = process_settings.read()
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        process_settings.restore(base)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is base.handlers[signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
