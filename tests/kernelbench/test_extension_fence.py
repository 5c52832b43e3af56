"""A candidate may not write into another candidate's extension folder: a Python write there is refused and a
`file write`, and another candidate's built library rewritten without Python (libc through ctypes) is found at the
pair's report (kernelrl/kernelbench/extension_fence.py). The honest pairs before and after the cheats are accepted."""

import os
import shutil
from pathlib import Path

import pytest

from kernelrl.kernelbench import extension_fence
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kb_helpers import candidate, judged_in_order, task


def _lib(folder: Path, data: bytes = b"\x7fELF") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lib.so").write_bytes(data)
    return folder / "lib.so"


def test_a_pair_may_write_its_own_folder_and_not_the_root():
    writable = extension_fence.pair_writable(["/scratch", "/ext"], "/ext", "/ext/abc")
    assert [str(p) for p in writable] == ["/scratch", os.path.realpath("/ext/abc")]


def test_another_folder_s_library_rewritten_or_removed_is_a_change(tmp_path):
    own, other, gone = _lib(tmp_path / "own"), _lib(tmp_path / "other"), _lib(tmp_path / "gone")
    before = extension_fence.libraries([tmp_path], own.parent)
    assert sorted(before) == [str(gone), str(other)]
    own.write_bytes(b"rebuilt, longer")  # its own: allowed
    other.write_bytes(b"overwritten, longer")
    gone.unlink()
    _lib(tmp_path / "new")  # another worker's lazy build (Ray on one host): not counted
    assert extension_fence.changed(before, extension_fence.libraries([tmp_path], own.parent)) == [str(gone),
                                                                                                  str(other)]


def test_only_this_run_s_folders_are_watched(tmp_path):
    ours, earlier_run = _lib(tmp_path / "ours"), _lib(tmp_path / "earlier_run")
    before = extension_fence.libraries([ours.parent], tmp_path / "own")
    earlier_run.write_bytes(b"another run rebuilt it")  # another run on the machine, same shared root
    assert list(before) == [str(ours)] and extension_fence.changed(before, extension_fence.libraries(
        [ours.parent], tmp_path / "own")) == []


# the build step "builds" each candidate by importing it: a stand-in library in its own folder
VICTIM = '''
# load_inline (a stand-in: the build step's import writes the library)
import os
from pathlib import Path

lib = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "victim_ext" / "victim_ext.so"
if not lib.exists():
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(b"\\x7fELF built")
''' + candidate("torch.relu(x)")

# acts in the evaluation only (the build step's process works in <folder>/.tmp): every other candidate's library
REWRITES = '''
# load_inline
import ctypes, os
from pathlib import Path

own = Path(os.environ["TORCH_EXTENSIONS_DIR"])
if Path.cwd().name != ".tmp":
    for lib in own.parent.glob("*/*/*.so"):
        if own not in lib.parents:
            {write}
'''
THROUGH_LIBC = REWRITES.format(write='''libc = ctypes.CDLL(None)
            libc.fopen.restype = ctypes.c_void_p
            fh = libc.fopen(str(lib).encode(), b"w")
            if fh:
                libc.fputs(b"replaced", ctypes.c_void_p(fh))
                libc.fclose(ctypes.c_void_p(fh))''') + candidate("torch.relu(x)")
THROUGH_PYTHON = REWRITES.format(write='''try:
                lib.write_bytes(b"replaced")
            except OSError:
                pass''') + candidate("torch.relu(x)")


# a hard link to the victim's library from the candidate's own folder, written through, its times put back
THROUGH_A_LINK = REWRITES.format(write='''st = os.stat(lib)
            link = own / ("linked_" + lib.name)
            try:
                os.link(lib, link)
                link.write_bytes(b"replaced")
                os.utime(link, ns=(st.st_atime_ns, st.st_mtime_ns))
            except OSError:
                pass''') + candidate("torch.relu(x)")
# writes its own folder in the evaluation: allowed
OWN_WRITE = '''
# load_inline
import os
from pathlib import Path

if Path.cwd().name != ".tmp":
    (Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "own_ext").mkdir(exist_ok=True)
    (Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "own_ext" / "own_ext.so").write_bytes(b"rebuilt here")
''' + candidate("torch.relu(x)")


