"""`kernelrl doctor`: what this machine offers kernelrl, one row per thing (Python, torch, GPU, driver, nvcc and its
sm_90a target, CUTLASS, ninja, Triton, the worker sandbox, free GPU memory, the optional extras), each with what
its absence disables and what to do. Exit code 0 where the main job (`kernelrl tune` / `kernelrl bench` on a GPU)
can run, 1 otherwise; `--json` prints the rows as JSON.

Each check is a small function returning a `Row`; they reach the machine only through the seams below (`gpu_info`,
`_run`, `_module`, `shutil.which`, `find_nvcc`, `cutlass_include_dirs`, the sandbox module), so tests fake an absence
by monkeypatching one of them. CUDA is queried in this process only after torch.cuda.is_available() says a GPU is
there; the sandbox's CUDA probe runs in a subprocess with a timeout. Importing this module loads no torch."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from kernelrl.build.toolchain import arch_flags, cutlass_include_dirs, find_nvcc
from kernelrl.cli.ui import console
from kernelrl.harness import sandbox
from kernelrl.kernelbench import memory_plan as mp

OK, MISSING, WARNING = "ok", "missing", "warning"
GIB = 1 << 30
PROBE_OK = "kernelrl-doctor: CUDA started under the sandbox"
PROBE_TIMEOUT_S = 180.0
# KernelBench level 1's largest real-size tasks (elementwise ops on 4096 x 393216 fp32): 6 GiB input, 6 GiB output
LARGEST_L1 = 4096 * 393216


@dataclass(frozen=True)
class Row:
    """One line of the doctor's table. `required`: the main job (tune / bench on a GPU) cannot run unless it is ok."""

    what: str
    status: str  # ok / missing / warning
    detail: str
    action: str = ""  # what the absence disables, and what to do
    required: bool = False

    @property
    def blocks(self) -> bool:
        return self.required and self.status != OK


@dataclass(frozen=True)
class GpuInfo:
    """GPU 0 as torch sees it; `error` says why there is none."""

    available: bool
    name: str = ""
    capability: tuple[int, int] | None = None
    total_bytes: int = 0
    free_bytes: int = 0
    count: int = 0
    error: str = ""

    @property
    def arch(self) -> str | None:
        return f"sm_{self.capability[0]}{self.capability[1]}" if self.capability else None


# --- seams: everything that touches the machine ---------------------------------------------------------------------

def _run(cmd: list[str], timeout: float, env: dict | None = None) -> subprocess.CompletedProcess:
    """A command's result; a command that cannot start or runs past `timeout` comes back with its reason in stderr
    (return code 127 or 124), never as an exception."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except OSError as exc:
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout:.0f} s")


def _module(name: str, import_it: bool = False) -> tuple[bool, str]:
    """(installed, its version or why not). With `import_it` the module is imported too (a broken install fails)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return False, f"not importable ({exc})"
    if spec is None:
        return False, "not installed"
    version = None
    if import_it:
        try:
            version = getattr(importlib.import_module(name), "__version__", None)
        except Exception as exc:  # a broken install: say what failed
            return False, f"import fails: {_last_line(str(exc)) or type(exc).__name__}"
    if version is None:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "installed"
    return True, str(version)


def gpu_info() -> GpuInfo:
    """GPU 0 through torch: queried only after torch.cuda.is_available(); any failure is `error`, never raised."""
    if _module("torch")[0] is False:
        return GpuInfo(False, error="torch is not installed")
    torch, error = _import_torch()
    if torch is None:
        return GpuInfo(False, error=f"torch does not import: {error}")
    try:
        if not torch.cuda.is_available():
            if torch.version.cuda is None:
                return GpuInfo(False, error=f"torch {torch.__version__} is a CPU build (torch.version.cuda is None)")
            return GpuInfo(False, error=f"torch.cuda.is_available() is False (torch built for CUDA "
                                        f"{torch.version.cuda}): no NVIDIA GPU visible, or a driver too old for it")
        free, total = torch.cuda.mem_get_info(0)
        return GpuInfo(True, torch.cuda.get_device_name(0), tuple(torch.cuda.get_device_capability(0)), int(total),
                       int(free), torch.cuda.device_count())
    except Exception as exc:  # a broken driver: the runner would fail the same way
        return GpuInfo(False, error=f"CUDA fails to start: {_last_line(str(exc)) or type(exc).__name__}")


def _import_torch():
    """(the torch module, "") or (None, why it does not import): imported only when a row needs it, so that the
    command's other rows work where torch is broken."""
    try:
        import torch
    except Exception as exc:
        return None, _last_line(str(exc))
    return torch, ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


