"""Verdicts as keys: every way a measured method can fail has one `Verdict`, mapped to one `Category`. A record's
`verdict` field is the key itself and its `detail` the line that says more; its `reason` is the key's text, a colon
and the detail, for people (databases, CSVs and prompts show it). Whoever judges a method knows the key and passes
it on as a field; nothing reads a key back from a reason line, except `migrate_reason`, for text stored before
records carried their key.

Categories say what a failure means to the stages above the harness: a `build` failure is worth one repair turn,
a `defence` verdict is a caught cheat (never repaired, a hack in RL), `correctness` is wrong output, `crash` a dead
worker or a hang, `unsupported` a shape or setting the method declines, `infrastructure` the harness's own failure
(never the candidate's fault: it gets no reward either way, and it is reported apart)."""

from __future__ import annotations

from enum import Enum


class Category(str, Enum):
    OK = "ok"
    BUILD = "build"
    CORRECTNESS = "correctness"
    DEFENCE = "defence"
    CRASH = "crash"
    UNSUPPORTED = "unsupported"
    INFRASTRUCTURE = "infrastructure"


CATEGORY_TEXT = {
    Category.OK: "verified and timed",
    Category.BUILD: "did not compile, or does not meet the file contract",
    Category.CORRECTNESS: "wrong results",
    Category.DEFENCE: "caught by an anti-hacking check of the evaluator",
    Category.CRASH: "crashed or hung the GPU worker",
    Category.UNSUPPORTED: "declined the shape or setting",
    Category.INFRASTRUCTURE: "the evaluator itself failed (not the candidate's fault)",
}


class Verdict(str, Enum):
    """The key of a failed measurement; its value is the stable first words of the reason line."""

    # build and contract
    COMPILE_ERROR = "compile error"
    COMPILE_TIMEOUT = "compile timeout"
    CONTRACT = "contract"
    LOAD_FAILED = "cannot load the built library"
    NO_ENTRY_POINT = "no entry point"
    ADAPTER = "CUDA-L2 adapter"
    BAD_SPEC = "bad spec"  # a kernel spec (kernelrl/space/spec.py) that does not parse
    SYNTAX = "syntax"  # a KernelBench candidate file that does not parse
    MALFORMED = "malformed"  # a model's reply with no usable code (the evolve loop and the reward only)
    COPY = "copy"  # a model's kernel that repeats one its prompt showed or one proposed before (evolve/copies.py)
    # unsupported
    UNSUPPORTED = "unsupported"
    ACC_MISMATCH = "accumulator mismatch"
    RETURNED_ERROR = "returned error"
    GRAPH_CAPTURE = "graph capture failed"
    HOST_SYNC_IN_CALL = "synchronizes the device inside the call"
    TOO_LARGE = "task too large"
    RANDOM_TASK = "random reference"  # a KernelBench task whose outputs differ run to run, even under one seed
    INPUT_INDEPENDENT = "input-independent reference"  # a KernelBench task that cannot tell right from trivial
    TOLERANCE_BLIND = "tolerance cannot tell"  # a profile whose atol = rtol accepts a trivial output on this task
    SHARED_MEMORY = "too much shared memory"  # a spec's point needs more than an SM has
    # correctness
    WRONG_VALUES = "wrong values"
    EXACT_INPUTS = "0/1 inputs"
    NON_FINITE = "NaN/Inf"
    WRONG_SHAPE = "wrong shape"
    WRONG_TYPE = "wrong type"
    WRONG_DTYPE = "wrong dtype"
    WRONG_DEVICE = "wrong device"
    EXCEPTION = "exception"
    # defence
    UNWRITTEN_OUTPUT = "unwritten output"
    OUT_OF_BOUNDS = "out-of-bounds write"
    MODIFIED_INPUTS = "modified inputs"
    STALE_RESULT = "stale result"
    CONTENT_DEPENDENT_SPEED = "content-dependent speed"
    DURING_TIMING = "during timing"
    HIDDEN_WORK = "hidden work"
    REFEREE = "referee"  # processes the candidate never reached disagree with its worker (harness/referee.py)
    DEVICE_STATE = "device state"
    SAME_TENSOR = "same tensor every call"
    RETURNED_INPUT = "returned an input"
    TENSOR_SUBCLASS = "tensor subclass"
    INHERITS_MODEL = "inherits Model"
    REFERENCE_KERNELS = "reference kernels"  # the candidate's call launched every kernel the reference's does
    INTROSPECTION = "introspection"
    THREAD = "thread"
    # threads or GPU work a candidate's load left running (harness/worker_base.py)
    BACKGROUND_ACTIVITY = "background activity"
    TIMER_PATCH = "timer patch"
    HARNESS_PATCH = "harness patch"
    PRECISION = "precision"
    PERSISTING_L2 = "persisting L2"
    FILE_WRITE = "file write"  # a write outside the worker's scratch folder and caches (harness/sandbox.py)
    REFERENCE_FALLBACK = "reference fallback"
    SPECIALISED = "specialised to the benchmark shape"
    STREAM_ORDER = "stream order"
    STATIC_SCREEN = "static screen"  # a known cheat in an HGEMM candidate's source (kernelrl/evolve/screen.py)
    STATIC_CHECKS = "static checks"  # a KernelBench static finding, which evolve and train reject
    # crash
    CRASH = "crash"
    HANG = "hang"
    # infrastructure
    WORKER_ERROR = "worker error"
    BASELINE_FAILED = "baseline failed"
    NOT_TIMED = "not timed"
    NOT_EVALUATED = "not evaluated"
    ENVIRONMENT = "environment"

    @property
    def category(self) -> Category:
        return _CATEGORY[self]

    def reason(self, detail: str = "") -> str:
        """The record's reason line: the key's text, then the detail."""
        return f"{self.value}: {detail}" if detail else self.value


