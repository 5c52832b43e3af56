"""The harness's shared pieces on the CPU: typed verdicts, the one tolerance rule (the worker's and the reward's),
the one hidden-work rule, device-state snapshots, bounded comparisons, and KernelBench verdicts that depend only on
their own candidate (a cheat before or after an honest candidate, a scalar output, the recorded tolerance)."""

import math

import pytest
import torch

from kernelrl.harness import compare
from kernelrl.harness.device_state import DeviceState
from kernelrl.harness.stats import content_dependent_speed, hidden_work
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.harness.record import Record
from kernelrl.harness.verdicts import Category, Rejected, Verdict, category_of, key_of, migrate_reason
from kernelrl.kernelbench.worker import KBSettings, failed_record, pair_verdict, run_pairs


# -- verdicts ----------------------------------------------------------------------------------------------------
def test_every_verdict_has_a_category():
    assert all(isinstance(v.category, Category) for v in Verdict)


def test_a_rejection_carries_its_key_and_a_reason_line():
    exc = Rejected(Verdict.STALE_RESULT, "the previous inputs' answer")
    assert exc.verdict is Verdict.STALE_RESULT and str(exc) == "stale result: the previous inputs' answer"


@pytest.mark.parametrize("reason, key", [
    ("on 64x64x64: modified inputs: A or B changed during the call", Verdict.MODIFIED_INPUTS),
    ("during timing: stale result: cached", Verdict.DURING_TIMING),
    ("hang: no progress for 60 s during load", Verdict.HANG),
    ("returned error: 1 (cudaErrorInvalidValue)", Verdict.RETURNED_ERROR),
    ("specialised to the benchmark shape: wrong values (batch 3 instead of the task's)", Verdict.SPECIALISED),
])
def test_old_reason_lines_read_back_as_their_key_through_the_migration(reason, key):
    assert migrate_reason(reason) is key


def test_a_line_no_evaluator_wrote_migrates_to_no_key():
    assert migrate_reason("something nobody wrote") is None and migrate_reason(None) is None


def test_a_records_key_wins_over_its_text():
    assert category_of({"verified": False, "verdict": "hidden work", "reason": "wrong values: x"}) is Category.DEFENCE
    assert category_of({"verified": True, "reason": None}) is Category.OK


def test_a_record_built_from_a_rejection_carries_its_key_and_detail():
    exc = Rejected(Verdict.OUT_OF_BOUNDS, "a guard band around a buffer was overwritten")
    r = Record.failed("k", "device", exc.verdict, exc.detail).to_dict()
    assert (r["verdict"], r["detail"], r["reason"]) == ("out-of-bounds write", exc.detail, str(exc))
    assert not r["verified"] and key_of(r) is Verdict.OUT_OF_BOUNDS


def test_a_detail_that_starts_with_another_keys_words_keeps_its_own_key():
    # a wrong-values verdict whose detail happens to begin with "hang: ": the key is the field, never the text
    r = Record.failed("k", "device", Verdict.WRONG_VALUES, "hang: the words of another key").to_dict()
    assert key_of(r) is Verdict.WRONG_VALUES and category_of(r) is Category.CORRECTNESS
    # a record whose reason begins with another key's words (a timing qualifier) is read by its key alone
    during = {"verified": False, "verdict": "out-of-bounds write",
              "reason": "during timing: out-of-bounds write: a guard band around a buffer was overwritten"}
    assert key_of(during) is Verdict.OUT_OF_BOUNDS and migrate_reason(during["reason"]) is Verdict.DURING_TIMING


def test_a_reason_line_is_not_a_key():
    with pytest.raises(ValueError):
        key_of("wrong values: error 1")


# -- one tolerance, one hidden-work rule ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.float16, 1e-2), (torch.bfloat16, 1e-2),
                                        ("float32", 1e-4), ("bfloat16", 1e-2)])
