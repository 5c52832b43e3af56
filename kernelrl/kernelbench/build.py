"""Build KernelBench candidates' torch extensions (`load_inline`, `cpp_extension.load`) before anything is
evaluated, in parallel, each under its own compile timeout, into the folder the evaluation worker loads from.

Each candidate gets its own extension folder, named by the hash of its file (`extension_dir`): candidates that
reuse an extension name ("custom_kernel", "elementwise_add") never rebuild over each other, which is what made
every candidate of a task compile again inside the worker, in series, under the hang watch. The worker points
`TORCH_EXTENSIONS_DIR` at the same folder and resets torch's in-process version counter before each import, so
the import only loads what was built here (same flags, arch and directory: both sides are torch's own builder).

Building means importing the candidate (torch builds at import): each import runs in its own spawned process
that exits afterwards, so nothing a candidate does at import reaches the evaluation, and that may write only its
own extension folder (harness/sandbox.py). An import that fails for another reason is left to the worker, which
gives the candidate its verdict under watch.

Many candidates build later than import: in `__init__` or at their first `forward` (28 of CUDA-L1's 39 level-1
kernels that build; measured on the H200, each then compiled in the worker, in series, 13-90 s per pair). Given the
candidate's task, the build process also constructs the model from the task's init inputs and calls it once on
inputs of its own seed (never the evaluation's), on the evaluation device, so those builds run here too. What that
warm-up raises is left to the worker as well, unless it is a build error."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.harness.sandbox import confine_worker
from kernelrl.harness.verdicts import Verdict
from kernelrl.kernelbench.extension_fence import folder_contents
from kernelrl.kernelbench.failed_builds import checked, recording
from kernelrl.kernelbench.tasks import load_module

WARMING = "warming up"  # the build process's message between its import and its warm-up
# The build process's messages are JSON bytes, never pickles (it ran the candidate's code, which can reach the pipe:
# an unpickled object runs code in the parent), at most this long.
MAX_MESSAGE = 1 << 20
EXTENSION_MARKERS = ("load_inline", "cpp_extension.load", "from torch.utils.cpp_extension import load")


@dataclass
class BuildOutcome:
    path: str
    seconds: float
    verdict: Verdict | None = None  # compile error / compile timeout, or None when it built
    detail: str = ""
    note: str = ""  # what else the build step has to say (a warm-up it stopped), shown with the build line
    failed: list = field(default_factory=list)  # builds that failed while the candidate went on (failed_builds.py)
    # every entry of the candidate's folder once its build process ended (extension_fence.folder_contents): the
    # worker finds the folder as it was built, or empties it and builds again
    contents: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict is None

    @property
    def error(self) -> str | None:
        """The verdict's reason line, or None."""
        return self.verdict.reason(self.detail) if self.verdict is not None else None


def needs_build(source: str) -> bool:
    return "ModelNew" in source and any(m in source for m in EXTENSION_MARKERS)


def extension_dir(root: str | Path, candidate_path: str | Path) -> Path:
    """The candidate's own extension folder under `root`, named by its file's content."""
    digest = hashlib.sha256(Path(candidate_path).read_bytes()).hexdigest()[:20]
    return Path(root) / digest


def use_extension_dir(root: str | Path, candidate_path: str | Path) -> Path:
    """Point torch's extension builder at the candidate's folder, with a fresh version counter (a counter left
    from an earlier candidate of the same extension name would rename the build and compile it again)."""
    folder = extension_dir(root, candidate_path)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(folder)
    try:
        from torch.utils import cpp_extension  # torch: the parent imports this module and stays torch-free
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.clear()
    except (ImportError, AttributeError):
        pass
    return folder


def _import(conn, root: str, path: str, task_path: str | None = None, device: str = "cpu") -> None:
    # absolute: this process changes its working directory below
    root, path = os.path.abspath(root), os.path.abspath(path)
    task_path = os.path.abspath(task_path) if task_path is not None else None
    folder = use_extension_dir(root, path)
    os.environ.setdefault("MAX_JOBS", "2")  # several builds run at once; each gets two ninja jobs
    # the candidate's code runs here: it may write its own folder (and temporary files there), nothing else
    scratch = folder / ".tmp"
    confine_worker(scratch, [folder])
    os.chdir(scratch)  # a relative write (a `cuda_extensions/` build folder) lands where it may, as in the worker
    result: str | None = None
    failed: list[dict] = []  # builds that failed while the candidate went on (failed_builds.recording)
    from torch.utils import cpp_extension  # the build process only: the parent stays torch-free
    cpp_extension._run_ninja_build = recording(cpp_extension._run_ninja_build, failed)
    try:
        module = load_module(path)
        if task_path is not None:
            _send(conn, {"state": WARMING})  # imported: the parent now gives the warm-up its own, shorter limit
            _warm_up(module, load_module(task_path), device)
    except BaseException as exc:  # a candidate may raise anything, SystemExit included
        text = str(exc).strip()
        result = f"{type(exc).__name__}: {text[-1500:]}"
    shutil.rmtree(scratch, ignore_errors=True)  # before the answer: the parent ends this process once it has it
    _send(conn, {"error": result, "failed": failed[:20]})


