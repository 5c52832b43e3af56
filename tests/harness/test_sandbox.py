"""The measuring processes' write confinement (kernelrl/harness/sandbox.py): what a confined process may and may not
write, and the same through the runner's skeleton with the toy workload's candidates (tests/workloads/test_toy.py)."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch._inductor.config as inductor  # loaded before confinement, as a KernelBench worker's prepare does

from kernelrl.harness.sandbox import (INDUCTOR_THREADS_ENV, confine_worker, confine_writes, confined, landlock_abi,
                                      writes_allowed, written_paths)
from kernelrl.kernelbench.worker import KBSettings, run_pairs
from kernelrl.run.runner import LocalRunner, RunSettings
from tests.workloads.test_toy import ToyTask, toy_main

ABI, WHY = landlock_abi()
needs_landlock = pytest.mark.skipif(not ABI, reason=f"needs Linux Landlock: {WHY}")


def _try_writes(conn, scratch, extra, outside):
    """In a fresh process: confine, then attempt each write; report what happened."""
    confinement, _ = confine_worker(scratch, [extra])
    out = {"active": confinement.active}
    for name, path in (("scratch", os.path.join(scratch, "a")), ("extra", os.path.join(extra, "b")),
                       ("outside", outside)):
        try:
            with open(path, "a") as fh:
                fh.write("x")
            out[name] = "written"
        except OSError as exc:
            out[name] = type(exc).__name__
    child = subprocess.run(["sh", "-c", f"echo x >> {outside}"], capture_output=True)
    out["child"] = child.returncode
    conn.send(out)


def _confined(tmp_path):
    outside = tmp_path / "results.db"
    outside.write_text("original")
    parent, child = mp.get_context("spawn").Pipe()
    proc = mp.get_context("spawn").Process(target=_try_writes, args=(child, str(tmp_path / "scratch"),
                                                                      str(tmp_path / "ext"), str(outside)))
    proc.start()
    result = parent.recv()
    proc.join(30)
    return result, outside


@needs_landlock
def test_a_confined_process_cannot_write_outside_its_folders(tmp_path):
    result, outside = _confined(tmp_path)
    assert result["active"] and result["outside"] == "PermissionError"
    assert outside.read_text() == "original"


@needs_landlock
def test_a_confined_process_writes_its_scratch_and_the_named_folders(tmp_path):
    result, _ = _confined(tmp_path)
    assert result["scratch"] == "written" and result["extra"] == "written"


@needs_landlock
def test_a_process_started_by_a_confined_one_is_confined_too(tmp_path):
    result, outside = _confined(tmp_path)
    assert result["child"] != 0 and outside.read_text() == "original"


def _compile_threads(conn, scratch):
    """In a fresh process with torch's compiler config loaded (as a KernelBench worker's prepare loads it): confine,
    then report the config's compile threads, the environment's, and the line the worker would report."""
    confinement, _ = confine_worker(scratch)
    conn.send({"active": confinement.active, "detail": confinement.detail, "config": inductor.compile_threads,
               "env": os.environ.get(INDUCTOR_THREADS_ENV)})


@needs_landlock
def test_a_confined_worker_compiles_in_its_own_process_and_says_so(tmp_path):
    # its compile workers, started under the domain, could not start CUDA (max-autotune's SubprocException on the H100)
    parent, child = mp.get_context("spawn").Pipe()
    proc = mp.get_context("spawn").Process(target=_compile_threads, args=(child, str(tmp_path / "scratch")))
    proc.start()
    result = parent.recv()
    proc.join(30)
    assert result["active"] and result["config"] == 1 and result["env"] == "1"
    assert f"{INDUCTOR_THREADS_ENV}=1" in result["detail"]


def test_turned_off_it_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELRL_SANDBOX", "off")
    confinement = confine_writes([tmp_path])
    assert not confinement.active and "KERNELRL_SANDBOX=off" in confinement.detail


def test_turned_off_it_confines_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELRL_SANDBOX", "off")  # the spawned process inherits it
    result, outside = _confined(tmp_path)
    assert not result["active"] and result["outside"] == "written" and outside.read_text() != "original"


def test_writes_allowed_resolves_paths_beneath_the_folders(tmp_path):
    (tmp_path / "ok").mkdir()
    os.symlink(tmp_path / "ok", tmp_path / "link")
    assert writes_allowed(str(tmp_path / "ok" / "f"), [tmp_path / "ok"])
    assert writes_allowed(str(tmp_path / "link" / "f"), [tmp_path / "ok"])
    assert not writes_allowed(str(tmp_path / "okay" / "f"), [tmp_path / "ok"])
    assert not writes_allowed(str(tmp_path / "ok" / ".." / "f"), [tmp_path / "ok"])


# The same through the runner: toy candidates (Python source, y = 2x) that write where they should not
TOY_WRITERS = {
    "honest": "def run(x):\n    return [2 * v for v in x]\n",
    "writes_target": "import os\nopen(os.environ['KR_SANDBOX_TARGET'], 'w').write('pwned')\n"
                     "def run(x):\n    return [2 * v for v in x]\n",
    # a write through libc, which no Python hook sees; the cheat ignores its failure and stays honest otherwise
    "writes_target_libc": "import ctypes, os\nlibc = ctypes.CDLL(None)\nlibc.fopen.restype = ctypes.c_void_p\n"
                          "fh = libc.fopen(os.environ['KR_SANDBOX_TARGET'].encode(), b'w')\n"
                          "if fh:\n    libc.fputs(b'pwned', ctypes.c_void_p(fh)); libc.fclose(ctypes.c_void_p(fh))\n"
                          "def run(x):\n    return [2 * v for v in x]\n",
    "writes_tempfile": "import tempfile\nwith tempfile.NamedTemporaryFile('w') as fh:\n    fh.write('scratch')\n"
                       "def run(x):\n    return [2 * v for v in x]\n",
}


@pytest.fixture(scope="module")
def toy_writers(tmp_path_factory):
    target = tmp_path_factory.mktemp("sandbox") / "population.db"
    target.write_text("original")
    os.environ["KR_SANDBOX_TARGET"] = str(target)  # the spawned worker inherits it
    out, env = {}, {}
    try:
        LocalRunner(worker_target=toy_main).run(
            [ToyTask(0)], [{"name": n, "source": s} for n, s in TOY_WRITERS.items()], RunSettings(hang_timeout_s=5.0),
            lambda task, records: out.update({r["method"]: r for r in records}), on_env=env.update)
    finally:
        del os.environ["KR_SANDBOX_TARGET"]
    return out, env, target


@needs_landlock
def test_no_toy_candidate_changed_the_file_outside_the_sandbox(toy_writers):
    _, _, target = toy_writers
    assert target.read_text() == "original"


@needs_landlock
def test_a_python_write_outside_fails_the_candidate_at_load(toy_writers):
    out, _, _ = toy_writers
    assert out["writes_target"]["verdict"] == "exception" and "Permission denied" in out["writes_target"]["reason"]


def test_writing_temporary_files_is_allowed(toy_writers):
    out, _, _ = toy_writers
    assert out["writes_tempfile"]["verified"] and out["honest"]["verified"]


def test_the_worker_reports_its_confinement_in_its_environment(toy_writers):
    _, env, _ = toy_writers
    assert env["sandbox"].startswith(f"Landlock ABI {ABI}" if ABI else "none")


# KernelBench: a write no Python hook sees (libc's fopen through ctypes), at import, which runs twice: in the build
# step's process (the candidate mentions load_inline, so it is built first) and in the evaluation worker
LIBC_WRITER = '''
import ctypes
import torch
import torch.nn as nn

# built like a load_inline candidate: the build step imports it first
TARGET = {target!r}
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
fh = libc.fopen(TARGET.encode(), b"a")
if fh:
    libc.fputs(b"\\nModel.forward = lambda self, x: x\\n", ctypes.c_void_p(fh))
    libc.fclose(ctypes.c_void_p(fh))


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''

RELU_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def libc_writer(tmp_path_factory):
    d = tmp_path_factory.mktemp("kb_sandbox")
    task, cand = d / "relu_task.py", d / "relu.py"
    task.write_text(RELU_TASK)
    cand.write_text(LIBC_WRITER.format(target=str(task)))
    builds = []
    out = run_pairs([(str(task), str(cand))], KBSettings(device="cpu", baselines=("eager",), rounds=2,
                                                          calls_per_round=2, extensions_dir=str(d / "ext")),
                    on_build=builds.append)
    return out[0][0], task, builds


@needs_landlock
def test_neither_the_build_step_nor_the_worker_let_a_libc_write_through(libc_writer):
    rec, task, builds = libc_writer
    assert len(builds) == 1 and task.read_text() == RELU_TASK


@needs_landlock
def test_a_refused_write_the_candidate_ignores_leaves_it_judged_on_its_outputs(libc_writer):
    rec, _, _ = libc_writer
    assert rec["verified"], rec["reason"]


@pytest.mark.parametrize("event, args, written", [
    ("open", ("/a", "r", 0), []),
    ("open", ("/a", "rb", 0), []),
    ("open", ("/a", "w", 0), ["/a"]),
    ("open", ("/a", "ab", 0), ["/a"]),
    ("open", ("/a", "r+", 0), ["/a"]),
    ("open", ("/a", None, os.O_RDONLY), []),
    ("open", ("/a", None, os.O_WRONLY | os.O_CREAT), ["/a"]),
    ("open", (3, "w", 0), []),  # a file descriptor: opened (and judged) before
    ("os.rename", ("/a", "/b", None, None), ["/a", "/b"]),
    ("os.remove", ("/a", None), ["/a"]),
    ("os.link", ("/a", "/b", None, None), ["/a", "/b"]),  # writing through the link writes /a
    ("os.utime", ("/a", (0, 0), None, None), ["/a"]),
    ("os.chmod", ("/a", 0o777, None), ["/a"]),
    ("os.utime", (3, None, None, None), []),  # a file descriptor: opened (and judged) before
    ("sqlite3.connect", ("/r.db",), ["/r.db"]),
    ("sqlite3.connect", ("file:/r.db?mode=ro",), []),
    ("sqlite3.connect", (":memory:",), []),
    ("os.listdir", ("/a",), []),
])
def test_written_paths_names_what_an_audit_event_writes(event, args, written):
    assert written_paths(event, args) == written


@pytest.mark.parametrize("env, ok", [({"sandbox": "Landlock ABI 7: writes only beneath /tmp/a"}, True),
                                     ({"sandbox": "none (Landlock unavailable)"}, False),
                                     ({"sandbox": "off (KERNELRL_SANDBOX=off)"}, False), ({}, False)])
def test_a_run_counts_as_confined_only_when_its_workers_said_landlock(env, ok):
    assert confined(env) is ok


def test_a_removal_relative_to_a_folder_descriptor_is_judged_where_it_happens(tmp_path):
    """shutil.rmtree removes entries by bare name relative to the folder's descriptor (Triton's launcher build
    cleaning its temporary folder): the path judged is the one in that folder, not beside the working directory."""
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        written = written_paths("os.remove", ("cuda_utils.c", fd))
    finally:
        os.close(fd)
    assert written == [str(tmp_path / "cuda_utils.c")]
    assert writes_allowed(written[0], [tmp_path])


def test_a_temporary_folder_removed_by_shutil_is_seen_inside_it(tmp_path):
    """Every write a TemporaryDirectory's cleanup makes is seen beneath the folder it was made in."""
    seen = []

    def hook(event, args):
        if event in ("os.remove", "os.rmdir", "shutil.rmtree"):
            seen.extend(written_paths(event, args))

    sys.addaudithook(hook)  # an audit hook cannot be removed: it only records into this test's list
    with tempfile.TemporaryDirectory(dir=tmp_path) as d:
        (Path(d) / "__triton_launcher.c").write_text("x")
        (Path(d) / "sub").mkdir()
        (Path(d) / "sub" / "cuda_utils.c").write_text("x")
    tail = [p for p in seen if "__triton_launcher" in p or "cuda_utils" in p]
    assert tail and all(writes_allowed(p, [tmp_path]) for p in seen), seen
    seen.clear()
