"""The KernelBench dynamic evaluation worker on the CPU: honest candidates pass with a finite speedup over eager;
each kind of cheat or failure gets its named verdict; hangs and crashes become verdicts and the run continues."""

import csv
import json
import math
from pathlib import Path

import pytest

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.aggregate import aggregate
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs, task_result
from tests.kb_helpers import pairs_in
from tests.kb_helpers import task as small_task

TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [16]
'''

HEAD = '''
import os, time, ctypes, resource
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.cache = None

    def forward(self, x):
'''

BODIES = {
    "honest": "return torch.addmm(self.fc.bias, x, self.fc.weight.t()).clamp_min(0)",
    "wrong": "return torch.relu(self.fc(x)) + 1e-2",
    "inplace": "y = torch.relu(self.fc(x)); x.mul_(2); return y",
    "returns_input": "return x",
    "caching": "if self.cache is None:\n            self.cache = torch.relu(self.fc(x))\n        return self.cache",
    "subclass": "class T(torch.Tensor):\n            pass\n        return torch.relu(self.fc(x)).as_subclass(T)",
    "raises": "raise ValueError('nope')",
    "hangs": "time.sleep(1000)",
    "exits": "os._exit(3)",
    "segfaults": "resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); ctypes.memmove(8, 16, 8)",  # unaudited
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("kb")
    (d / "task.py").write_text(TASK)
    pairs, names = [], list(BODIES)
    for name in names:
        (d / f"{name}.py").write_text(HEAD + "        " + BODIES[name] + "\n")
        pairs.append((d / "task.py", d / f"{name}.py"))
    pairs.append((d / "task.py", d / "honest.py"))  # after the hang and the crashes: still evaluated
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=3, calls_per_round=2, hang_timeout_s=12.0)
    out = run_pairs([(str(t), str(c)) for t, c in pairs], settings)
    return {name: out[i] for i, name in enumerate(names)} | {"honest_again": out[len(names)]}


def test_honest_candidate_passes_with_a_finite_speedup(results):
    for key in ("honest", "honest_again"):
        ok, reason = pair_verdict(results[key])
        assert ok, reason
        (rec,) = results[key]
        assert rec["baseline"] == "eager" and math.isfinite(rec["speedup"]) and rec["speedup"] > 0
        assert rec["max_abs_err"] < 1e-4
    rows = aggregate([task_result(k, r, ("eager",)) for k, r in results.items()], baselines=("eager",))
    assert rows[0]["tasks"] == len(results) and rows[0]["success"] == 2


def test_a_timed_pair_records_each_side_s_spread(results):
    """p10 and p90 of each side's timed calls: what a self-pair reading off 1.00 is explained by."""
    (rec,) = results["honest"]
    spread = rec["extra"]["time_spread"]
    assert set(spread) == {"candidate", "eager"}
    for side, s in spread.items():
        assert s["n"] >= 1 and s["p10"] <= s["p90"]
        assert s["p10"] <= (rec["candidate_us"] if side == "candidate" else rec["baseline_us"]) <= s["p90"]


@pytest.mark.parametrize("name,expected", [
    ("wrong", "wrong values"), ("inplace", "modified inputs"), ("returns_input", "returned an input"),
    ("subclass", "tensor subclass"), ("raises", "exception: ValueError: nope")])
def test_named_verdicts(results, name, expected):
    ok, reason = pair_verdict(results[name])
    assert not ok and reason.startswith(expected), reason


def test_caching_fails(results):
    ok, reason = pair_verdict(results["caching"])
    assert not ok and reason.startswith("stale result"), reason


def test_hang_and_crashes_become_verdicts(results):
    ok, reason = pair_verdict(results["hangs"])
    assert not ok and reason.startswith("hang"), reason
    for name in ("exits", "segfaults"):
        ok, reason = pair_verdict(results[name])
        assert not ok and reason.startswith("crash"), (name, reason)


def test_kb_eval_cpu_dry_run(tmp_path, capsys):
    from kernelrl.cli import main

    task = (TASKS_DIR / "7_Softmax.py").read_text()
    (tmp_path / "7_Softmax.py").write_text(task.replace("class Model(", "class ModelNew("))
    code = main(["kb", "eval", "--tasks", str(TASKS_DIR / "7_Softmax.py"), str(TASKS_DIR / "5_SumDim.py"),
                 "--candidates", str(tmp_path / "7_Softmax.py"), "--device", "cpu", "--rounds", "2",
                 "--csv", str(tmp_path / "kb.csv"), "--db", str(tmp_path / "r.db")])
    out = capsys.readouterr().out
    assert code == 1, out  # 5_SumDim has no candidate
    assert "KernelBench dynamic verdicts (cpu)" in out and "correct" in out and "1 of 2 pairs correct" in out
    assert "eager" in out and "success" in out
    with open(tmp_path / "kb.csv", newline="") as f:
        rows = {r["task"]: r for r in csv.DictReader(f)}
    assert rows["7_Softmax"]["baseline"] == "eager" and rows["7_Softmax"]["verified"] == "1"
    assert float(rows["7_Softmax"]["speedup"]) > 0 and rows["7_Softmax"]["gpu"] == "cpu"
    assert rows["5_SumDim"]["verified"] == "0" and "no candidate" in rows["5_SumDim"]["reason"]


def test_kb_eval_stores_each_pair_in_the_results_database(tmp_path):
    from kernelrl.cli import main
    from kernelrl.db.database import Database

    task = (TASKS_DIR / "7_Softmax.py").read_text()
    (tmp_path / "7_Softmax.py").write_text(task.replace("class Model(", "class ModelNew("))
    main(["kb", "eval", "--tasks", str(TASKS_DIR / "7_Softmax.py"), str(TASKS_DIR / "5_SumDim.py"),
          "--candidates", str(tmp_path / "7_Softmax.py"), "--device", "cpu", "--rounds", "2",
          "--db", str(tmp_path / "r.db")])
    db = Database(tmp_path / "r.db")
    rows = {(r["task"], r["baseline"]): r for r in db.kb_rows("cpu")}
    db.close()
    assert rows[("7_Softmax", "eager")]["verified"] and rows[("7_Softmax", "eager")]["speedup"] > 0
    assert rows[("7_Softmax", "eager")]["kernelbench_rule"] is True
    spread = json.loads(rows[("7_Softmax", "eager")]["time_spread"])  # kept beside the ratio it qualifies
    assert set(spread) == {"candidate", "eager"} and spread["candidate"]["n"] >= 2
    assert not rows[("5_SumDim", "")]["verified"] and "no candidate" in rows[("5_SumDim", "")]["reason"]


LOG_DOMAIN_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, p, q):
        return torch.nn.functional.kl_div(torch.log(p), q, reduction="batchmean")

def get_inputs():
    return [torch.rand(4, 32).softmax(dim=-1), torch.rand(4, 32).softmax(dim=-1)]

def get_init_inputs():
    return []
'''


