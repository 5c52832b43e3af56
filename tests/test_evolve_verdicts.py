"""Verdict reasons from every stage map to the category prompts and the repair turn rely on."""

import pytest

from kernelrl.evolve.verdicts import categorize, repairable


@pytest.mark.parametrize("reason, category", [
    (None, "ok"),
    ("malformed: no fenced ```cuda block in the reply", "malformed"),
    ("compile error: k.cu(3): error: identifier \"x\" is undefined", "compile"),
    ("contract: the file defines no kernelrl_hgemm(...) entry point", "compile"),
    ("compile error: RuntimeError: Error building extension 'k'", "compile"),
    ("compile timeout: the extension did not build in 600 s", "compile"),
    ("on 64x64x64: during timing: stale result: the output is the answer for the previous inputs", "defence"),
    ("on 64x64x64: content-dependent speed: 9.1 us per call when a few input elements change", "defence"),
    ("device state: the method changed persisting L2 set-aside (bytes) = 1048576 (was 0)", "defence"),
    ("modified inputs: A or B changed during the call", "defence"),
    ("task too large: evaluating it needs about 150 GiB", "failed"),
    ("static screen: cuda-stream (line 9: cudaStreamCreate): creates its own CUDA stream", "rejected"),
    ("static checks: threads (line 2): imports threading", "rejected"),
    ("on 64x64x64: during timing: wrong values: error 1 exceeds the fp32 tolerance", "defence"),
    ("on 64x64x64: hidden work: synchronized time exceeds the stream's event time", "defence"),
    ("on 128x64x64: out-of-bounds write: a guard band around a buffer was overwritten", "defence"),
    ("same tensor every call", "defence"),
    ("on 64x64x64: wrong values: error 1 exceeds the fp32 tolerance 0.0039 for K=64", "wrong"),
    ("on 64x64x64: 0/1 inputs: 12 elements differ from the exact result", "wrong"),
    ("on 64x64x64: crash: the worker died (signal SIGSEGV) during time", "crash"),
    ("hang: no progress for 60 s during verify", "crash"),
    ("on 64x64x64: unsupported: kernelrl_hgemm_supports returned 0 for this shape", "failed"),
])
def test_reasons_map_to_categories(reason, category):
    assert categorize(reason) == category


def test_only_compile_errors_get_a_repair_turn():
    assert [c for c in ("compile", "rejected", "defence", "wrong", "malformed") if repairable(c)] == ["compile"]


def test_every_kernelbench_cheat_reason_is_a_defence_verdict():
    from kernelrl.evolve.verdicts import categorize
    from kernelrl.kernelbench.worker import REASONS
    cheats = {"inherits Model", "introspection", "thread", "timer patch", "harness patch", "precision",
              "persisting L2", "reference fallback", "stale result", "specialised to the benchmark shape",
              "stream order", "tensor subclass", "returned an input", "modified inputs", "unwritten output",
              "same tensor every call", "out-of-bounds write", "during timing", "hidden work"}
    assert cheats <= set(REASONS)
    assert {r: categorize(f"{r}: detail") for r in cheats} == {r: "defence" for r in cheats}


def test_a_record_is_categorized_by_its_verdict_key_not_its_text():
    record = {"verified": False, "verdict": "stale result", "reason": "anything at all"}
    assert categorize(record) == "defence"


def test_a_line_no_evaluator_wrote_is_the_evaluators_own_failure():
    assert categorize("something nobody wrote") == "failed"
