"""Where a measuring process may write: its scratch folder, the compilers' caches, /dev, and what its workload
names; nowhere else (not the results database, the population, the task files or the repository).

A candidate runs with the evaluator's own file access: without this, one could rewrite the database a run resumes
from, or the task file the next worker loads its reference from (slowing the baseline of every later pair). The
confinement is the kernel's, not Python's (Linux Landlock, unprivileged, ABI 1+ from Linux 5.13): it holds for a
C++ extension's fopen and for every process the worker starts (ninja, nvcc). A process started under the domain
cannot start CUDA, so torch.compile compiles in the confined worker itself (`compile_in_process`).
Reads, exec and device ioctls stay allowed. A confined process also cannot ptrace (read the memory of) processes
outside its domain, the parent included, and from ABI 6 cannot signal them.

What is left: the writable caches and the KernelBench extension root are shared between the run's candidates
(their entries are keyed by content hashes, which a hostile candidate could overwrite); the Nsight Compute driver
of evolve's profile step (evolve/ncu_driver.py) loads a candidate unconfined (ncu's injection writes its own files:
to be confined once that is measured on a GPU). Where Landlock is missing the process runs unconfined and says so
in its environment (`sandbox`), which the CLIs print; KERNELRL_SANDBOX=off turns it off (debugging only).
Python-level writes are also seen by the KernelBench worker's audit hook, which refuses them and turns one into the
candidate's `file write` verdict."""

from __future__ import annotations

import ctypes
import getpass
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86_64 and aarch64
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_SCOPE_SIGNAL = 1 << 1  # ABI 6

# Landlock's filesystem rights that change the filesystem, by the ABI that introduced them (read, execute and
# device ioctl are not handled, so they stay allowed everywhere)
_WRITE_RIGHTS_V1 = (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) \
    | (1 << 11) | (1 << 12)  # write file, remove dir/file, make char/dir/reg/sock/fifo/block/sym
_REFER = 1 << 13  # ABI 2: rename or link across folders (denied everywhere unless granted)
_TRUNCATE = 1 << 14  # ABI 3
_FILE_RIGHTS = (1 << 1) | _TRUNCATE  # the rights a rule on a single file (not a folder) may carry

SANDBOX_ENV = "KERNELRL_SANDBOX"
INDUCTOR_THREADS_ENV = "TORCHINDUCTOR_COMPILE_THREADS"  # compile_in_process
_HELD_PROC_FDS: list[int] = []  # /proc entries a rule grants, open for the process's life (confine_writes)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Confinement:
    active: bool
    detail: str  # one line for the environment record and the CLI

    def __str__(self) -> str:
        return self.detail


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> tuple[int, str]:
    """(Landlock ABI version, why not) of this kernel: (0, reason) where it cannot confine."""
    if not sys.platform.startswith("linux"):
        return 0, f"Landlock is Linux's ({sys.platform} here)"
    libc = _libc()
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if version < 0:
        err = ctypes.get_errno()
        return 0, f"Landlock unavailable in this kernel ({os.uname().release}: {os.strerror(err)})"
    return int(version), ""


def _unconfinable() -> str | None:
    """Why a process started now would not be confined ("off (...)" or "none (...)"), or None when it would be."""
    if os.environ.get(SANDBOX_ENV, "").lower() in ("0", "off", "no", "false"):
        return f"off ({SANDBOX_ENV}={os.environ[SANDBOX_ENV]})"
    abi, why = landlock_abi()
    return None if abi else f"none ({why})"


def describe() -> str:
    """What a worker started now would be confined by, for a CLI's header."""
    if (why := _unconfinable()) is not None:
        return f"worker sandbox: {why}: candidates can write any file this user can"
    return f"worker sandbox: Landlock ABI {landlock_abi()[0]}, writes only to the worker's scratch folder, the " \
           f"compilers' caches, /dev, its own threads' /proc entries and its workload's folders"


