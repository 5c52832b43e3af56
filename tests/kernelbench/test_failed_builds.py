"""An extension that fails to build in the build step while its candidate goes on (a try/except around load_inline,
a PyTorch fallback) is recorded there and replayed in the worker: the worker does not compile it again, and the
pair's notes say the candidate ran without it (kernelrl/kernelbench/failed_builds.py)."""

import multiprocessing as mp
import os
import shutil
from pathlib import Path

import sys

import pytest

from kernelrl.kernelbench import build, failed_builds
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kb_helpers import candidate, task

NINJA = 'cflags = -O2\nbuild main.o: compile {folder}/main.cpp\nbuild k.so: link main.o\n'
DIAGNOSTIC = "main.cpp:1:20: error: 'undeclared' was not declared in this scope"


def _build_folder(root: Path, source: str = "int f() { return undeclared; }") -> Path:
    """A build folder as torch leaves it: build.ninja naming its sources by absolute path."""
    folder = root / "k"
    folder.mkdir(parents=True)
    (folder / "main.cpp").write_text(source)
    (folder / "build.ninja").write_text(NINJA.format(folder=folder.resolve()))
    return folder


def _failing_ninja(build_directory, verbose, error_prefix):
    raise RuntimeError(f"{error_prefix}: [1/2] c++ -c main.cpp\n{DIAGNOSTIC}\nninja: build stopped")


def _record(folder, failing=_failing_ninja) -> list[dict]:
    failures: list[dict] = []
    with pytest.raises(RuntimeError):
        failed_builds.recording(failing, failures)(str(folder), False, "Error building extension 'k'")
    return failures


def _replay(folder, failures, original=None):
    ran, notes = [], []
    replay = failed_builds.replaying(original or (lambda *a: ran.append(a)), failures, notes.append)
    return replay, ran, notes


def test_a_failed_build_is_recorded_with_its_first_error_and_raised_as_before(tmp_path):
    (failure,) = _record(_build_folder(tmp_path))
    assert (failure["extension"], failure["error"]) == ("k", DIAGNOSTIC)
    assert failure["message"].startswith("Error building extension 'k'")


def test_a_compiler_killed_while_builds_ran_in_parallel_is_not_recorded(tmp_path):
    def killed(build_directory, verbose, error_prefix):  # a diagnostic line, then the compiler killed
        raise RuntimeError(f"{error_prefix}: {DIAGNOSTIC}\nc++: fatal error: Killed signal terminated program cc1plus")

    assert _record(_build_folder(tmp_path), killed) == []  # the worker builds it again: another try could succeed


def test_the_same_build_is_replayed_without_running_the_compiler(tmp_path):
    folder = _build_folder(tmp_path)
    replay, ran, notes = _replay(folder, _record(folder))
    with pytest.raises(RuntimeError, match="Error building extension 'k'"):
        replay(str(folder), False, "Error building extension 'k'")
    assert ran == [] and len(notes) == 1 and "without compiling" in notes[0]


def test_a_build_whose_sources_changed_runs_again(tmp_path):
    folder = _build_folder(tmp_path)
    failures = _record(folder)
    (folder / "main.cpp").write_text("int f() { return 1; }")
    replay, ran, notes = _replay(folder, failures)
    replay(str(folder), False, "Error building extension 'k'")
    assert len(ran) == 1 and notes == []


def test_a_build_that_fails_in_the_worker_is_named_in_the_notes(tmp_path):
    replay, _, notes = _replay(_build_folder(tmp_path), [], original=_failing_ninja)
    with pytest.raises(RuntimeError):
        replay(str(tmp_path / "k"), False, "Error building extension 'k'")
    assert notes == [f"extension 'k' failed to build in the worker ({DIAGNOSTIC})"]


def test_the_fingerprint_does_not_depend_on_where_the_build_folder_is(tmp_path):
    a, b = _build_folder(tmp_path / "a"), _build_folder(tmp_path / "b")
    assert failed_builds.fingerprint(a) == failed_builds.fingerprint(b)
    (b / "main.cpp").write_text("int f() { return 2; }")
    assert failed_builds.fingerprint(a) != failed_builds.fingerprint(b)