def test_a_candidate_that_rewrites_another_s_library_gets_file_write_and_the_honest_pairs_around_it_pass(tmp_path):
    wrong_too = THROUGH_LIBC.replace("return torch.relu(x)", "return torch.relu(x) + 1")
    judged = judged_in_order(tmp_path, {"victim": VICTIM, "libc": THROUGH_LIBC, "python": THROUGH_PYTHON,
                                        "link": THROUGH_A_LINK, "libc_and_wrong": wrong_too, "own_write": OWN_WRITE,
                                        "victim_again": VICTIM + "\n# a second honest candidate\n"})
    verdicts = [verdict for verdict, _, _ in judged]
    assert [verdicts[i] for i in (0, 5, 6)] == [(True, None)] * 3  # the victim, one writing its own folder, another
    for i in (1, 4):  # through libc; and with wrong values too: the write is named
        assert verdicts[i][1].startswith("file write: the candidate rewrote or removed another candidate's built "
                                         "extension"), verdicts[i]
    for i in (2, 3):  # through Python; through a hard link (its times put back)
        assert verdicts[i][1].startswith("file write: the candidate wrote outside the worker's scratch folder"), \
            verdicts[i]


# its answer depends on its built library's bytes: right only if the worker loads what its build step built
CHECKS_ITS_LIBRARY = '''
# load_inline (a stand-in: the build step's import writes the library)
import os
from pathlib import Path

lib = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "checked_ext" / "checked_ext.so"
if not lib.exists():
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(b"\\x7fELF built")
OFFSET = 0 if lib.read_bytes() == b"\\x7fELF built" else 1
''' + candidate("torch.relu(x) + OFFSET")
# plants a file in every other candidate's folder (an object file a rebuild would link), through libc
PLANTS = '''
# load_inline
import ctypes, os
from pathlib import Path

own = Path(os.environ["TORCH_EXTENSIONS_DIR"])
if Path.cwd().name != ".tmp":
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    for folder in own.parent.glob("*/*/"):
        if own not in folder.parents:
            fh = libc.fopen(str(folder / "planted.o").encode(), b"w")
            if fh:
                libc.fclose(ctypes.c_void_p(fh))
''' + candidate("torch.relu(x)")


def test_a_candidate_whose_library_another_rewrote_is_judged_on_its_own_build(tmp_path):
    (writer, _, _), (victim, notes, _) = judged_in_order(tmp_path, {"libc": THROUGH_LIBC, "victim": CHECKS_ITS_LIBRARY})
    assert writer[1].startswith("file write"), writer
    assert victim == (True, None), victim
    assert "had changed since its build, or its build had not finished (checked_ext/checked_ext.so)" in notes, notes


def test_a_file_planted_in_another_candidate_s_folder_is_cleared_before_it_loads(tmp_path):
    (_, _, _), (victim, notes, _) = judged_in_order(tmp_path, {"plants": PLANTS, "victim": CHECKS_ITS_LIBRARY})
    assert victim == (True, None), victim
    assert "checked_ext/planted.o" in notes, notes


def test_a_folder_as_built_reads_the_same_and_its_build_scratch_does_not_count(tmp_path):
    lib = _lib(tmp_path / "own" / "ext")
    record = extension_fence.folder_contents(tmp_path / "own")
    (tmp_path / "own" / ".tmp").mkdir()
    (tmp_path / "own" / ".tmp" / "scratch.o").write_text("")
    assert extension_fence.altered(tmp_path / "own", record) == []
    lib.write_bytes(b"\x7fELF other")
    assert extension_fence.altered(tmp_path / "own", record) == ["ext/lib.so"]


def test_a_folder_s_links_and_fifos_are_named_not_followed_or_opened(tmp_path):
    folder = tmp_path / "own"
    folder.mkdir()
    os.symlink("/dev/zero", folder / "zeros.so")
    os.mkfifo(folder / "pipe.so")
    contents = extension_fence.folder_contents(folder)
    assert contents["zeros.so"] == "link:/dev/zero" and contents["pipe.so"].startswith("mode:")
    extension_fence.empty(folder)
    assert list(folder.iterdir()) == [] and Path("/dev/zero").exists()


# sets a variable a later pair's build would read (a compiler, its flags)
SETS_ENVIRONMENT = '''
import os
os.environ["KRL_PLANTED"] = "1"
''' + candidate("torch.relu(x)")
# right only where the environment is as the worker began
READS_ENVIRONMENT = '''
import os
OFFSET = 1 if "KRL_PLANTED" in os.environ else 0
''' + candidate("torch.relu(x) + OFFSET")


def test_a_pair_s_environment_does_not_reach_the_next_pair(tmp_path):
    (first, _, _), (second, _, _) = judged_in_order(tmp_path, {"sets": SETS_ENVIRONMENT, "reads": READS_ENVIRONMENT})
    assert first == (True, None) and second == (True, None), (first, second)


