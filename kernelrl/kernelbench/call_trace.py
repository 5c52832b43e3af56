"""The exception trace over a KernelBench candidate's own frames during its checked calls (the worker's `trace`):
an exception that passes through the candidate's code while the call still returns is a try/except around its
kernel (`reference fallback`, watch.py). Runs only in the worker process.

It is an object of its own, not methods of the worker: the trace function is what `sys.gettrace()` returns and
what a traced frame's `f_trace` holds, and a bound method of the worker there led a candidate to the worker and to
the list of exceptions the trace had recorded, which it emptied in its except handler (a broken kernel judged
correct; corpus: fallback_clears_trace). In the worker, `sys.gettrace()` returns None to every caller
(`hide_trace`: the worker keeps the real one), and reading a frame's attributes is refused (watch.py, `_audit`)."""

from __future__ import annotations

import sys
from types import CodeType

from kernelrl.kernelbench.code_origin import CodeOrigins


class CallTrace:
    """Which frames are the candidate's (its file's, and code it made under any other name: `note_compiled`) and
    the exceptions that passed through them during one call (`caught`)."""

    __slots__ = ("origins", "file", "compiled", "caught", "own")

    def __init__(self, origins: CodeOrigins) -> None:
        self.origins = origins
        self.file: str | None = None  # the current pair's candidate file
        self.compiled: dict[str | None, set[str]] = {}  # per candidate file: names it compiled code under
        self.caught: list[str] = []
        self.own: dict[int, CodeType] = {}  # the candidate file's code objects, by identity (kept alive here)

    def note_compiled(self, names: set[str]) -> None:
        self.compiled.setdefault(self.file, set()).update(names)

    def note_file_code(self, code: CodeType) -> None:
        """Every code object compiled from the candidate's file (its module's and those nested in it): followed
        whatever name it carries later. `_imp._fix_co_filename` renames code in place with no audit event, so a
        try/except fallback renamed to a library path escaped the trace (a helper's review, 2026-12-07: accepted
        at 1.45x; corpus: fallback_renamed_in_place)."""
        stack = [code]
        while stack:
            item = stack.pop()
            self.own[id(item)] = item
            stack.extend(c for c in item.co_consts if isinstance(c, CodeType))

    def call(self, frame, event, arg):
        """A cheap test by name: a call of every frame comes here (torch.compile's run through hundreds of library
        files)."""
        name = frame.f_code.co_filename
        if name == self.file or name in self.compiled.get(self.file, ()) or id(frame.f_code) in self.own:
            return self.local
        return None

    def local(self, frame, event, arg):
        if event == "exception" and not issubclass(arg[0], (StopIteration, StopAsyncIteration, GeneratorExit)):
            code = frame.f_code
            # a name the candidate also used, on the library's own code (a genuine frame of that file): not its
            if code.co_filename == self.file or id(code) in self.own or not (
                    self.origins.named_trusted(code.co_filename) and self.origins.trusted(code)):
                self.caught.append(f"{arg[0].__name__} at line {frame.f_lineno}")
        return self.local


def _no_trace():
    """`sys.gettrace` in the worker: no caller learns the worker's trace function (see the module)."""
    return None


def hide_trace() -> None:
    """From now on `sys.gettrace()` returns None in this process; the worker calls the function it kept before."""
    sys.gettrace = _no_trace