def cache_dirs() -> list[Path]:
    """The compilers' caches a worker writes, pinned in the environment (so the libraries and every child use
    the same folder after TMPDIR moves to the scratch folder): Triton's, TorchInductor's and the CUDA driver's."""
    home = Path.home()
    defaults = {"TRITON_CACHE_DIR": home / ".triton" / "cache",
                "TORCHINDUCTOR_CACHE_DIR": Path(tempfile.gettempdir()) / f"torchinductor_{_user()}",
                "CUDA_CACHE_PATH": home / ".nv" / "ComputeCache"}
    out = []
    for var, default in defaults.items():
        path = Path(os.environ.get(var) or default)
        os.environ[var] = str(path)
        out.append(path)
    return out


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def use_scratch(scratch: str | Path) -> Path:
    """Temporary files (tempfile, nvcc, ninja, compile workers) go to `scratch` from now on."""
    folder = Path(scratch).absolute()  # the KernelBench worker changes its working directory
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    return folder


def enter_emptied_dir(folder: str | Path) -> None:
    """Make `folder` the working directory, created or emptied: a measured workload's relative writes land there,
    and none of the previous workload's are left. The folder itself stays (a helper process started earlier, such
    as a compile worker, keeps it as its own working directory)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    os.chdir(folder)


def confined(env: dict) -> bool:
    """Whether the run that recorded `env` had its workers' writes confined: only then could its candidates not
    have written the database its rows are read back from."""
    return str(env.get("sandbox") or "").startswith("Landlock")


def confine_writes(writable: Sequence[str | Path]) -> Confinement:
    """Allow this process (and every process it starts from now on) to write only beneath `writable` (folders,
    created if missing, or single files). Irreversible. Returns what was done; never raises for a kernel that
    cannot (the returned detail says why, and the caller reports it)."""
    if (why := _unconfinable()) is not None:
        return Confinement(False, why)
    abi = landlock_abi()[0]
    rights = _WRITE_RIGHTS_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(rights, 0, _SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    libc = _libc()
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return Confinement(False, f"none (landlock_create_ruleset: {os.strerror(ctypes.get_errno())})")
    allowed = []
    try:
        for path in dict.fromkeys(Path(p) for p in writable):
            held = str(path).startswith("/proc/")
            if not path.exists():
                try:
                    path.mkdir(parents=True, exist_ok=True)
                except OSError:
                    continue  # a cache that cannot exist is one nothing writes
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                access = rights if path.is_dir() else rights & _FILE_RIGHTS
                rule = _PathBeneathAttr(access, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    return Confinement(False, f"none (landlock_add_rule {path}: {os.strerror(ctypes.get_errno())})")
                allowed.append(str(path))
            finally:
                if held:  # procfs makes a new inode when a dropped entry is looked up again, and a rule binds
                    _HELD_PROC_FDS.append(fd)  # to the inode: holding the entry open keeps it the one ruled on
                else:
                    os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
            return Confinement(False, f"none (no_new_privs: {os.strerror(ctypes.get_errno())})")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return Confinement(False, f"none (landlock_restrict_self: {os.strerror(ctypes.get_errno())})")
    finally:
        os.close(ruleset)
    return Confinement(True, f"Landlock ABI {abi}: writes only beneath {', '.join(allowed)}")


def confine_worker(scratch: str | Path, extra: Sequence[str | Path] = (),
                   unconfined_because: str | None = None) -> tuple[Confinement, list[Path]]:
    """A measuring process's confinement: temporary files in `scratch`, the caches, /dev (the GPU's device files,
    shared memory), its own threads' /proc entries and the workload's `extra` folders. (confinement, the folders it
    allows). With `unconfined_because` (a confined worker of this run could not start its GPU: the runner's
    fallback), the folders are only returned, for the Python-level refusal, and the line says why."""
    caches = cache_dirs()  # before TMPDIR moves: TorchInductor's default folder is under the old one
    # absolute: a KernelBench worker changes its working directory for each pair
    folders = [Path(os.path.abspath(f)) for f in (use_scratch(scratch), *caches, Path("/dev"), own_threads_proc(),
                                                  *extra)]
    if unconfined_because:
        return Confinement(False, f"off (a confined worker could not start its GPU here: {unconfined_because})"), \
            folders
    confinement = confine_writes(folders)
    if confinement.active:
        confinement = Confinement(True, f"{confinement.detail}; {compile_in_process()}")
    return confinement, folders


def compile_in_process() -> str:
    """A process started under the worker's domain cannot start CUDA (`own_threads_proc`), so TorchInductor's
    compile workers, a pool of subprocesses where max-autotune also benchmarks its choices, fail in a confined
    worker: "RuntimeError: Could not find an active GPU backend", and the candidate's call raises `InductorError:
    SubprocException` (H100, Landlock ABI 7: CUDA-L1's level-2 tasks 34 and 74 and two honest torch.compile
    candidates of the GPU suite; benchmarks/device/diag/compile_under_sandbox.py). Inductor compiles in the worker's
    own process instead: its config (already imported by a KernelBench worker's `prepare`) and every process started
    later. Slower first calls of a compiled model, the same kernels. Returns what the environment record says."""
    os.environ[INDUCTOR_THREADS_ENV] = "1"
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = 1  # type: ignore[attr-defined]
    return f"torch.compile compiles in the worker's own process ({INDUCTOR_THREADS_ENV}=1: a child under the " \
           f"domain cannot start CUDA)"


def own_threads_proc(pid: int | None = None) -> Path:
    """This process's threads in /proc (/proc/PID/task): the CUDA driver names the threads it starts by writing
    /proc/self/task/TID/comm (glibc's pthread_setname_np for another thread), and cuInit fails with error 304, "OS
    call failed or operation not supported on this OS", when it cannot (NVIDIA/OpenShell#710 traced the same error
    under Landlock to this write). A thread's own entry cannot be named ahead (threads come later), so the grant is
    the folder of all of this process's threads: a thread's name, its scheduling and OOM hints, its own memory
    (which the process can write anyway). Not /proc as a whole, where a root worker could write /proc/sys, and not
    another process's entries: a child that starts CUDA under this domain has none of its own and must confine
    itself (the KernelBench build process does)."""
    return Path(f"/proc/{pid or os.getpid()}/task")


def writes_allowed(path: str, folders: list[Path]) -> bool:
    """Whether `path` is beneath one of `folders` (symlinks resolved, as the kernel sees them)."""
    real = os.path.realpath(path)
    return any(real == str(f) or real.startswith(str(f).rstrip("/") + "/")
               for f in (Path(os.path.realpath(x)) for x in folders))


# Python's audit events that change the filesystem: (index of a path written, index of the folder descriptor it is
# relative to, or None). shutil.rmtree (TemporaryDirectory's cleanup, Triton's launcher build) removes each entry by
# its bare name relative to the folder's descriptor: resolved against the working directory instead, a compiler
# cleaning its own temporary folder would look like a write beside the repository.
# A hard link's source counts too (writing through a link to a file outside changes that file), and so do a file's
# times, mode and owner (a rewritten file's modification time put back hides the rewrite from a check by time).
_PATH_EVENTS = {"os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),), "os.rename": ((0, 2), (1, 3)),
                "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),), "os.truncate": ((0, None),),
                "os.utime": ((0, 3),), "os.chmod": ((0, 2),), "os.chown": ((0, 3),),
                "shutil.copyfile": ((1, None),), "shutil.rmtree": ((0, 1),)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _beneath_fd(path: str, dir_fd) -> str:
    """`path` as the kernel resolves it: a relative one against the folder open as `dir_fd` (if any)."""
    if not isinstance(dir_fd, int) or os.path.isabs(path):
        return path
    try:
        return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
    except OSError:
        return path


def written_paths(event: str, args: tuple) -> list[str]:
    """The paths a Python audit event (`sys.addaudithook`) writes: open() or os.open() for writing, a remove,
    rename, link, mkdir or truncate, a copy's destination, an SQLite database opened (read-write by default);
    relative ones made absolute where the event names the folder descriptor they are relative to."""
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        candidates = [(path, None)] if writing else []
    elif event == "sqlite3.connect":
        candidates = [(p, None) for p in args[:1] if str(p) not in ("", ":memory:") and "mode=ro" not in str(p)]
    else:
        candidates = [(args[i], args[d] if d is not None and d < len(args) else None)
                      for i, d in _PATH_EVENTS.get(event, ()) if i < len(args)]
    out = []
    for p, dir_fd in candidates:
        if isinstance(p, (str, bytes, os.PathLike)):
            p = os.fsdecode(p)
            p = p[5:].split("?")[0] if event == "sqlite3.connect" and p.startswith("file:") else p
            out.append(_beneath_fd(p, dir_fd))
    return out