# a real shared library, built with the C compiler at import (the build step's), and loaded by ctypes; its answer is
# wrong if the library was loaded in this process before its own load (another pair loaded it)
LOADS_ITS_LIBRARY = '''
# load_inline (a stand-in: a C library built at import)
import ctypes, os, subprocess
from pathlib import Path

lib = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "c_ext" / "c_ext.so"
if not lib.exists():
    lib.parent.mkdir(parents=True, exist_ok=True)
    src = lib.parent / "c_ext.c"
    src.write_text("int zero(void) { return 0; }\\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
OFFSET = 1 if str(lib.resolve()) in Path("/proc/self/maps").read_text() else 0
ctypes.CDLL(str(lib))
''' + candidate("torch.relu(x) + OFFSET")
# loads every other candidate's library into the worker (the loader hands it out later by its path)
LOADS_OTHERS = '''
# load_inline
import ctypes, os
from pathlib import Path

own = Path(os.environ["TORCH_EXTENSIONS_DIR"])
if Path.cwd().name != ".tmp":
    for lib in own.parent.glob("*/*/*.so"):
        if own not in lib.parents:
            ctypes.CDLL(str(lib))
''' + candidate("torch.relu(x)")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_library_another_pair_loaded_is_not_what_its_candidate_loads(tmp_path):
    (loader, _, _), (victim, _, _) = judged_in_order(tmp_path, {"loads": LOADS_OTHERS, "victim": LOADS_ITS_LIBRARY})
    assert victim == (True, None), victim  # judged in a fresh worker: its library loaded there for the first time


def test_a_candidate_the_build_step_did_not_build_is_not_emptied_between_its_pairs(tmp_path):
    lazy = '''
import os
from pathlib import Path

lib = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "lazy_ext" / "lazy_ext.so"
if not lib.exists():
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(b"\\\\x7fELF built in the worker")
''' + candidate("torch.relu(x)")
    (task_a := tmp_path / "a.py").write_text(task("torch.relu(x)"))
    (task_b := tmp_path / "b.py").write_text(task("torch.relu(x)"))
    (cand := tmp_path / "lazy.py").write_text(lazy)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=20.0,
                          extensions_dir=str(tmp_path / "ext"))
    out = run_pairs([(str(task_a), str(cand)), (str(task_b), str(cand))], settings)
    notes = [n for i in (0, 1) for r in out[i] for n in (r.get("extra") or {}).get("notes", [])]
    assert [pair_verdict(out[i]) for i in (0, 1)] == [(True, None)] * 2 and not any("emptied" in n for n in notes)


def test_a_lock_left_by_an_unfinished_build_counts_as_a_change(tmp_path):
    _lib(tmp_path / "own" / "ext")
    (tmp_path / "own" / "ext" / "lock").write_text("")
    record = extension_fence.folder_contents(tmp_path / "own")
    assert extension_fence.altered(tmp_path / "own", record) == ["ext/lock"]


def test_a_folder_past_the_walk_s_bounds_reads_oversize_and_never_recurses(tmp_path, monkeypatch):
    deep = tmp_path / "own"
    path = deep
    for _ in range(40):  # deeper than MAX_DEPTH (and, at 1200, than Python's recursion limit for os.walk)
        path = path / "d"
    path.mkdir(parents=True)
    assert extension_fence.folder_contents(deep) == {"": extension_fence.OVERSIZE}
    assert extension_fence.altered(deep, {"": extension_fence.OVERSIZE}) == [""]
    assert extension_fence.libraries([tmp_path], tmp_path / "elsewhere") == {}  # read as far as the bounds go


def test_a_file_is_hashed_no_further_than_the_walk_s_byte_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(extension_fence, "MAX_HASHED_BYTES", 10)
    _lib(tmp_path / "own", b"x" * 11)
    assert extension_fence.folder_contents(tmp_path / "own") == {"": extension_fence.OVERSIZE}