def test_the_tolerance_is_the_output_dtypes(dtype, tol):
    assert output_tolerance(dtype) == tol


def test_hidden_work_flags_only_overhead_beyond_the_baselines():
    assert hidden_work([12.0, 13.0, 12.5], [12.0, 11.0, 13.0], 5.0) is None
    flag = hidden_work([900.0, 950.0], [12.0, 11.0], 1000.0)  # work the stream's events never saw
    assert flag.verdict is Verdict.HIDDEN_WORK and str(flag).startswith("hidden work: ")
    assert hidden_work([], [12.0], 5.0) is None


def test_one_stalled_region_is_not_hidden_work():
    assert hidden_work([14.0, 48.0, 51.0], [12.0], 5.0) is None  # two host stalls of three; the third is clean


def test_hidden_work_scales_with_the_timed_region():  # a graph replay of 500 calls, not one call
    assert hidden_work([300.0], [20.0], 1500.0) is None
    assert hidden_work([300.0], [20.0], 400.0) is not None


@pytest.mark.parametrize("plain, extra, base, flagged", [
    (70.0, 110.0, 1.0, True),    # a 4096^3 content cache: 70 us on a hit, 180 us when it must compute
    (176.0, 2.0, 1.5, False),    # an honest kernel pays what the baseline pays
    (3.0, 1.8, 1.5, False),      # tiny shapes: the probe's own cost, within the floor
    (10.0, 3.5, 0.5, True),      # 3 us more than the baseline on a 10 us kernel
    (10.0, 3.5, None, True),     # no trusted baseline in the run: judged against zero
])
def test_content_dependent_speed(plain, extra, base, flagged):
    assert (content_dependent_speed(plain, extra, base) is not None) == flagged


# -- device state ------------------------------------------------------------------------------------------------
def test_a_changed_numerics_flag_is_seen_and_put_back():
    state = DeviceState(torch, cuda=False)
    before = state.snapshot()
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = not old
    try:
        changed = state.changed(before, state.snapshot())
        assert "torch.backends.cuda.matmul.allow_tf32" in [c.split(" = ")[0] for c in changed]
        state.restore(before)
        assert torch.backends.cuda.matmul.allow_tf32 == old and state.changed(before, state.snapshot()) == []
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# -- bounded comparisons -----------------------------------------------------------------------------------------
@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 7)


def test_chunked_comparisons_agree_with_whole_tensor_ones(small_chunks):
    g = torch.Generator().manual_seed(0)
    r = torch.randn(5, 9, generator=g)
    o = r + 1e-3 * torch.randn(5, 9, generator=g)
    max_abs, max_rel = compare.error_stats(o, r, 1e-4)
    assert max_abs == pytest.approx(float((o.double() - r.double()).abs().max()))
    assert max_rel == pytest.approx(float(((o.double() - r.double()).abs() / (r.double().abs() + 1e-4)).max()))
    assert compare.allclose(o, r, 1e-2, 1e-2) and not compare.allclose(o, r, 1e-6, 1e-6)
    bad = o.clone()
    bad[4, 8] = float("inf")  # in the last chunk only
    assert not compare.all_finite(bad) and compare.all_finite(o)
    assert compare.same_values(o, o.clone()) and not compare.same_values(o, bad)


def test_inputs_holding_nan_on_purpose_count_as_unchanged(small_chunks):
    x = torch.tensor([1.0, float("nan"), 3.0] * 5)
    assert compare.same_values(x, x.clone())


# -- KernelBench verdicts depend only on their own candidate ----------------------------------------------------
TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return []
'''

HONEST = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0) * 2
'''

# Changes its input (a defence verdict) and, on the way, replaces torch.relu for everything after it in this
# process: the next pair's reference would compute garbage. A fresh worker after a defence verdict stops that.
CONTAMINATING = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.relu = lambda t: t * 0
        out = x.clamp_min(0) * 2
        x.add_(1)
        return out
