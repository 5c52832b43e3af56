"""kb eval builds every candidate's extensions first, in parallel, each in its own folder, with its own timeout and
verdicts; the worker then only loads, so a slow compile is never judged as a hang. (CPU: a stand-in 'build' is a
slow import that leaves a marker in the candidate's extension folder, as torch's builder leaves a library.)"""

from pathlib import Path

from kernelrl.kernelbench.build import build_extensions, extension_dir, needs_build
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kernelbench.test_worker import TASK

SLOW_BUILD = '''
# built with load_inline in real candidates; here a 4 s "compile" the first time this folder is used
import os, time
from pathlib import Path
import torch
import torch.nn as nn

marker = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "built"
if not marker.exists():
    time.sleep(4)
    marker.write_text("ok")
    with open(marker.parent / "builds.log", "a") as log:  # its own folder: the one place a build may write
        log.write("built\\n")

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''

# the same stand-in build, at the first forward (as CUDA-L1's kernels often build: in __init__ or when first called)
LAZY_BUILD = '''
# load_inline, at the first call
import os, time
from pathlib import Path
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.built = False

    def forward(self, x):
        marker = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "built"
        if not self.built and not marker.exists():
            time.sleep(4)
            marker.write_text("ok")
            with open(marker.parent / "builds.log", "a") as log:
                log.write("built\\n")
        self.built = True
        return torch.relu(self.fc(x))
'''

FAILING_BUILD = '''
# load_inline
raise RuntimeError("Error building extension 'k': nvcc failed")
class ModelNew:
    pass
'''

ENDLESS_BUILD = '''
# load_inline
import time
time.sleep(600)
class ModelNew:
    pass
'''


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_only_candidates_with_torch_extensions_are_built():
    assert needs_build(SLOW_BUILD) and needs_build(FAILING_BUILD)
    assert not needs_build("class ModelNew:\n    pass\n")


def test_each_candidate_builds_in_a_folder_named_by_its_contents(tmp_path):
    a = _write(tmp_path / "a", "x.py", SLOW_BUILD)
    b = _write(tmp_path / "b", "x.py", SLOW_BUILD.replace("4 s", "four s"))
    c = _write(tmp_path / "c", "y.py", SLOW_BUILD)
    assert extension_dir("R", a) != extension_dir("R", b)  # same name, other contents: never built over each other
    assert extension_dir("R", a) == extension_dir("R", c)


QUICK_BUILD = SLOW_BUILD.replace("time.sleep(4)", "import tempfile; tempfile.mkstemp()")  # a temporary file left


def test_a_build_leaves_no_temporary_files_in_its_folder(tmp_path):
    quick = _write(tmp_path, "quick.py", QUICK_BUILD)
    out = build_extensions([quick], tmp_path / "ext", timeout_s=60)
    folder = extension_dir(tmp_path / "ext", quick)
    assert out[str(quick)].ok and (folder / "built").exists() and not (folder / ".tmp").exists()


def test_a_failed_build_is_a_compile_error(tmp_path):
    failing = _write(tmp_path, "failing.py", FAILING_BUILD)
    out = build_extensions([failing], tmp_path / "ext", timeout_s=300)
    assert out[str(failing)].error.startswith("compile error: RuntimeError: Error building extension")


def test_a_build_finds_a_candidate_given_by_a_relative_path(tmp_path, monkeypatch):
    """The build process works in its own scratch folder; paths given relative to the run's still name the files."""
    _write(tmp_path, "failing.py", FAILING_BUILD)
    monkeypatch.chdir(tmp_path)
    out = build_extensions([Path("failing.py")], "ext", timeout_s=300)
    assert out["failing.py"].error.startswith("compile error: RuntimeError: Error building extension")


def _builds_logged(root: Path) -> int:
    """How many stand-in builds ran, build step and worker together (each logs in its candidate's folder)."""
    return sum(p.read_text().count("built") for p in root.glob("*/builds.log"))


def test_a_build_past_its_timeout_is_a_compile_timeout(tmp_path):
    endless = _write(tmp_path, "endless.py", ENDLESS_BUILD)
    out = build_extensions([endless], tmp_path / "ext", timeout_s=3)
    assert out[str(endless)].error.startswith("compile timeout: ")


def test_a_slow_compile_is_not_judged_as_a_hang(tmp_path):
    task = _write(tmp_path / "tasks", "a.py", TASK)
    cands = [_write(tmp_path / "cands", f"a{i}.py", SLOW_BUILD + f"\n# variant {i}\n") for i in range(2)]
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=2.0,
                          extensions_dir=str(tmp_path / "ext"), compile_timeout_s=60.0)
    built = []
    out = run_pairs([(str(task), str(c)) for c in cands], settings, on_build=built.append)
    assert len(built) == 2 and all(b.ok for b in built)
    assert [pair_verdict(out[i]) for i in range(2)] == [(True, None), (True, None)]
    assert _builds_logged(tmp_path / "ext") == 2  # both in the build step: the worker only loaded them


def test_a_build_at_the_first_forward_happens_in_the_build_step(tmp_path):
    task = _write(tmp_path / "tasks", "a.py", TASK)
    cand = _write(tmp_path / "cands", "lazy.py", LAZY_BUILD)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=3.0,
                          extensions_dir=str(tmp_path / "ext"), compile_timeout_s=60.0)
    out = run_pairs([(str(task), str(cand))], settings)
    assert pair_verdict(out[0]) == (True, None)
    assert _builds_logged(tmp_path / "ext") == 1  # in the build step's warm-up: the worker found it built


def test_a_warm_up_that_fails_for_another_reason_is_left_to_the_worker(tmp_path):
    task = _write(tmp_path / "tasks", "a.py", TASK)
    cand = _write(tmp_path / "cands", "raises.py", LAZY_BUILD.replace("self.built = True", "raise ValueError('bad')"))
    out = build_extensions([cand], tmp_path / "ext", tasks={str(cand): str(task)})
    assert out[str(cand)].ok


def test_a_warm_up_that_hangs_is_cut_at_its_own_limit_and_left_to_the_worker(tmp_path):
    task = _write(tmp_path / "tasks", "a.py", TASK)
    cand = _write(tmp_path / "cands", "hangs.py", LAZY_BUILD.replace("self.built = True", "time.sleep(600)"))
    out = build_extensions([cand], tmp_path / "ext", timeout_s=300, tasks={str(cand): str(task)},
                           warm_up_timeout_s=3)
    assert out[str(cand)].ok and "stopped after 3 s" in out[str(cand)].note  # its own limit, not the compile one
