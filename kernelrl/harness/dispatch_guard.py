"""Kernels a candidate registers for PyTorch's own operators: what the worker's attribute guards cannot see.

`torch.library.Library("aten", "IMPL").impl("sub.Tensor", fn, "CUDA")` (or `TORCH_LIBRARY_IMPL(aten, CUDA, m)` in a
load_inline extension) replaces the kernel every `a - b` on CUDA runs, without replacing any Python attribute. The
reference, the baselines and the judge's own arithmetic (the difference, its absolute value, the maximum) run on
those kernels in the candidate's process: an aten::sub that returns zeros makes every output exact (the CPU worker
judged such a candidate, returning zeros, correct). Before any candidate code runs the guard records the operators
that exist, the files their kernels come from, and the whole dispatcher entry of each operator the judge computes
with (JUDGE_OPS). Afterwards, any change to such an entry, whatever file it names, and a kernel of a pre-existing
operator registered from a file outside those and the installed libraries (the candidate's module, its extension's
sources) are `harness patch`. Operators the candidate defines in its own namespace are its business. Every operator
is read after a load, when extensions register, and at a pair's end (about 70 ms); after other stretches of candidate
code, the judge's operators and those torch.library's own record says gained a kernel since."""

from __future__ import annotations

import os
import re

import torch
import torch.library

_REGISTERED = re.compile(r"^([^:\n]+): registered at (.+?):(\d+)", re.MULTILINE)


def _registrations(op: str) -> list[tuple[str, str, str]]:
    """(dispatch key, file, line) of every kernel the dispatcher holds for `op` (`ns::name.overload`)."""
    return _REGISTERED.findall(torch._C._dispatch_dump(op))


# The operators the judge, the trivial-output probe and the timing summaries compute with: their whole dispatcher
# entries are compared as text after every stretch of candidate code, whatever file a registration claims (a
# candidate can name torch's own file: `exec(compile(src, torch.library.__file__, "exec"))`, or `#line` in C++).
# torch's own first compile changes none of them (measured on torch 2.13, inductor on the CPU: about 1 ms a read).
JUDGE_OPS = ("aten::sub.Tensor", "aten::abs", "aten::abs_", "aten::div.Tensor", "aten::div_.Tensor",
             "aten::add.Tensor", "aten::add_.Tensor", "aten::max", "aten::amax", "aten::isnan", "aten::isfinite",
             "aten::isinf", "aten::nan_to_num", "aten::masked_fill_.Scalar", "aten::eq.Tensor", "aten::eq.Scalar",
             "aten::ne.Tensor", "aten::ne.Scalar", "aten::all", "aten::any", "aten::sum", "aten::mean",
             "aten::pow.Tensor_Scalar", "aten::sqrt", "aten::clone", "aten::copy_", "aten::_to_copy",
             "aten::where.self", "aten::mul.Tensor", "aten::clamp_min", "aten::_local_scalar_dense", "aten::equal",
             "aten::isclose", "aten::fill_.Scalar", "aten::maximum", "aten::gt.Scalar", "aten::lt.Scalar",
             "aten::logical_and", "aten::logical_not")


class DispatchGuard:
    """The dispatcher as it was before any candidate code ran (the worker's start)."""

    def __init__(self, library_prefixes: tuple[str, ...]):
        self.prefixes = library_prefixes
        self.ops = frozenset(torch._C._dispatch_get_all_op_names())
        self.files = frozenset(file for op in self.ops for _, file, _ in _registrations(op))
        self.impls = set(_python_impls())
        self.judge = {op: torch._C._dispatch_dump(op) for op in JUDGE_OPS if op in self.ops}

    def foreign(self, everything: bool = False) -> list[str]:
        """One line per change a candidate may have made: a judge operator's entry changed in any way, or a kernel
        of a pre-existing operator registered since from a file that is neither one the dispatcher knew then nor
        the installed libraries' (symbolic links resolved); `everything`: read every operator (after a load, and at
        a pair's end), else those torch.library's record says gained a Python kernel."""
        found = [f"the dispatcher's entry of {op} (a kernel of it registered or replaced)"
                 for op, dump in self.judge.items() if torch._C._dispatch_dump(op) != dump]
        added = set(_python_impls()) - self.impls
        self.impls |= added  # torch's own lazy registrations (its meta kernels on the first compile) pass once read
        ops = self.ops if everything else {_op_of(entry) for entry in added} & self.ops
        for op in sorted(ops):
            for key, file, line in _registrations(op):
                if file not in self.files and not (file.startswith(self.prefixes) or
                                                   os.path.realpath(file).startswith(self.prefixes)):
                    found.append(f"the {key} kernel of {op} registered at {file}:{line}")
        return found


def _python_impls():
    return getattr(torch.library, "_impls", ())  # "namespace/name.overload/DispatchKey" of each Python kernel


def _op_of(entry: str) -> str:
    namespace, name, _key = entry.split("/", 2)
    return f"{namespace}::{name}"
