"""An extension that fails to build in the build step while its candidate goes on (a try/except around load_inline,
a PyTorch fallback) is recorded there and replayed in the worker: the worker does not compile it again, and the
pair's notes say the candidate ran without it (kernelrl/kernelbench/failed_builds.py)."""

import json
import shutil
from pathlib import Path

import pytest

from kernelrl.kernelbench import failed_builds
from kernelrl.kernelbench.build import extension_dir
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kernelbench.test_worker import TASK

NINJA = 'build main.o: compile {folder}/main.cpp\nbuild k.so: link main.o\n'


def _build_folder(root: Path, source: str = "int f() { return undeclared; }") -> Path:
    folder = root / "k"
    folder.mkdir(parents=True)
    (folder / "main.cpp").write_text(source)
    (folder / "build.ninja").write_text(NINJA.format(folder=folder))
    return folder


def _failing_ninja(build_directory, verbose, error_prefix):
    raise RuntimeError(f"{error_prefix}: main.cpp:1:20: error: 'undeclared' was not declared in this scope")


def _record_one(folder: Path) -> list[dict]:
    failures: list[dict] = []
    with pytest.raises(RuntimeError):
        failed_builds.recording(_failing_ninja, failures)(str(folder), False, "Error building extension 'k'")
    return failures


def test_a_failed_build_is_recorded_with_its_first_error_and_raised_as_before(tmp_path):
    (failure,) = _record_one(_build_folder(tmp_path))
    assert failure["extension"] == "k"
    assert failure["error"] == "Error building extension 'k': main.cpp:1:20: error: 'undeclared' was not declared " \
                               "in this scope"
    assert failure["message"].startswith("Error building extension 'k'")


def test_a_compiler_killed_while_builds_ran_in_parallel_is_not_recorded(tmp_path):
    def killed(build_directory, verbose, error_prefix):
        raise RuntimeError(f"{error_prefix}: c++: fatal error: Killed signal terminated program cc1plus")

    failures: list[dict] = []
    with pytest.raises(RuntimeError, match="Killed signal"):
        failed_builds.recording(killed, failures)(str(_build_folder(tmp_path)), False, "Error building extension 'k'")
    assert failures == []  # the worker builds it again: another try could succeed


def test_the_same_build_is_replayed_without_running_the_compiler(tmp_path, monkeypatch):
    folder = _build_folder(tmp_path / "ext")
    failed_builds.write_record(tmp_path / "ext", _record_one(folder))
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    ran, notes = [], []
    replay = failed_builds.replaying(lambda *a: ran.append(a), notes.append)
    with pytest.raises(RuntimeError, match="Error building extension 'k'"):
        replay(str(folder), False, "Error building extension 'k'")
    assert ran == [] and len(notes) == 1 and "without compiling" in notes[0]


def test_a_build_whose_sources_changed_runs_again(tmp_path, monkeypatch):
    folder = _build_folder(tmp_path / "ext")
    failed_builds.write_record(tmp_path / "ext", _record_one(folder))
    (folder / "main.cpp").write_text("int f() { return 1; }")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    ran, notes = [], []
    failed_builds.replaying(lambda *a: ran.append(a), notes.append)(str(folder), False, "Error building extension 'k'")
    assert len(ran) == 1 and notes == []


def test_the_fingerprint_does_not_depend_on_where_the_build_folder_is(tmp_path):
    a, b = _build_folder(tmp_path / "a"), _build_folder(tmp_path / "b")
    assert failed_builds.fingerprint(a) == failed_builds.fingerprint(b)
    (b / "main.cpp").write_text("int f() { return 2; }")
    assert failed_builds.fingerprint(a) != failed_builds.fingerprint(b)


def test_no_failure_leaves_no_record(tmp_path):
    (tmp_path / failed_builds.RECORD).write_text(json.dumps([{"fingerprint": "x"}]))
    failed_builds.write_record(tmp_path, [])
    assert not (tmp_path / failed_builds.RECORD).exists() and failed_builds.read_record(tmp_path) == {}


# A real build (g++ and ninja, about 20 s): it fails, the candidate catches it and computes with PyTorch.
CAUGHT_BUILD_FAILURE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

try:
    ext = load_inline("never_builds", cpp_sources="torch::Tensor relu(torch::Tensor x) { return undeclared(x); }",
                      functions=["relu"])
except RuntimeError:
    ext = None

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''


@pytest.mark.skipif(shutil.which("ninja") is None or shutil.which("c++") is None, reason="needs ninja and c++")
def test_a_caught_build_failure_is_built_once_and_named_in_the_pair_s_notes(tmp_path):
    task = tmp_path / "tasks" / "a.py"
    cand = tmp_path / "cands" / "a.py"
    for path, text in ((task, TASK), (cand, CAUGHT_BUILD_FAILURE)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    ext = tmp_path / "ext"
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=20.0,
                          extensions_dir=str(ext), compile_timeout_s=300.0)
    built = []
    out = run_pairs([(str(task), str(cand))], settings, on_build=built.append)
    (outcome,) = built
    assert outcome.ok and [f["extension"] for f in outcome.failed] == ["never_builds"]
    assert (extension_dir(ext, cand) / failed_builds.RECORD).exists()
    assert pair_verdict(out[0]) == (True, None)  # its fallback is right: the verdict is the fallback's
    notes = [n for r in out[0] for n in (r.get("extra") or {}).get("notes", [])]
    assert any("'never_builds' failed to build in the build step" in n and "without compiling" in n for n in notes)
