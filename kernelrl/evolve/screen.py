"""The static screen for HGEMM candidates: known ways to look fast without being fast, found before anything is
built or run, and the file contract.

The dynamic defences of the evaluator (fresh inputs during timing, poisoned outputs, guard bands, the hidden-work
cross-check) stay the judges; this screen only spares GPU time on what is already known to be a cheat, and gives
the model a precise reason it can learn from. It shares the C++ rules of the KernelBench static layer
(side streams, host threads, persisting-L2 windows) and adds what only an HGEMM file can do: hand the GEMM to the
library it is measured against."""

from __future__ import annotations

import re

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.static_checks import CPP_PATTERNS, strip_cpp_comments

_STRINGS = re.compile(r'"(?:\\.|[^"\\\n])*"')
HGEMM_PATTERNS = [
    ("library-call", re.compile(r"\bcublas\w*|#\s*include\s*<\s*cublas\w*"),
     "calls cuBLAS, the library it is measured against: a candidate must compute the GEMM itself"),
    ("library-call", re.compile(r"#\s*include\s*<\s*(torch|ATen|c10)/|\bat::\w+|\btorch::\w+"),
     "uses torch/ATen: candidates are plain CUDA, measured by one ctypes call"),
    ("runtime-loading", re.compile(r"\b(dlopen|dlsym|popen|system|fork|execv\w*|execl\w*)\s*\("),
     "loads code or starts processes at run time"),
    ("default-stream", re.compile(r"\bcudaStream(PerThread|Legacy)\b"),
     "launches on a stream other than the one it is given"),
]
_RULES = [(rule, pattern, message) for rule, pattern, message in CPP_PATTERNS] + HGEMM_PATTERNS
_REASONS = {"cuda-stream": "creates its own CUDA stream: work off the given stream escapes the timer",
            "threads": "starts a host thread: background work escapes the timer",
            "persisting-l2": "pins data in L2 across timed calls"}
_EXTERN_C = re.compile(r'extern\s+"C"')
_ENTRY = re.compile(r"\bkernelrl_hgemm\s*\(")


def code_only(source: str) -> str:
    """The source without comments and string literals: a rule must match code, not a remark or a JSON info
    string."""
    return _STRINGS.sub('""', strip_cpp_comments(source))


def screen_hgemm(source: str) -> Rejected | None:
    """The first known cheat in the file (`static screen`, detail '<rule> (line N: <code>): <why>'), or None."""
    text = code_only(source)
    for rule, pattern, message in _RULES:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            why = _REASONS.get(rule, message)
            return Rejected(Verdict.STATIC_SCREEN, f"{rule} (line {line}: {m.group(0).strip()}): {why}")
    return None


def contract_hgemm(source: str) -> Rejected | None:
    """Why the file cannot satisfy the evaluator's entry point, or None: checked before nvcc so the repair turn
    gets a clear message instead of a missing-symbol error at load time."""
    if not _ENTRY.search(code_only(source)):
        return Rejected(Verdict.CONTRACT, "the file defines no kernelrl_hgemm(...) entry point")
    if not _EXTERN_C.search(strip_cpp_comments(source)):  # "C" is a string literal: code_only would erase it
        return Rejected(Verdict.CONTRACT, 'kernelrl_hgemm must have C linkage (extern "C")')
    return None
