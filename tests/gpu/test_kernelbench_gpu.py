"""Every KernelBench defence on the GPU, through the real evaluator (kernelrl/kernelbench/worker.py): each
adversarial candidate of tests/gpu/kb_adversarial is rejected for the reason its docstring names, and each honest
hand-written candidate of examples/kernelbench/candidates and tests/gpu/kb_honest (honest, and hard on the
harness: a cache released mid-call, CUDA graphs under the kernel census) is accepted. All pairs run in one
evaluation (one worker, restarted by the runner after every fatal or defence verdict and every census), against the
eager baseline only.

The load_inline candidates are built by run_pairs itself, in parallel, before any pair is evaluated (ninja on
PATH; kernelrl/kernelbench/build.py). The fixture's run prints nothing until it ends: 409 s for its 74 pairs on an
H100 (2026-12-07, 65 worker starts), more than 560 s for 87 once torch.compile ran in the worker's own process
(KB_SUITE_PART=k/n runs a share); benchmarks/device/diag/kb_corpus_timeline.py runs the same pairs with a line per
build, worker start, phase and verdict."""

import math
import os
from pathlib import Path

import pytest

from kernelrl.examples import CANDIDATES_DIR, TASKS_DIR
from kernelrl.kernelbench.tasks import discover
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.gpu.kb_adversarial import meta

pytestmark = pytest.mark.gpu
ADVERSARIAL_DIR = Path(__file__).resolve().parent / "kb_adversarial"
ADVERSARIAL, _ = discover([ADVERSARIAL_DIR])
HONEST, _ = discover([CANDIDATES_DIR])
HONEST_HARD, _ = discover([Path(__file__).resolve().parent / "kb_honest"])  # honest, and hard on the harness


def in_part(index: int) -> bool:
    """KB_SUITE_PART=k/n: every n-th pair from the k-th, so that the suite runs in n device calls of 10 minutes (its
    87 pairs took more than 560 s on an H100 once torch.compile ran in the worker's own process)."""
    part, _, parts = os.environ.get("KB_SUITE_PART", "1/1").partition("/")
    return index % int(parts or 1) == int(part) - 1


@pytest.fixture(scope="module")
def verdicts():
    pairs = [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in ADVERSARIAL]
    pairs += [(TASKS_DIR / p.name, p) for p in HONEST]
    pairs += [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in HONEST_HARD]
    pairs = [pair for i, pair in enumerate(pairs) if in_part(i)]
    settings = KBSettings(device="cuda", baselines=("eager",), rounds=5, hang_timeout_s=180.0,
                          own_kernels=True)  # the honest candidates' own kernels pass the census
    out = run_pairs([(str(t), str(c)) for t, c in pairs], settings)
    return {str(c): out[i] for i, (_, c) in enumerate(pairs)}


def notes(records: list[dict]) -> list[str]:
    """What the worker could not do (a memory guard it had to switch off, ...), from the records' `extra`."""
    return sorted({n for r in records for n in (r.get("extra") or {}).get("notes", [])})


@pytest.mark.parametrize("path", ADVERSARIAL, ids=[p.stem for p in ADVERSARIAL])
def test_adversarial_candidate_is_rejected_for_its_reason(verdicts, path):
    if str(path) not in verdicts:
        pytest.skip("in another KB_SUITE_PART")
    expected = meta(path)["reason"]
    ok, reason = pair_verdict(verdicts[str(path)])
    assert not ok, f"{path.stem} was accepted; worker notes: {notes(verdicts[str(path)])}"
    assert reason.startswith(expected), \
        f"{path.stem}: expected {expected!r}, got {reason!r}; worker notes: {notes(verdicts[str(path)])}"


@pytest.mark.parametrize("path", HONEST + HONEST_HARD, ids=[p.stem for p in HONEST + HONEST_HARD])
def test_honest_candidate_is_accepted(verdicts, path):
    if str(path) not in verdicts:
        pytest.skip("in another KB_SUITE_PART")
    records = verdicts[str(path)]
    ok, reason = pair_verdict(records)
    assert ok, f"{path.stem}: {reason}; worker notes: {notes(records)}"
    (rec,) = [r for r in records if r.get("baseline") == "eager"]
    assert rec["verified"] and rec["max_abs_err"] < 1e-3
    assert rec["speedup"] is not None and math.isfinite(rec["speedup"]) and rec["speedup"] > 0