def test_inputs_the_harness_draws_stay_in_the_task_s_domain(tmp_path):
    """KernelBench's 98_KLDivLoss takes the log of a probability: the harness's own input distribution must keep
    the reference finite, or an honest candidate is judged by the reference's NaN."""
    (tmp_path / "task.py").write_text(LOG_DOMAIN_TASK)
    (tmp_path / "same.py").write_text(LOG_DOMAIN_TASK.replace("class Model(", "class ModelNew("))
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=12.0)
    out = run_pairs([(str(tmp_path / "task.py"), str(tmp_path / "same.py"))], settings)
    ok, reason = pair_verdict(out[0])
    assert ok, reason


# -- cheats that pass a harness without timed checks or torch guards, beside honest candidates ------------------------
ADVERSARIAL_DIR = Path(__file__).resolve().parents[1] / "gpu" / "kb_adversarial"

STATIC_ONLY = '''
import torch
import torch.nn as nn

_softmax = torch.softmax
if torch.cuda.is_available():  # a path the CPU worker never takes: only the static finding sees it
    torch.softmax = lambda *a, **k: (_softmax(*a, **k), _softmax(*a, **k))[1]


class ModelNew(nn.Module):
    def forward(self, x):
        return _softmax(x, dim=-1)
'''

GLOBAL_HOOK = '''
import torch
import torch.nn as nn


def _slow_reference(module, args):
    if type(module).__name__ == "Model":  # only the reference pays
        torch.softmax(args[0], dim=-1)


torch.nn.modules.module.register_module_forward_pre_hook(_slow_reference)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
'''

RAISES_WHILE_TIMED = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, A, B):
        self.calls += 1
        if self.calls > 10:  # past the checks and the warm-up
            raise RuntimeError("late")
        return A @ B
