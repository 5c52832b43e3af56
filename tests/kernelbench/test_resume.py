"""`kb eval --resume`: a run cut short goes on where it stopped. A pair already in the database (same task and
candidate sources, deciding profile and GPU) is taken from there; an edited candidate, another profile or a pair the
evaluator itself failed runs again (CPU worker)."""

import csv
import sqlite3

import pytest

from kernelrl.cli import main
from kernelrl.harness.sandbox import landlock_abi
from tests.kb_helpers import candidate, task


def _eval(tmp_path, *extra):
    out = tmp_path / f"out{len(list(tmp_path.glob('out*.csv')))}.csv"
    code = main(["kb", "eval", "--tasks", str(tmp_path / "tasks"), "--candidates", str(tmp_path / "cands"),
                 "--device", "cpu", "--rounds", "1", "--db", str(tmp_path / "r.db"), "--csv", str(out), *extra])
    return code, {r["candidate"]: r for r in csv.DictReader(open(out))}


def _setup(tmp_path):
    for folder in ("tasks", "cands"):
        (tmp_path / folder).mkdir()
    for name, body in {"good": "torch.tanh(x)", "bad": "torch.tanh(x) + 1"}.items():
        (tmp_path / "tasks" / f"{name}.py").write_text(task())
        (tmp_path / "cands" / f"{name}.py").write_text(candidate(body))


def test_a_resumed_run_takes_every_stored_pair_and_writes_the_same_verdicts(tmp_path, capsys):
    _setup(tmp_path)
    _, first = _eval(tmp_path)
    capsys.readouterr()
    _, again = _eval(tmp_path, "--resume")
    assert "2 of 2 pairs taken from" in capsys.readouterr().out
    for name in ("good", "bad"):
        for column in ("verified", "verdict", "speedup", "correct_strict", "gpu"):
            assert again[name][column] == first[name][column], (name, column)


def test_an_edited_candidate_is_evaluated_again(tmp_path, capsys):
    _setup(tmp_path)
    _eval(tmp_path)
    edited = tmp_path / "cands" / "bad.py"
    edited.write_text(edited.read_text().replace(" + 1", " * 1.0"))  # now correct, and unlike good.py
    capsys.readouterr()
    _, again = _eval(tmp_path, "--resume")
    assert "1 of 2 pairs taken from" in capsys.readouterr().out
    assert again["bad"]["verified"] == "1"


def test_another_deciding_profile_evaluates_again(tmp_path, capsys):
    _setup(tmp_path)
    _eval(tmp_path)
    capsys.readouterr()
    _eval(tmp_path, "--resume", "--tolerance", "kernelbench")
    assert "0 of 2 pairs taken from" in capsys.readouterr().out


def test_a_pair_judged_again_resumes_from_its_latest_run(tmp_path, capsys):
    _setup(tmp_path)
    _eval(tmp_path)  # good passes: a timed row (baseline eager)
    with sqlite3.connect(tmp_path / "r.db") as conn:  # a later run judged the same pair wrong: its verdict row
        conn.execute("INSERT INTO kb_results (gpu, task, task_key, candidate, candidate_key, baseline, verified, "
                     "reason, verdict, profile, run_id, created) SELECT gpu, task, task_key, candidate, "
                     "candidate_key, '', 0, 'wrong values: later', 'wrong values', profile, 99, created + 1 "
                     "FROM kb_results WHERE candidate = 'good'")
    _, again = _eval(tmp_path, "--resume")
    assert again["good"]["verified"] == "0" and again["good"]["verdict"] == "wrong values"


@pytest.mark.skipif(not landlock_abi()[0], reason="needs Linux Landlock (harness/sandbox.py)")
def test_resumed_pairs_a_confined_run_stored_get_no_warning(tmp_path, capsys):
    _setup(tmp_path)
    _eval(tmp_path)
    capsys.readouterr()
    _eval(tmp_path, "--resume")
    assert "not confined" not in capsys.readouterr().out


def test_resumed_pairs_an_unconfined_run_stored_are_named(tmp_path, capsys, monkeypatch):
    _setup(tmp_path)
    monkeypatch.setenv("KERNELRL_SANDBOX", "off")  # the first run's workers inherit it
    _eval(tmp_path)
    monkeypatch.delenv("KERNELRL_SANDBOX")
    capsys.readouterr()
    _eval(tmp_path, "--resume")
    assert "2 of them stored by a run whose workers were not confined (sandbox: off (KERNELRL_SANDBOX=off))" \
        in capsys.readouterr().out


def test_an_acceptance_no_referee_ruled_on_is_evaluated_again(tmp_path, capsys):
    _setup(tmp_path)
    _, first = _eval(tmp_path)
    assert first["good"]["verified"] == "1" and first["good"]["referee_speedup"] != ""
    with sqlite3.connect(tmp_path / "r.db") as db:  # as a run before the referee stored it
        db.execute("UPDATE kb_results SET referee_speedup = NULL, notes = NULL")
    capsys.readouterr()
    _, again = _eval(tmp_path, "--resume")
    assert "1 of 2 pairs taken from" in capsys.readouterr().out  # the rejected pair only
    assert again["good"]["referee_speedup"] != ""