_GROUPS = {
    Category.BUILD: (Verdict.COMPILE_ERROR, Verdict.COMPILE_TIMEOUT, Verdict.CONTRACT, Verdict.LOAD_FAILED,
                     Verdict.NO_ENTRY_POINT, Verdict.ADAPTER, Verdict.BAD_SPEC, Verdict.SYNTAX, Verdict.MALFORMED,
                     Verdict.COPY),
    Category.UNSUPPORTED: (Verdict.UNSUPPORTED, Verdict.ACC_MISMATCH, Verdict.RETURNED_ERROR, Verdict.GRAPH_CAPTURE,
                           Verdict.HOST_SYNC_IN_CALL, Verdict.TOO_LARGE, Verdict.SHARED_MEMORY,
                           Verdict.RANDOM_TASK, Verdict.INPUT_INDEPENDENT, Verdict.TOLERANCE_BLIND),
    Category.CORRECTNESS: (Verdict.WRONG_VALUES, Verdict.EXACT_INPUTS, Verdict.NON_FINITE, Verdict.WRONG_SHAPE,
                           Verdict.WRONG_TYPE, Verdict.WRONG_DTYPE, Verdict.WRONG_DEVICE, Verdict.EXCEPTION),
    Category.CRASH: (Verdict.CRASH, Verdict.HANG),
    Category.INFRASTRUCTURE: (Verdict.WORKER_ERROR, Verdict.BASELINE_FAILED, Verdict.NOT_TIMED,
                              Verdict.NOT_EVALUATED, Verdict.ENVIRONMENT),
}
_CATEGORY = {v: c for c, vs in _GROUPS.items() for v in vs}
_CATEGORY.update({v: Category.DEFENCE for v in Verdict if v not in _CATEGORY})
_BY_TEXT = sorted(Verdict, key=lambda v: -len(v.value))  # longest first: "stale result" before a shorter key


class Rejected(Exception):
    """A method failed a check: its verdict key and a detail line. `str()` is the record's reason line."""

    def __init__(self, verdict: Verdict, detail: str = ""):
        super().__init__(verdict.reason(detail))
        self.verdict, self.detail = verdict, detail


def migrate_reason(reason: str | None) -> Verdict | None:
    """The key of a reason line stored before records carried their key: database rows whose `verdict` column is
    empty, recorded-reward tables and other files that kept only the text. It exists only for such old rows; every
    record written since carries its key in its `verdict` field, which is what everything else reads.

    The key is the longest one whose text starts the line (followed by a colon, " (" or nothing), read past a
    qualifier of where it happened ("on 64x64x64: ...", "shape ...: ..."); "during timing: <verdict>" is the timing
    check's own key. None for an empty line or one no evaluator wrote."""
    text = reason or ""
    if text.startswith(("on ", "shape ")) and ": " in text:
        text = text.split(": ", 1)[1]
    for v in _BY_TEXT:
        if text == v.value or text.startswith(v.value + ":") or text.startswith(v.value + " ("):
            return v
    return None


def key_of(verdict) -> Verdict | None:
    """The key of a record (its `verdict` field), of a Verdict or of a key's value; None for a verified record,
    None or an empty key. A reason line is not a key (ValueError): read old text through `migrate_reason`."""
    if isinstance(verdict, dict):
        verdict = verdict.get("verdict")
    return Verdict(verdict) if verdict else None


def category_of(verdict) -> Category:
    """The category of a record (by its `verdict` field, OK when verified), of a Verdict or of a key's value. A
    failed record without a key is INFRASTRUCTURE (no evaluator judged it); OK for None or a record without key or
    reason."""
    if isinstance(verdict, dict) and verdict.get("verified"):
        return Category.OK
    key = key_of(verdict)
    if key is not None:
        return key.category
    return Category.INFRASTRUCTURE if isinstance(verdict, dict) and verdict.get("reason") else Category.OK