# --- the checks ------------------------------------------------------------------------------------------------------

def check_python() -> Row:
    ok = sys.version_info >= (3, 10)
    return Row("Python", OK if ok else MISSING, f"{platform.python_version()} ({sys.executable})",
               "" if ok else "kernelrl needs Python 3.10 or newer", required=True)


def check_torch() -> Row:
    installed, why = _module("torch")
    if not installed:
        return Row("torch", MISSING, why, "nothing runs without torch: pip install torch (a CUDA build)",
                   required=True)
    torch, error = _import_torch()
    if torch is None:
        return Row("torch", MISSING, f"does not import: {error}", "reinstall torch", required=True)
    if torch.version.cuda is None:
        return Row("torch", MISSING, f"{torch.__version__}, a CPU build (torch.version.cuda is None)",
                   "no GPU measurements with a CPU build: install a CUDA build (pip install torch --index-url "
                   "https://download.pytorch.org/whl/cu128, or the CUDA version your driver supports)",
                   required=True)
    return Row("torch", OK, f"{torch.__version__}, CUDA build (CUDA {torch.version.cuda})", required=True)


def check_gpu(gpu: GpuInfo) -> Row:
    if not gpu.available:
        return Row("GPU", MISSING, f"none visible to torch: {gpu.error or 'torch.cuda.is_available() is False'}",
                   "tune and bench measure on an NVIDIA GPU: run on a GPU machine with a CUDA build of torch "
                   "(without one, bench --runner dummy checks the pipeline and tune --build-only --arch sm_90a "
                   "compiles ahead)", required=True)
    cap = f"{gpu.capability[0]}.{gpu.capability[1]}" if gpu.capability else "?"
    more = f"; {gpu.count} visible (GPU 0 shown)" if gpu.count > 1 else ""
    return Row("GPU", OK, f"{gpu.name}, compute capability {cap} ({gpu.arch}), {_gib(gpu.total_bytes)}{more}",
               required=True)


def check_driver(gpu: GpuInfo) -> Row:
    smi = shutil.which("nvidia-smi")
    todo = "bench and tune find the GPU through nvidia-smi (its name keys the results): install the NVIDIA driver " \
           "with its utilities, or put nvidia-smi on PATH"
    if not smi:
        return Row("NVIDIA driver", MISSING, "nvidia-smi not on PATH", todo, required=True)
    out = _run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], timeout=30)
    version = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    if not version:
        return Row("NVIDIA driver", MISSING, f"nvidia-smi shows no GPU: {_last_line(out.stderr or out.stdout)}",
                   todo, required=True)
    return Row("NVIDIA driver", OK, f"{version} (nvidia-smi)", required=True)


def nvcc_version(nvcc: str) -> str:
    out = _run([nvcc, "--version"], timeout=60).stdout
    match = re.search(r"release (\d+\.\d+), V([\d.]+)", out)
    return match.group(2) if match else (_last_line(out) or "unknown version")


def check_nvcc(nvcc: str | None) -> Row:
    if nvcc is None:
        return Row("nvcc", MISSING, "not on PATH (nor $KERNELRL_NVCC, $CUDA_HOME/bin)",
                   "no kernel builds: tune, bench --candidates / --library and library build need nvcc; install "
                   "the CUDA toolkit (12.0 or newer for sm_90a), put nvcc on PATH or set KERNELRL_NVCC",
                   required=True)
    return Row("nvcc", OK, f"{nvcc_version(nvcc)} at {nvcc}", required=True)


def nvcc_builds(nvcc: str, arch: str) -> str | None:
    """None where nvcc compiles a trivial kernel for `arch` (with the project's flags), else its error line."""
    with tempfile.TemporaryDirectory(prefix="kernelrl-doctor-") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text("__global__ void probe(float *p) { p[threadIdx.x] = 1.0f; }\n")
        out = _run([nvcc, *arch_flags(arch), "-cubin", "-o", str(Path(tmp) / "probe.cubin"), str(src)],
                   timeout=120)
    return None if out.returncode == 0 else (_last_line(out.stderr or out.stdout) or f"exit code {out.returncode}")


