"""Verdict keys from every stage map to the category prompts and the repair turn rely on; old reason lines (stored
before keys were recorded) get theirs through the one migration."""

import pytest

from kernelrl.evolve.extract import extract
from kernelrl.evolve.screen import screen_hgemm
from kernelrl.evolve.verdicts import categorize, repairable
from kernelrl.harness.record import Record
from kernelrl.harness.verdicts import Verdict, migrate_reason
from tests.evolve_fake_server import CHEAT


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
def test_old_reasons_map_to_categories_through_the_migration(reason, category):
    assert categorize(migrate_reason(reason)) == category


def test_only_compile_errors_get_a_repair_turn():
    assert [c for c in ("compile", "rejected", "defence", "wrong", "malformed") if repairable(c)] == ["compile"]


def test_every_kernelbench_cheat_reason_is_a_defence_verdict():
    from kernelrl.kernelbench.worker import REASONS
    cheats = {"inherits Model", "introspection", "thread", "timer patch", "harness patch", "precision",
              "persisting L2", "reference fallback", "stale result", "specialised to the benchmark shape",
              "stream order", "tensor subclass", "returned an input", "modified inputs", "unwritten output",
              "same tensor every call", "out-of-bounds write", "during timing", "hidden work"}
    assert cheats <= set(REASONS)
    assert {r: categorize(r) for r in cheats} == {r: "defence" for r in cheats}
    assert {r: categorize(migrate_reason(f"{r}: detail")) for r in cheats} == {r: "defence" for r in cheats}


def test_a_record_is_categorized_by_its_verdict_key_not_its_text():
    record = {"verified": False, "verdict": "stale result", "reason": "anything at all"}
    assert categorize(record) == "defence"


def test_a_record_whose_detail_starts_with_another_keys_words_keeps_its_category():
    record = Record.failed("k", "device", Verdict.WRONG_VALUES, "hang: words that start another key").to_dict()
    assert categorize(record) == "wrong"
    timed = Record.failed("k", "device", Verdict.OUT_OF_BOUNDS, "during timing: a guard band was overwritten")
    assert categorize(timed.to_dict()) == "defence" and timed.verdict == "out-of-bounds write"


def test_the_loops_own_verdicts_come_typed_from_where_they_are_made():
    ex = extract("no code here")
    assert ex.key is Verdict.MALFORMED and categorize(ex.key) == "malformed"
    screened = screen_hgemm(CHEAT)
    assert screened.verdict is Verdict.STATIC_SCREEN and categorize(screened.verdict) == "rejected"
    assert str(screened).startswith("static screen: cuda-stream")
    assert categorize(Verdict.BAD_SPEC) == "malformed" and categorize(Verdict.STATIC_CHECKS) == "rejected"
    assert categorize(Verdict.SYNTAX) == "compile"


def test_a_failed_record_without_a_key_is_the_evaluators_own_failure():
    assert categorize({"verified": False, "verdict": None, "reason": "something nobody wrote"}) == "failed"
    assert migrate_reason("something nobody wrote") is None


def test_a_reason_line_is_not_a_key():
    with pytest.raises(ValueError):
        categorize("on 64x64x64: wrong values: error 1")