@pytest.mark.skipif(shutil.which("cc") is None or not Path("/proc/self/maps").exists(), reason="needs cc and /proc")
def test_a_loaded_library_counts_under_its_path_after_its_file_is_replaced(tmp_path):
    import ctypes
    import subprocess
    src, lib = tmp_path / "x.c", tmp_path / "ext" / "x.so"
    lib.parent.mkdir()
    src.write_text("int one(void) { return 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    ctypes.CDLL(str(lib))
    lib.unlink()
    lib.write_bytes(b"\x7fELF put back")  # a new file under the same path: the loader still hands out the old one
    assert str(lib.resolve()) in extension_fence.mapped_libraries(tmp_path)


# sets a variable in C (libc's setenv: os.environ never sees it, every child process inherits it)
SETS_C_ENVIRONMENT = '''
import ctypes
ctypes.CDLL(None).setenv(b"KRL_PLANTED", b"1", 1)
''' + candidate("torch.relu(x)")
# right only where a child process sees the environment as the worker began
CHILD_READS_ENVIRONMENT = '''
import subprocess
OFFSET = int(subprocess.run(["sh", "-c", "echo ${KRL_PLANTED:-0}"], capture_output=True, text=True).stdout)
''' + candidate("torch.relu(x) + OFFSET")


def test_a_pair_s_c_level_environment_does_not_reach_the_next_pair_s_children(tmp_path):
    (first, _, _), (second, _, _) = judged_in_order(tmp_path, {"sets": SETS_C_ENVIRONMENT,
                                                         "reads": CHILD_READS_ENVIRONMENT})
    assert first == (True, None) and second == (True, None), (first, second)


def _builds_relative(value: int) -> str:
    """Builds and loads `build/rel.so` relative to its working directory (a folder every pair of a worker shares),
    whose one function returns `value`; its answer is right only if that is what its load gave it."""
    return f'''
import ctypes, os, subprocess
from pathlib import Path

Path("build").mkdir(exist_ok=True)
Path("build/rel.c").write_text("int value(void) {{ return {value}; }}\\n")
subprocess.run(["cc", "-shared", "-fPIC", "-o", "build/rel.so", "build/rel.c"], check=True)
OFFSET = ctypes.CDLL(os.path.abspath("build/rel.so")).value() - {value}
''' + candidate("torch.relu(x) + OFFSET")


# imports a module by a name it wrote itself, beside it in its working directory
def _imports_helper(value: int) -> str:
    return f'''
import sys
from pathlib import Path

Path("krl_helper.py").write_text("VALUE = {value}\\n")
sys.path.insert(0, str(Path.cwd()))
helper = __import__("krl_" + "helper")  # a name the requirements check cannot read: a file it wrote itself
sys.path.pop(0)
OFFSET = helper.VALUE - {value}
''' + candidate("torch.relu(x) + OFFSET")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_two_honest_candidates_building_into_the_same_relative_folder_each_get_their_own_library(tmp_path):
    judged = judged_in_order(tmp_path, {"seven": _builds_relative(7), "zero": _builds_relative(0)})
    assert [verdict for verdict, _, _ in judged] == [(True, None)] * 2, judged


def test_two_honest_candidates_importing_the_same_module_name_each_get_their_own_module(tmp_path):
    judged = judged_in_order(tmp_path, {"seven": _imports_helper(7), "zero": _imports_helper(0)})
    assert [verdict for verdict, _, _ in judged] == [(True, None)] * 2, judged


# registers an operator namespace with the dispatcher; a second candidate doing the same failed on the first's
def _registers_namespace(tag: str) -> str:
    return f'''
import torch
LIB = torch.library.Library("krl_ns", "DEF")  # {tag}
LIB.define("twice(Tensor x) -> Tensor")
''' + candidate("torch.relu(x)")


def test_two_honest_candidates_registering_the_same_operator_namespace_both_pass(tmp_path):
    judged = judged_in_order(tmp_path, {"first": _registers_namespace("first"), "second": _registers_namespace("2")})
    assert [verdict for verdict, _, _ in judged] == [(True, None)] * 2, judged


# defines an operator through torch.library.custom_op, whose schema torch's own file registers
CUSTOM_OP = '''
import torch

@torch.library.custom_op("krl_co::shift", mutates_args=())
def shift(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
''' + candidate("torch.relu(torch.ops.krl_co.shift(x))")

# defines the same name with a Library, as a candidate with a C++ extension's TORCH_LIBRARY would
LIBRARY_OP = '''
import torch
LIB = torch.library.Library("krl_co", "DEF")
LIB.define("shift(Tensor x) -> Tensor")
''' + candidate("torch.relu(x)")


def test_an_operator_defined_through_custom_op_does_not_reach_a_later_candidate(tmp_path):
    judged = judged_in_order(tmp_path, {"custom_op": CUSTOM_OP, "library": LIBRARY_OP})
    assert [verdict for verdict, _, _ in judged] == [(True, None)] * 2, judged


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_candidate_judged_twice_in_a_row_keeps_its_worker(tmp_path):
    # its library, loaded by its own first pair, is what its second pair loads too: no fresh worker for that
    text = LOADS_ITS_LIBRARY.replace("OFFSET = 1 if str(lib.resolve()) in Path(\"/proc/self/maps\").read_text() else 0",
                                     "OFFSET = ctypes.CDLL(str(lib)).zero()")
    assert text != LOADS_ITS_LIBRARY
    (task_a := tmp_path / "a.py").write_text(task("torch.relu(x)"))
    (task_b := tmp_path / "b.py").write_text(task("torch.relu(x)"))
    (cand := tmp_path / "twice.py").write_text(text)
    workers = []
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=20.0,
                          extensions_dir=str(tmp_path / "ext"))
    out = run_pairs([(str(task_a), str(cand)), (str(task_b), str(cand))], settings, on_env=workers.append,
                    hot_spare=False)
    assert [pair_verdict(out[i]) for i in (0, 1)] == [(True, None)] * 2
    assert len([env for env in workers if "sandbox" in env]) == 1  # each worker says its sandbox once
