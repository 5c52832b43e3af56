"""Nsight Compute metrics for a candidate: the command line, its CSV, and a short summary for prompts.

`ncu --clock-control none` keeps the GPU's own clock behaviour (as the timings were measured), `--profile-from-start
off` profiles only the range the driver opens around one call (not the warm-up or the allocations), and
`--csv --page raw --print-units base` prints one row per kernel with one column per metric in base units.
Only a GPU machine with Nsight Compute can run it; elsewhere `missing_message()` says so in one line."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys

from kernelrl.errors import UserError

STALL_REASONS = ("long_scoreboard", "barrier", "mio_throttle", "short_scoreboard", "math_pipe_throttle", "wait",
                 "not_selected", "lg_throttle", "dispatch_stall", "membar", "sleeping", "tex_throttle")
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
METRIC_SETS = {
    "time": ["gpu__time_duration.sum"],
    "dram": ["dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum"],
    "occupancy": ["sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct"],
    "l2": ["lts__t_sector_hit_rate.pct"],
    # hmma: mma.sync/WMMA (Ampere-style); gmma: Hopper's wgmma. A kernel uses one or the other.
    "tensor": ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"],
    "stalls": [STALL.format(r) for r in STALL_REASONS],
}
DEFAULT_SETS = ("time", "dram", "occupancy", "l2", "tensor", "stalls")
LABELS = {
    "gpu__time_duration.sum": "kernel time",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy",
    "lts__t_sector_hit_rate.pct": "L2 hit rate",
    # the pipes Nsight Compute measures, named as such: which instructions a kernel issues is its own line
    # (evolve/instructions.py), not read from these labels
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "HMMA tensor pipe (mma.sync, WMMA)",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "GMMA tensor pipe (wgmma)",
}
_ID_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
               "Grid Size", "Device", "CC")


class ProfileError(UserError, ValueError):
    """A metric set name that does not exist, or ncu output that cannot be read."""


def metrics_for(sets) -> list[str]:
    unknown = [s for s in sets if s not in METRIC_SETS]
    if unknown:
        raise ProfileError(f"unknown metric set {', '.join(unknown)}: choose from {', '.join(METRIC_SETS)} or all")
    return list(dict.fromkeys(m for s in sets for m in METRIC_SETS[s]))


def parse_sets(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    if text == "all":
        return DEFAULT_SETS
    sets = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    metrics_for(sets)
    return sets


def ncu_path() -> str | None:
    for candidate in (os.environ.get("KERNELRL_NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def missing_message() -> str:
    return ("ncu (Nsight Compute) not found: profiling skipped; install Nsight Compute or set KERNELRL_NCU to "
            "its path (it runs only on a GPU machine)")


def ncu_command(program: list[str], sets=DEFAULT_SETS, ncu: str = "ncu", kernel_regex: str | None = None) -> list[str]:
    """The ncu command line that profiles `program` (argv) for the chosen metric sets."""
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
           "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(metrics_for(sets))]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + list(program)


def _number(text: str):
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return text.strip()


def parse_ncu_csv(text: str) -> list[dict]:
    """Kernels profiled, in order: {"id", "name", "block", "grid", "metrics": {metric: value}, "units": {...}}.

    Reads the raw page (one row per kernel, a units row under the header) and also the details page (one row
    per metric, with Metric Name / Metric Unit / Metric Value columns). Lines before the header (==PROF==
    messages, the program's own output) are skipped."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        raise ProfileError("no ncu CSV in the output (no header line starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if not ln.startswith("==")))))
    header = rows[0]
    kernels: dict[str, dict] = {}
    if "Metric Name" in header:  # details page
        col = {h: i for i, h in enumerate(header)}
        for row in rows[1:]:
            if len(row) < len(header) or not row[col["Metric Name"]]:
                continue
            k = kernels.setdefault(row[col["ID"]], _kernel(row, col))
            k["metrics"][row[col["Metric Name"]]] = _number(row[col["Metric Value"]])
            k["units"][row[col["Metric Name"]]] = row[col["Metric Unit"]]
        return list(kernels.values())
    col = {h: i for i, h in enumerate(header)}
    metric_cols = [(i, h) for i, h in enumerate(header) if h not in _ID_COLUMNS]
    units: dict[str, str] = {}
    for row in rows[1:]:
        if len(row) < len(header):
            continue
        if not row[col["ID"]].strip():  # the units row
            units = {h: row[i] for i, h in metric_cols}
            continue
        k = _kernel(row, col)
        k["metrics"] = {h: _number(row[i]) for i, h in metric_cols}
        k["units"] = dict(units)
        kernels[k["id"]] = k
    return list(kernels.values())


def _kernel(row: list[str], col: dict[str, int]) -> dict:
    def get(name: str) -> str:
        return row[col[name]] if name in col else ""
    return {"id": get("ID"), "name": get("Kernel Name"), "block": get("Block Size"), "grid": get("Grid Size"),
            "metrics": {}, "units": {}}


def summarize(kernels: list[dict]) -> dict:
    """The longest-running kernel's metrics (the GEMM, not a padding or reduction kernel), with kernel time in µs,
    the stall reasons ranked, and how many kernels the call launched."""
    if not kernels:
        return {}
    main = max(kernels, key=_duration)
    out = {"kernel": main["name"], "grid": main["grid"], "block": main["block"], "kernels": len(kernels),
           "metrics": {}}
    for metric, value in main["metrics"].items():
        if not isinstance(value, float):
            continue
        unit = main["units"].get(metric, "")
        if metric == "gpu__time_duration.sum":
            scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, 1e-3)
            out["time_us"] = round(value * scale, 3)
        out["metrics"][metric] = value
    stalls = {r: main["metrics"].get(STALL.format(r)) for r in STALL_REASONS}
    out["stalls"] = dict(sorted(((r, v) for r, v in stalls.items() if isinstance(v, float) and v > 0),
                                key=lambda kv: -kv[1]))
    return out