def check_arch(nvcc: str | None, gpu: GpuInfo) -> Row:
    what = "nvcc targets sm_90a"
    if nvcc is None:
        return Row(what, MISSING, "no nvcc", "see nvcc")
    hopper = gpu.available and gpu.arch == "sm_90"
    error = nvcc_builds(nvcc, "sm_90a")
    if error is not None:
        return Row(what, MISSING if hopper else WARNING, f"nvcc cannot build sm_90a: {error}",
                   "the wgmma and cutlass_sm90 families (Hopper's wgmma needs sm_90a) do not build: install CUDA "
                   "12.0 or newer", required=hopper)
    detail = "builds sm_90a (wgmma, setmaxnreg)"
    if gpu.available and not hopper and gpu.arch:
        own = nvcc_builds(nvcc, gpu.arch)
        if own is not None:
            return Row(what, MISSING, f"{detail}, but not this GPU's {gpu.arch}: {own}",
                       f"no kernel builds for this GPU: install a CUDA toolkit that supports {gpu.arch}",
                       required=True)
        return Row(what, OK, f"{detail} and this GPU's {gpu.arch}",
                   "the wgmma and cutlass_sm90 families need a Hopper GPU (sm_90): not on this one")
    return Row(what, OK, detail)


def check_cutlass() -> Row:
    dirs = cutlass_include_dirs()
    if not dirs:
        return Row("CUTLASS/CuTe headers", MISSING, "nvidia-cutlass not installed",
                   "the cutlass_sm90 family does not build (tune's default --families all includes it): pip "
                   "install nvidia-cutlass, or tune with --families wgmma,mma_sync,small")
    try:
        version = importlib.metadata.version("nvidia-cutlass")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return Row("CUTLASS/CuTe headers", OK, f"nvidia-cutlass {version}: {dirs[0]}")


def check_ninja() -> Row:
    ninja = shutil.which("ninja")
    if not ninja:
        return Row("ninja", MISSING, "not on PATH",
                   "KernelBench candidates that build with load_inline fail to compile, and the tuned library's C++ "
                   "fast path is not built (its Python dispatch costs a few µs more per call): pip install ninja")
    return Row("ninja", OK, ninja)


def check_triton() -> Row:
    ok, detail = _module("triton", import_it=True)
    if not ok:
        return Row("Triton", MISSING, detail,
                   "Triton candidates (kb eval, evolve) and kb eval's torch.compile baselines on the GPU fail: pip "
                   "install triton (CUDA builds of torch bring it)")
    return Row("Triton", OK, detail)


def _probe_meaning(error: str) -> str:
    if "304" in error or "OS call failed" in error:
        return ("the CUDA driver needs a write the sandbox does not allow (error 304: a /proc write; "
                "benchmarks/device/diag/sandbox_cuda.sh finds which)")
    if "timed out" in error:
        return "CUDA hung under the sandbox"
    return "CUDA does not start under the sandbox"


