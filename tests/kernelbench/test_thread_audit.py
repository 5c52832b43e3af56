"""Who started a thread, on every Python version (kernelrl/kernelbench/watch.py, audit_thread_starts): before 3.12 a
thread start raises no audit event, so every thread alive after a candidate's call used to be blamed on it, torch's
own (torch.compile's workers inside an honest candidate) included. The start functions now raise 3.12's event: a
thread the standard library starts for the candidate's call is the library's; one the candidate starts is `thread`."""

import textwrap
from pathlib import Path

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs

TASK = Path(__file__).resolve().parents[2] / "examples" / "kernelbench" / "tasks" / "10_SwishPlusOne.py"

LIBRARY_THREAD = '''
import logging.handlers
import queue

import torch
import torch.nn as nn

_listeners = []


class ModelNew(nn.Module):
    def forward(self, x):
        if not _listeners:  # the standard library starts its own thread here (logging's queue listener)
            listener = logging.handlers.QueueListener(queue.Queue())
            listener.start()
            _listeners.append(listener)
        return torch.nn.functional.silu(x) + 1.0
'''

OWN_THREAD = '''
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        worker = threading.Thread(target=lambda: out.copy_(torch.nn.functional.silu(x) + 1.0))
        worker.start()
        worker.join()
        return out
'''


def test_a_library_s_thread_is_not_the_candidate_s_and_its_own_is(tmp_path):
    paths = []
    for name, source in (("library_thread", LIBRARY_THREAD), ("own_thread", OWN_THREAD)):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        paths.append(path)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=60.0)
    out = run_pairs([(str(TASK), str(p)) for p in paths], settings)
    assert pair_verdict(out[0]) == (True, None)
    ok, reason = pair_verdict(out[1])
    assert not ok and reason.startswith("thread"), reason