'''

# name: (task, candidate source or corpus file, what its reason starts with)
CHEATS = {
    # 12 honest calls: on this fixture's settings (1_Matmul: 7 checks, 2 warm-up, 2 rounds of 2) stale only on the
    # last timed call, which only the always-checked last call of a round is sure to catch
    "stale_after_checks": ("1_Matmul", ADVERSARIAL_DIR / "stale_after_checks.py", "during timing: wrong values"),
    "slows_reference": ("7_Softmax", ADVERSARIAL_DIR / "slows_reference.py",
                        "harness patch: torch.softmax replaced during load"),
    "slows_reference_later": ("1_Matmul", ADVERSARIAL_DIR / "slows_reference_later.py",
                              "harness patch: torch.matmul replaced outside the candidate's calls"),
    "static_only": ("7_Softmax", STATIC_ONLY, "harness patch: the source assigns to torch.softmax"),
    "global_hook": ("7_Softmax", GLOBAL_HOOK, "harness patch: torch.nn.modules.module._global_forward_pre_hooks = 1"),
    "raises_while_timed": ("1_Matmul", RAISES_WHILE_TIMED, "during timing: exception: RuntimeError: late"),
}


def _own_pairs(d: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(honest, cheats) as (task path, candidate path): every own task with a copy of its reference as the
    candidate (honest on the CPU, where examples/kernelbench/candidates' CUDA kernels cannot run), and CHEATS."""

    honest = []
    for task in sorted(TASKS_DIR.glob("[0-9]*_*.py")):
        cand = d / f"honest_{task.name}"
        cand.write_text(task.read_text().replace("class Model(", "class ModelNew("))
        honest.append((str(task), str(cand)))
    cheats = []
    for name, (task, source, _) in CHEATS.items():
        cand = d / f"{name}.py"
        cand.write_text(source.read_text() if isinstance(source, Path) else source)
        cheats.append((str(TASKS_DIR / f"{task}.py"), str(cand)))
    return honest, cheats


@pytest.fixture(scope="module")
def beside_cheats(tmp_path_factory):
    """Verdicts by candidate path from two runs: the cheats first, and honest candidates interleaved with the
    cheats in reverse order."""
    honest, cheats = _own_pairs(tmp_path_factory.mktemp("kb_own"))
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=60.0)
    mixed = [p for pair in zip(honest, reversed(cheats)) for p in pair] + honest[len(cheats):]
    runs = []
    for pairs in (cheats + honest, mixed):
        out = run_pairs(pairs, settings)
        runs.append({c: out[i] for i, (_, c) in enumerate(pairs)})
    return honest, cheats, runs


@pytest.mark.parametrize("name", list(CHEATS))
def test_cheat_is_rejected_for_its_reason_alone_and_beside_others(beside_cheats, name):
    _, cheats, runs = beside_cheats
    cand = cheats[list(CHEATS).index(name)][1]
    for run in runs:
        ok, reason = pair_verdict(run[cand])
        assert not ok and reason.startswith(CHEATS[name][2]), reason
        assert all(r["candidate_us"] is None and r["speedup"] is None for r in run[cand])


def test_honest_own_tasks_pass_beside_cheats_in_either_order(beside_cheats):
    honest, _, runs = beside_cheats
    assert len(honest) >= 12
    for _, cand in honest:
        for run in runs:
            ok, reason = pair_verdict(run[cand])
            assert ok, (Path(cand).name, reason)
            (rec,) = run[cand]
            assert math.isfinite(rec["speedup"]) and rec["speedup"] > 0


def test_static_tampering_decides_only_when_every_dynamic_check_passed():
    """The static finding is the verdict of a candidate the dynamic checks passed; a dynamic verdict (which names
    what the patch did) comes first. An honest source has no such finding."""
    from kernelrl.kernelbench.tamper import static_tampering

    task = (TASKS_DIR / "7_Softmax.py").read_text()
    found = static_tampering(STATIC_ONLY, task)
    assert found is not None and found.verdict.value == "harness patch" and "torch.softmax (line 7)" in str(found)
    timer = static_tampering("import time\ntime.perf_counter = lambda: 0.0\n", task)
    assert timer is not None and timer.verdict.value == "timer patch"
    assert static_tampering(task.replace("class Model(", "class ModelNew("), task) is None


@pytest.mark.parametrize("spread, rounds_run", [(None, 4), (10.0, 2)])
def test_a_pair_s_timing_stops_early_only_where_its_rounds_agree(tmp_path, spread, rounds_run):
    pairs = pairs_in(tmp_path, small_task(), {"same": "torch.tanh(x)"})
    # settle_round_s 0: every round counts as large; spread 10: any two rounds agree
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=4, calls_per_round=2, settle_spread=spread,
                          settle_round_s=0.0)
    (rec,) = run_pairs(pairs, settings)[0]
    assert pair_verdict([rec]) == (True, None) and rec["extra"]["rounds_run"] == rounds_run
