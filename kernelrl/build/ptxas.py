"""Parse nvcc's `-Xptxas -v` resource report into plain data, one entry per kernel."""

from __future__ import annotations

import re

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(log: str) -> dict[str, dict]:
    """{kernel: {registers, smem_bytes, stack_bytes, spill_stores, spill_loads}} from a ptxas -v log."""
    kernels: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = kernels.setdefault(m.group(1), {"arch": m.group(2)})
        elif m := _PROPS.search(line):
            current = kernels.setdefault(m.group(1), {})
        elif current is not None and (m := _FRAME.search(line)):
            current.update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current is not None and (m := _USED.search(line)):
            current["registers"] = int(m.group(1))
            if s := _SMEM.search(line):
                current["smem_bytes"] = int(s.group(1))
    return {name: info for name, info in kernels.items() if "registers" in info}


def summarize(kernels: dict[str, dict]) -> dict:
    """The worst case over a candidate's kernels: what limits occupancy and what spills."""
    if not kernels:
        return {}
    return {
        "kernels": len(kernels),
        "registers": max(k.get("registers", 0) for k in kernels.values()),
        "smem_bytes": max(k.get("smem_bytes", 0) for k in kernels.values()),
        "spill_bytes": sum(k.get("spill_stores", 0) + k.get("spill_loads", 0) for k in kernels.values()),
        "stack_bytes": max(k.get("stack_bytes", 0) for k in kernels.values()),
    }