def _send(conn, message: dict) -> None:
    conn.send_bytes(json.dumps(message).encode())


def _receive(conn) -> dict:
    """The build process's next message, or what the parent makes of one it cannot read."""
    try:
        message = json.loads(conn.recv_bytes(MAX_MESSAGE))
    except (EOFError, OSError):
        return {"error": "the build process died"}
    except ValueError:
        return {"error": "the build process's report was not readable"}
    return message if isinstance(message, dict) else {"error": "the build process's report was not readable"}


def _warm_up(candidate, task, device: str) -> None:
    """Construct ModelNew and call it once, so that builds in `__init__` or a first `forward` happen here. Only a
    build error propagates: anything else is the worker's to judge."""
    import torch  # the build process only: the parent stays torch-free
    try:
        torch.manual_seed(int.from_bytes(os.urandom(4), "little"))  # inputs unlike any the evaluation makes
        with torch.device(device):
            init = task.get_init_inputs() if hasattr(task, "get_init_inputs") else []
            model = candidate.ModelNew(*init)
            inputs = task.get_inputs()
            if hasattr(model, "to"):
                model = model.to(device)
            with torch.no_grad():
                model(*[x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs])
        if device == "cuda":
            torch.cuda.synchronize()
    except BaseException as exc:
        if _is_build_error(str(exc)):
            raise


def _is_build_error(text: str) -> bool:
    return any(s in text for s in ("Error building extension", "ninja: build stopped", "Ninja is required"))


def build_extensions(paths: list[str | Path], root: str | Path, jobs: int | None = None,
                     timeout_s: float = 600.0, on_done=None, tasks: dict[str, str] | None = None,
                     device: str = "cpu", warm_up_timeout_s: float = 120.0) -> dict[str, BuildOutcome]:
    """BuildOutcome per candidate file that needs a build, at most `jobs` at once (default: one per core), each
    import killed after `timeout_s` (`compile timeout`). `on_done(outcome)` hears each as it finishes. `tasks`
    (candidate path -> its task's path) adds the warm-up on `device` (`_warm_up`); one that runs past
    `warm_up_timeout_s` (kb eval: twice the hang watch's limit; a candidate that hangs in forward must not hold
    the build step for the compile timeout) is stopped without a verdict and left to the worker, as an unfinished
    lazy build was before."""
    tasks = {str(c): str(t) for c, t in (tasks or {}).items()}
    todo = []
    for p in dict.fromkeys(str(p) for p in paths):
        try:
            if needs_build(Path(p).read_text(errors="replace")):
                todo.append(p)
        except OSError:
            continue
    jobs = max(1, jobs or os.cpu_count() or 1)
    ctx = mp.get_context("spawn")
    running: dict[str, tuple] = {}
    warming: dict[str, float] = {}  # path -> when its warm-up began
    out: dict[str, BuildOutcome] = {}

    def finish(path, verdict, detail="", note="", failed=()):
        proc, conn, started = running.pop(path)
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        conn.close()
        failed = checked(failed) if verdict is None else []
        if failed:
            names = ", ".join(sorted({repr(f["extension"]) for f in failed}))
            note = "; ".join(filter(None, (note, f"extension {names} failed to build and the candidate went on "
                                                 f"(its fallback will run; the worker replays the failure)")))
        out[path] = BuildOutcome(path, time.monotonic() - started, verdict, detail if verdict else "", note,
                                 list(failed), folder_contents(extension_dir(root, path)) if verdict is None else {})
        if on_done:
            on_done(out[path])

    while todo or running:
        while todo and len(running) < jobs:
            path = todo.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_import, args=(child, str(root), path, tasks.get(path), device), daemon=True)
            proc.start()
            child.close()
            running[path] = (proc, parent, time.monotonic())
        for path, (proc, conn, started) in list(running.items()):
            warm = warming.get(path)
            if conn.poll():
                message = _receive(conn)
                if message.get("state") == WARMING:
                    warming[path] = time.monotonic()
                    continue
                text = None if (error := message.get("error")) is None else str(error)[-3000:]
                finish(path, Verdict.COMPILE_ERROR if text and _is_build_error(text) else None, text,
                       failed=message.get("failed"))
            elif warm is not None and not proc.is_alive():  # built at import; a crash in the warm-up is the
                finish(path, None, note="the warm-up call crashed: left to the worker")  # worker's to judge
            elif warm is not None and time.monotonic() - warm > warm_up_timeout_s:
                finish(path, None, note=f"the warm-up call was stopped after {warm_up_timeout_s:.0f} s: left to the "
                                        f"worker")
            elif not proc.is_alive():
                finish(path, Verdict.COMPILE_ERROR, f"the build process died (exit code {proc.exitcode})")
            elif time.monotonic() - started > timeout_s:
                finish(path, Verdict.COMPILE_TIMEOUT, f"the extension did not build in {timeout_s:.0f} s")
        time.sleep(0.05)
    return out