def test_a_relative_build_folder_still_fingerprints_its_sources(tmp_path, monkeypatch):
    """load_inline(build_directory="build"): the relative name is not replaced in the text (it is also ninja's
    keyword), and the sources' contents count."""
    monkeypatch.chdir(tmp_path)
    folder = _build_folder(tmp_path / "w").rename(tmp_path / "build")
    (folder / "build.ninja").write_text(NINJA.format(folder=folder.resolve()))
    before = failed_builds.fingerprint("build")
    (folder / "main.cpp").write_text("int f() { return 3; }")
    assert failed_builds.fingerprint("build") != before


def test_the_parent_keeps_only_well_formed_reports():
    good = {"extension": "k", "fingerprint": "ab", "error": "e", "message": "m" * 10_000}
    kept = failed_builds.checked([good, {"extension": 1}, "x", {**good, "fingerprint": None}])
    assert len(kept) == 1 and len(kept[0]["message"]) == 4000
    assert failed_builds.checked({"not": "a list"}) == []


class _MakesAFolderWhenUnpickled:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _send_a_pickle(conn, path):
    conn.send(_MakesAFolderWhenUnpickled(path))  # a candidate that reached the build process's pipe


def test_the_build_process_s_pipe_carries_json_not_pickles(tmp_path):
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send_a_pickle, args=(child, str(tmp_path / "made")))
    proc.start()
    proc.join(60)
    assert build._receive(parent) == {"error": "the build process's report was not readable"}
    assert not (tmp_path / "made").exists()


# A real build (g++ and ninja, about 20 s): it fails, the candidate catches it and computes with PyTorch.
CAUGHT_BUILD_FAILURE = '''
from torch.utils.cpp_extension import load_inline

try:
    ext = load_inline("never_builds", cpp_sources="torch::Tensor relu(torch::Tensor x) { return undeclared(x); }",
                      functions=["relu"])
except RuntimeError:
    ext = None
''' + candidate("torch.relu(x)")


@pytest.mark.skipif(shutil.which("ninja") is None or shutil.which("c++") is None, reason="needs ninja and c++")
def test_a_caught_build_failure_is_built_once_and_named_in_the_pair_s_notes(tmp_path):
    task_path = tmp_path / "tasks" / "a.py"
    cand = tmp_path / "cands" / "a.py"
    for path, text in ((task_path, task("torch.relu(x)")), (cand, CAUGHT_BUILD_FAILURE)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=20.0,
                          extensions_dir=str(tmp_path / "ext"), compile_timeout_s=300.0)
    built = []
    out = run_pairs([(str(task_path), str(cand))], settings, on_build=built.append)
    (outcome,) = built
    assert outcome.ok and [f["extension"] for f in outcome.failed] == ["never_builds"]
    assert pair_verdict(out[0]) == (True, None)  # its fallback is right: the verdict is the fallback's
    notes = [n for r in out[0] for n in (r.get("extra") or {}).get("notes", [])]
    assert any("'never_builds' failed to build in the build step" in n and "without compiling" in n for n in notes)


def test_the_worker_s_wrapper_holds_nothing_but_the_build_and_its_failures():
    # a bound method of the worker in its closure led a candidate to the worker (corpus: replaces_worker_judge)
    known: list[dict] = []
    replay = failed_builds.replaying(print, known)
    held = [c.cell_contents for c in replay.__closure__ or ()]
    assert all(getattr(h, "__self__", None) is None for h in held if h is not print)
    assert {id(h) for h in held} <= {id(print), id(known), id(failed_builds.note_by_audit)}


def test_a_failed_build_is_told_to_the_worker_s_audit_hook(tmp_path):
    seen = []
    sys.addaudithook(lambda event, args: seen.append(args[0]) if event == failed_builds.BUILD_NOTE_EVENT else None)
    replay = failed_builds.replaying(_failing_ninja, [])
    with pytest.raises(RuntimeError):
        replay(str(_build_folder(tmp_path)), False, "Error building extension 'k'")
    assert any(failed_builds.FAILED_TO_BUILD in note and "'k'" in note for note in seen)