def _duration(kernel: dict) -> float:
    value = kernel["metrics"].get("gpu__time_duration.sum")
    return value if isinstance(value, float) else -1.0


def format_summary(summary: dict | None) -> str | None:
    """One line for a prompt, or None when there is nothing to say."""
    if not summary:
        return None
    if summary.get("error"):
        return None
    parts = []
    if summary.get("time_us") is not None:
        parts.append(f"kernel time {summary['time_us']:.1f} µs")
    for metric, label in LABELS.items():
        value = summary.get("metrics", {}).get(metric)
        if metric != "gpu__time_duration.sum" and isinstance(value, float) and value > 0:
            parts.append(f"{label} {value:.1f} %")
    top = list(summary.get("stalls", {}).items())[:3]
    if top:
        parts.append("top warp stalls (cycles per issue): " + ", ".join(f"{r} {v:.2f}" for r, v in top))
    where = f" on {summary['shape']}" if summary.get("shape") else ""
    kernels = f", {summary['kernels']} kernels per call" if summary.get("kernels", 1) > 1 else ""
    return f"- Nsight Compute{where}{kernels}: " + "; ".join(parts) if parts else None


def collect_hgemm(lib_path: str, problem, sets=DEFAULT_SETS, timeout_s: float = 600.0) -> dict:
    """Profile one call of a built HGEMM candidate (or, with lib_path "torch", of torch.matmul) on `problem`; the
    summary, or {"error": one line} (with "skip_rest" when no candidate can be profiled on this machine)."""
    ncu = ncu_path()
    if ncu is None:  # holds for the rest of the run: the loop says it once and stops asking
        return {"error": missing_message(), "skip_rest": True}
    program = [sys.executable, "-m", "kernelrl.evolve.ncu_driver", lib_path, str(problem.m), str(problem.n),
               str(problem.k)]
    try:
        proc = subprocess.run(ncu_command(program, sets, ncu=ncu), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"ncu ran past {timeout_s:.0f} s"}
    try:
        summary = summarize(parse_ncu_csv(proc.stdout))
    except ProfileError as exc:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": f"{exc}; ncu exit code {proc.returncode}: {tail[-1][:300] if tail else 'no output'}"}
    summary["shape"] = problem.name
    return summary