'''

SCALAR_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.mean((a - b) ** 2)

def get_inputs():
    return [torch.randn(128, 16), torch.randn(128, 16)]

def get_init_inputs():
    return []
'''

SCALAR_HONEST = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ((a - b) * (a - b)).mean()
'''

HALF_OUT_TASK = TASK.replace("return torch.relu(x) * 2", "return (torch.relu(x) * 2).to(torch.bfloat16)")
HALF_OUT_HONEST = HONEST.replace("return x.clamp_min(0) * 2", "return (x.clamp_min(0) * 2).to(torch.bfloat16)")


def _run(tmp_path, pairs):
    paths = []
    for i, (task, cand) in enumerate(pairs):
        t, c = tmp_path / f"t{i}" / "task.py", tmp_path / f"c{i}" / "task.py"
        for path, text in ((t, task), (c, cand)):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        paths.append((str(t), str(c)))
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=30.0,
                          extensions_dir=str(tmp_path / "ext"))
    out = run_pairs(paths, settings)
    return [out[i] for i in range(len(pairs))]


@pytest.mark.parametrize("order", ["cheat first", "honest first"])
def test_a_contaminating_cheat_does_not_change_an_honest_verdict(tmp_path, order):
    pairs = ([(TASK, CONTAMINATING), (TASK, HONEST)] if order == "cheat first"
             else [(TASK, HONEST), (TASK, CONTAMINATING)])
    records = _run(tmp_path, pairs)
    verdicts = [pair_verdict(r) for r in records]
    honest = verdicts[1] if order == "cheat first" else verdicts[0]
    cheat = verdicts[0] if order == "cheat first" else verdicts[1]
    assert honest == (True, None)
    # its replaced torch.relu (the contamination) is what the guards see first, before its changed inputs
    cheat_record = failed_record(records[0] if order == "cheat first" else records[1])
    assert not cheat[0] and key_of(cheat_record) is Verdict.HARNESS_PATCH and "torch.relu" in cheat[1]


def test_a_scalar_output_is_judged_like_any_other(tmp_path):
    [records] = _run(tmp_path, [(SCALAR_TASK, SCALAR_HONEST)])
    assert pair_verdict(records) == (True, None)


def test_the_worker_records_the_tolerance_of_the_output_dtype(tmp_path):
    [records] = _run(tmp_path, [(HALF_OUT_TASK, HALF_OUT_HONEST)])
    assert pair_verdict(records) == (True, None)
    assert {r["tolerance"] for r in records if r["method"] == "candidate"} == {1e-2}  # fp32 inputs, bf16 output


def test_consecutive_pairs_of_one_task_reuse_its_reference_and_baselines(tmp_path):
    records = _run(tmp_path, [(TASK, HONEST), (TASK, HONEST.replace("* 2", "* 2.0"))])
    assert [pair_verdict(r) for r in records] == [(True, None), (True, None)]
    reused = [{r["extra"]["task_reused"] for r in recs if r["method"] == "candidate"} for recs in records]
    assert reused == [{False}, {True}]


# -- small rules of the workers ------------------------------------------------------------------------------------
def test_a_capture_broken_by_a_device_synchronize_says_so_and_points_to_offline_mode():
    from kernelrl.harness.timing import capture_verdict as _capture_verdict
    exc = RuntimeError("CUDA error: operation not permitted when stream is capturing\nmore lines")
    verdict = _capture_verdict(exc)
    assert verdict.verdict is Verdict.HOST_SYNC_IN_CALL and "--mode offline" in str(verdict)
    assert _capture_verdict(RuntimeError("something else broke")).verdict is Verdict.GRAPH_CAPTURE


def test_loading_gets_the_compile_timeout_and_everything_else_the_hang_timeout():
    from kernelrl.run.runner import STARTUP_TIMEOUT_S, RunSettings, _phase_timeout
    kb = KBSettings(hang_timeout_s=30.0, compile_timeout_s=600.0)
    assert _phase_timeout(kb, "load") == 600.0 and _phase_timeout(kb, None) == 600.0
    assert _phase_timeout(kb, "time") == 30.0
    assert _phase_timeout(RunSettings(hang_timeout_s=60.0), "load") == 60.0  # HGEMM loads build nothing
    assert _phase_timeout(RunSettings(hang_timeout_s=5.0), None) == STARTUP_TIMEOUT_S  # the worker's own start-up


def test_held_outputs_stay_under_their_budget_but_keep_the_last():
    from kernelrl.kernelbench.worker import Held
    held = Held(budget=3 * 400)
    for _ in range(5):
        held.add((torch.zeros(100), None))  # 400 bytes each
    assert len(held.items) == 3 and held.bytes == 1200
    big = Held(budget=10)
    big.add((torch.zeros(100), None))
    assert len(big.items) == 1  # one output is always kept, whatever its size


def test_the_content_probes_reference_is_the_last_sets_inputs_with_every_change_made_to_it():
    from kernelrl.run.methods import Buffers
    from kernelrl.run.worker import Worker
    worker = Worker(None, {"settings": {}, "secret": 1, "methods": []})
    worker.pristine = {}  # what run_task sets up for each problem
    g = torch.Generator().manual_seed(0)
    sets = []
    for _ in range(2):
        a, b = torch.randn(4, 3, generator=g).half(), torch.randn(3, 5, generator=g).half()
        bufs = Buffers(a.clone(), b.clone(), None, torch.empty(4, 5, dtype=torch.float16))
        worker.pristine[id(bufs)] = (a, b, None)
        sets.append(bufs)
    changes = [(torch.tensor([i]), torch.tensor([64.0 + i], dtype=torch.float16)) for i in range(4)]
    ref = worker._changed_reference(sets, changes)
    a, b, _ = worker.pristine[id(sets[1])]
    expected = a.clone()
    expected.view(-1)[[1, 3]] = torch.tensor([65.0, 67.0], dtype=torch.float16)  # calls 1 and 3 used set 1
    assert torch.equal(ref, expected.float() @ b.float())
    assert float(worker.pristine[id(sets[1])][0].view(-1)[1]) != 65.0  # the pristine inputs stay as they were


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_the_one_pass_closeness_agrees_with_error_stats_and_allclose(small_chunks, dtype):
    g = torch.Generator().manual_seed(1)
    r = torch.randn(5, 9, generator=g).to(dtype)
    o = (r.double() + 3e-3 * torch.randn(5, 9, generator=g, dtype=torch.float64)).to(dtype)
    max_abs, max_rel, tightest = compare.closeness(o, r, 1e-2)
    ref_abs, ref_rel = compare.error_stats(o, r, 1e-2)
    assert max_abs == pytest.approx(ref_abs, rel=1e-6) and max_rel == pytest.approx(ref_rel, rel=1e-6)
    # the tightest tolerance is where torch.allclose (atol = rtol) turns from failing to passing
    assert torch.allclose(o.double(), r.double(), atol=tightest * 1.001, rtol=tightest * 1.001)
    assert not torch.allclose(o.double(), r.double(), atol=tightest * 0.999, rtol=tightest * 0.999)


def test_closeness_finds_one_element_out_of_tolerance_in_the_last_chunk(small_chunks):
    r = torch.ones(45)
    o = r.clone()
    o[44] = 1.5
    max_abs, _, tightest = compare.closeness(o, r, 1e-2)
    assert max_abs == pytest.approx(0.5) and tightest == pytest.approx(0.25)


def test_closeness_makes_nan_pass_no_tolerance(small_chunks):
    r = torch.ones(20)
    o = r.clone()
    o[3] = float("nan")  # an early chunk: later finite chunks must not hide it
    assert math.isnan(compare.closeness(o, r, 1e-2)[2])