def cuda_probe() -> str | None:
    """In a subprocess: confine_worker on a temporary folder (the worker's own rule), then start CUDA. None where it
    started, else the error line."""
    code = ("import sys\n"
            "from kernelrl.harness.sandbox import confine_worker\n"
            "c, _ = confine_worker(sys.argv[1])\n"
            "print('confinement:', c.detail, flush=True)\n"
            "if not c.active:\n"
            "    sys.exit('the probe could not confine itself: ' + c.detail)\n"
            "import torch\n"
            "torch.zeros(1, device='cuda').add(1).item()\n"
            f"print({PROBE_OK!r})\n")
    root = str(Path(__file__).resolve().parents[2])  # kernelrl importable in the child, installed or not
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    scratch = tempfile.mkdtemp(prefix="kernelrl-doctor-")
    try:
        out = _run([sys.executable, "-c", code, scratch], timeout=PROBE_TIMEOUT_S, env=env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if out.returncode == 0 and PROBE_OK in out.stdout:
        return None
    return _last_line(out.stderr) or _last_line(out.stdout) or f"exit code {out.returncode}"


def check_sandbox(gpu: GpuInfo) -> Row:
    what = "worker sandbox"
    abi, why = sandbox.landlock_abi()
    line = sandbox.describe().removeprefix("worker sandbox: ")
    if os.environ.get(sandbox.SANDBOX_ENV, "").lower() in ("0", "off", "no", "false"):
        return Row(what, WARNING, line, f"unset {sandbox.SANDBOX_ENV} (debugging only) to confine the workers")
    if not abi:
        return Row(what, WARNING, f"no Landlock: {why}",
                   "workers run unconfined (a candidate could rewrite the results database or the task files): "
                   "use a Linux 5.13+ kernel with Landlock enabled (lsm= includes landlock)")
    if not gpu.available:
        return Row(what, OK, f"Landlock ABI {abi}; CUDA probe not run (no GPU)",
                   "whether CUDA starts under the sandbox is checked where a GPU is visible")
    error = cuda_probe()
    if error is None:
        return Row(what, OK, f"Landlock ABI {abi}; CUDA starts in a confined worker (probe)")
    return Row(what, WARNING, f"Landlock ABI {abi}; CUDA did not start in a confined worker: {error}",
               f"{_probe_meaning(error)}: the runner falls back to unconfined workers and says so (candidates can "
               f"then write any file this user can)")


def largest_level1_need() -> int | None:
    """The smallest card (bytes) on which KernelBench level 1's largest real-size task runs under the worker's memory
    plan (kernelrl/kernelbench/memory_plan.py, pure arithmetic), with this host's memory for spills; None where the
    plan cannot say."""
    try:
        fp = mp.Footprint(4 * LARGEST_L1, 4 * LARGEST_L1, draw_extra=5 * LARGEST_L1)  # uniform redraw: f32 + mask
        return int(mp.smallest_card([fp], mp.host_available())[0])
    except Exception:  # the plan changed shape: say the sizes instead
        return None


def check_memory(gpu: GpuInfo) -> Row:
    what = "GPU memory (KernelBench)"
    need = largest_level1_need()
    task = "level 1's largest tasks (4096 x 393216 fp32) hold 12 GiB per input set and output (6 + 6 GiB)"
    needs = f"; they need about {_gib(need)} free (memory_plan, with this host's memory for spills)" if need else ""
    if not gpu.available:
        return Row(what, WARNING, f"not checked (no GPU); {task}{needs}", "kb eval only")
    free = f"{_gib(gpu.free_bytes)} free of {_gib(gpu.total_bytes)}"
    if need is None:
        return Row(what, OK if gpu.free_bytes >= 16 * GIB else WARNING, f"{free}; {task}",
                   "kb eval plans each task's memory from what is free and refuses the tasks that do not fit")
    if gpu.free_bytes >= need:
        return Row(what, OK, f"{free}; {task}{needs}")
    return Row(what, WARNING, f"{free}; {task}{needs}",
               "kb eval refuses the tasks that do not fit (one line each): free the GPU of other processes or use a "
               "larger card (HGEMM tune and bench need far less)")


EXTRAS = (("ray", "--ray on bench, tune and kb eval (a Ray cluster's GPUs)", "pip install -e '.[ray]'"),
          ("openai", "kernelrl evolve (the LLM proposer)", "pip install -e '.[llm]'"),
          ("trl", "kernelrl train (SFT, GRPO)", "pip install -e '.[rl]'"))


def check_extra(name: str, enables: str, install: str) -> Row:
    ok, detail = _module(name)
    if ok:
        return Row(name, OK, f"{detail}: enables {enables}")
    return Row(name, MISSING, f"{detail} (optional)", f"disables {enables}: {install}")


def run_checks() -> list[Row]:
    gpu = gpu_info()
    nvcc = find_nvcc()
    return [check_python(), check_torch(), check_gpu(gpu), check_driver(gpu), check_nvcc(nvcc),
            check_arch(nvcc, gpu), check_cutlass(), check_ninja(), check_triton(), check_sandbox(gpu),
            check_memory(gpu), *(check_extra(*extra) for extra in EXTRAS)]


def exit_code(rows: list[Row]) -> int:
    return 1 if any(r.blocks for r in rows) else 0


_STYLE = {OK: "green", MISSING: "red", WARNING: "yellow"}


def print_rows(rows: list[Row]) -> None:
    table = Table(title="kernelrl doctor: what this machine offers")
    for col in ("check", "status", "detail", "disables / what to do"):
        table.add_column(col, overflow="fold")
    for r in rows:
        status = f"[{_STYLE[r.status]}]{r.status}[/]" + (" (needed)" if r.blocks else "")
        table.add_row(escape(r.what), status, escape(r.detail), escape(r.action))
    console.print(table)
    blocking = [r.what for r in rows if r.blocks]
    if blocking:
        console.print(f"tune and bench cannot run here: {escape(', '.join(blocking))} (the rows marked needed)",
                      highlight=False)
    else:
        console.print("tune and bench can run here" + ("; warnings above disable only what they say"
                                                       if any(r.status != OK for r in rows) else ""),
                      highlight=False)


def cmd_doctor(args) -> int:
    rows = run_checks()
    code = exit_code(rows)
    if getattr(args, "json", False):
        print(json.dumps({"ok": code == 0, "rows": [dict(asdict(r), blocks=r.blocks) for r in rows]}, indent=2))
    else:
        print_rows(rows)
    return code
