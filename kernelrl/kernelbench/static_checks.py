"""The static defence layer: an `ast` scan of a candidate's source for ways to look fast without being fast.

The dynamic checks (fresh inputs on every call, poisoned outputs, timing cross-checks) come first and run in the
GPU worker; this layer names suspicious constructs before anything runs. Nothing here executes the candidate.
String constants are scanned as C++ (inline CUDA sources) after `//` and `/* */` comments are removed; docstrings
and comments are never scanned.

Rules (id: what is flagged):

- `cuda-stream`: creating a CUDA stream: `torch.cuda.Stream(...)`, `torch.cuda.stream(...)`, and `cudaStreamCreate`
  (any variant) in a C++ string. Work on a side stream escapes the timed stream.
- `threads`: importing `threading`, `concurrent.futures`, `multiprocessing` (or `from` them), or `std::thread`,
  `std::async`, `pthread_create` in a C++ string. Background work escapes the timer.
- `timer-patch`: assigning to (or `setattr` on) `torch.cuda.synchronize`, `torch.cuda.Event` (or its methods),
  `time.perf_counter`, `time.time` (and their `_ns` twins).
- `harness-patch`: assigning to (or `setattr` on) any other attribute of `torch` (`torch.allclose`,
  `torch.Tensor.clone`, `nn.Module.__call__`, ...), `time`, `sys` or `builtins`: replacing what a harness checks
  with. Settings are not flagged: `torch.backends.*` (see `precision`) and `*.config.*` (dynamo, inductor).
- `introspection`: importing `gc` or `inspect`, or any `_getframe` attribute: reading the reference's outputs or the
  harness's state from memory or the stack.
- `reference-fallback`: an `except` handler that calls `Model`, `super().forward`, or a torch op (`torch.*`,
  `F.*`; not `torch.cuda`, `torch.utils`, `torch.ops`, `torch._C`, `torch.backends`): a broken kernel hidden
  behind the reference implementation. A heuristic: a handler that only logs or re-raises is not flagged.
- `inherits-model`: a class deriving from `Model` (the reference's forward is one `super()` call away).
- `tensor-subclass`: defining `__torch_function__` or `__torch_dispatch__`, or subclassing `torch.Tensor`: lazy
  results computed outside the timed call.
- `identity-cache`: `id(...)` or `.data_ptr()` used as a cache key: inside a subscript, a dict literal's key, an
  `in` test, or the first argument of `.get`/`.setdefault`/`.pop`, directly or through a name assigned from an
  expression holding one (`key = (x.data_ptr(), x.shape)`, then `cache[key]`). Passing `data_ptr()` to a kernel
  is honest and not flagged; an output cached per input address survives only until the inputs change in place.
- `persisting-l2`: `accessPolicyWindow`, `cudaStreamSetAttribute`, `cudaLimitPersistingL2CacheSize` in a C++ string
  or a Python name: pinning inputs in L2 across timed calls.
- `precision`: only when the task's inputs are fp32 (`input_dtype`, default "float32"; see `task_input_dtype`):
  `.half()`, `.bfloat16()`, `torch.float16`/`torch.half`/`torch.bfloat16`, `allow_tf32 = True`,
  `set_float32_matmul_precision(...)` with anything but "highest", any `*.fp32_precision = ...` but "ieee" or
  "none" (cuDNN's and oneDNN's per-area TF32 and bf16), `allow_fp16_bf16_reduction_math_sdp(...)` but False,
  and `__half`, `__nv_bfloat16`, `__float2half` in a C++ string. A task whose inputs are already fp16/bf16 may
  use them freely.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

RULES = ("cuda-stream", "threads", "timer-patch", "harness-patch", "introspection", "reference-fallback",
         "inherits-model", "tensor-subclass", "identity-cache", "persisting-l2", "precision")

CPP_PATTERNS = [
    ("cuda-stream", re.compile(r"\bcudaStreamCreate\w*"), "creates a CUDA stream in C++"),
    ("threads", re.compile(r"\bstd::(thread|async|jthread)\b|\bpthread_create\b"), "starts a thread in C++"),
    ("persisting-l2", re.compile(r"\b(accessPolicyWindow|cudaStreamSetAttribute|cudaLimitPersistingL2CacheSize)\b"),
     "sets a persisting-L2 access window in C++"),
]
CPP_PRECISION = re.compile(r"\b(__half2?|__nv_bfloat16\w*|__float2half\w*|__float2bfloat16\w*)\b")
THREAD_MODULES = ("threading", "concurrent.futures", "concurrent", "multiprocessing", "_thread")
TIMERS = {"torch.cuda.synchronize", "torch.cuda.Event", "time.perf_counter", "time.time", "time.perf_counter_ns",
          "time.time_ns", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.record", "torch.cuda.Event.synchronize"}
PATCH_ROOTS = ("torch", "nn", "F", "time", "sys", "builtins")
FULL_FP32_PRECISION = ("ieee", "none")  # torch.backends.*.fp32_precision: "none" defers to the parent setting
LOW_DTYPES = {"torch.float16", "torch.half", "torch.bfloat16"}
HONEST_TORCH = ("torch.cuda", "torch.utils", "torch.ops", "torch._C", "torch.backends", "torch.device",
                "torch.empty", "torch.zeros", "torch.ones")
CACHE_METHODS = {"get", "setdefault", "pop"}


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.rule} (line {self.line}): {self.message}"


def dotted(node: ast.AST) -> str:
    """`torch.cuda.Stream` for the attribute chain, with `F` standing for torch.nn.functional; '' if not a chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def strip_cpp_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def task_input_dtype(task_source: str) -> str:
    """"float16"/"bfloat16" when the task's `get_inputs` names that dtype, else "float32" (torch's default)."""
    try:
        tree = ast.parse(task_source)
    except SyntaxError:
        return "float32"
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    names = {dotted(n) for n in ast.walk(fn) if isinstance(n, ast.Attribute)} if fn else set()
    names |= {f"torch.{n.attr}" for n in ast.walk(fn) if isinstance(n, ast.Attribute)
              and n.attr in ("half", "bfloat16")} if fn else set()
    if names & {"torch.bfloat16"}:
        return "bfloat16"
    if names & {"torch.float16", "torch.half"}:
        return "float16"
    return "float32"


def _calls_key(node: ast.AST, key_names: dict[str, ast.Call] | None = None) -> ast.Call | None:
    """The id(...) or .data_ptr() call inside `node`, directly or through a name in `key_names`."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == "id" or
                                        isinstance(n.func, ast.Attribute) and n.func.attr == "data_ptr"):
            return n
        if key_names and isinstance(n, ast.Name) and n.id in key_names:
            return key_names[n.id]
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, fp32: bool):
        self.fp32 = fp32
        self.findings: list[Finding] = []
        self.docstrings: set[int] = set()
        self.key_names: dict[str, ast.Call] = {}  # names assigned from an expression holding id()/.data_ptr()

    def add(self, rule: str, node: ast.AST, message: str):
        self.findings.append(Finding(rule, getattr(node, "lineno", 0), message))

    # -- imports ----------------------------------------------------------------------------------------------
    def _module(self, name: str, node):
        top = name.split(".")[0]
        if name in THREAD_MODULES or top in ("threading", "multiprocessing", "_thread") or name.startswith(
                "concurrent"):
            self.add("threads", node, f"imports {name}")
        if top in ("gc", "inspect"):
            self.add("introspection", node, f"imports {top}")

    def visit_Import(self, node):
        for a in node.names:
            self._module(a.name, node)

    def visit_ImportFrom(self, node):
        if node.module:
            self._module(node.module, node)
            if node.module == "sys" and any(a.name == "_getframe" for a in node.names):
                self.add("introspection", node, "imports sys._getframe")

    # -- definitions ------------------------------------------------------------------------------------------
    def _docstring(self, node):
        body = getattr(node, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            self.docstrings.add(id(body[0].value))

    def visit_Module(self, node):
        self._docstring(node)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self._docstring(node)
        for base in node.bases:
            name = dotted(base)
            if name == "Model" or name.endswith(".Model"):
                self.add("inherits-model", node, f"class {node.name} derives from the reference Model")
            if name in ("torch.Tensor", "Tensor"):
                self.add("tensor-subclass", node, f"class {node.name} subclasses torch.Tensor")
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        self._docstring(node)
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.add("tensor-subclass", node, f"defines {node.name}")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    # -- assignments ------------------------------------------------------------------------------------------
    def _patch(self, name: str, node, how: str):
        parts = name.split(".")
        if name in TIMERS:
            self.add("timer-patch", node, f"{how} {name}")
        elif len(parts) >= 2 and parts[0] in PATCH_ROOTS and not name.startswith("torch.backends.") \
                and "config" not in parts[1:-1]:
            self.add("harness-patch", node, f"{how} {name}")

    def _target(self, target, node, value):
        name = dotted(target)
        self._patch(name, node, "assigns to")
        if self.fp32 and name.endswith("allow_tf32") and isinstance(value, ast.Constant) and value.value is True:
            self.add("precision", node, f"sets {name} = True on fp32 inputs")
        if self.fp32 and name.endswith(".fp32_precision") and not (
                isinstance(value, ast.Constant) and value.value in FULL_FP32_PRECISION):
            self.add("precision", node, f"sets {name} below fp32 on fp32 inputs")

    def visit_Assign(self, node):
        call = _calls_key(node.value)
        if call is not None:
            self.key_names.update({t.id: call for t in node.targets if isinstance(t, ast.Name)})
        for t in node.targets:
            for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                self._target(el, node, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._target(node.target, node, node.value)
        self.generic_visit(node)

    # -- calls and names --------------------------------------------------------------------------------------
    def visit_Call(self, node):
        name = dotted(node.func)
        if name in ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.streams.Stream"):
            self.add("cuda-stream", node, f"creates a CUDA stream ({name})")
        if name == "setattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and dotted(node.args[0]):
            self._patch(f"{dotted(node.args[0])}.{node.args[1].value}", node, "setattr on")
        if isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if self.fp32 and attr in ("half", "bfloat16") and not node.args:
                self.add("precision", node, f".{attr}() on fp32 inputs")
            if self.fp32 and attr == "set_float32_matmul_precision" and not (
                    node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "highest"):
                self.add("precision", node, "lowers fp32 matmul precision")
            if self.fp32 and attr == "allow_fp16_bf16_reduction_math_sdp" and not (
                    node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False):
                self.add("precision", node, "allows reduced-precision math attention on fp32 inputs")
            if attr in CACHE_METHODS and node.args and _calls_key(node.args[0], self.key_names):
                self.add("identity-cache", node, f"caches by {self._key_text(node.args[0])}")
        self.generic_visit(node)

    def _key_text(self, node) -> str:
        call = _calls_key(node, self.key_names)
        assert call is not None  # called only where _calls_key found one
        return "id(...)" if isinstance(call.func, ast.Name) else ".data_ptr()"

    def visit_Subscript(self, node):
        if _calls_key(node.slice, self.key_names):
            self.add("identity-cache", node, f"caches by {self._key_text(node.slice)}")
        self.generic_visit(node)

    def visit_Dict(self, node):
        for k in node.keys:
            if k is not None and _calls_key(k, self.key_names):
                self.add("identity-cache", node, f"caches by {self._key_text(k)}")
        self.generic_visit(node)

    def visit_Compare(self, node):
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and _calls_key(node.left, self.key_names):
            self.add("identity-cache", node, f"looks up a cache by {self._key_text(node.left)}")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        name = dotted(node)
        if node.attr == "_getframe":
            self.add("introspection", node, f"uses {name or '_getframe'}")
        if node.attr in ("accessPolicyWindow", "cudaStreamSetAttribute", "cudaLimitPersistingL2CacheSize"):
            self.add("persisting-l2", node, f"uses {node.attr}")
        if self.fp32 and name in LOW_DTYPES:
            self.add("precision", node, f"uses {name} on fp32 inputs")
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        for n in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if not isinstance(n, ast.Call):
                continue
            name = dotted(n.func)
            fallback = None
            if name == "Model" or name.endswith(".Model"):
                fallback = "constructs the reference Model"
            elif isinstance(n.func, ast.Attribute) and n.func.attr == "forward" and isinstance(n.func.value, ast.Call) \
                    and dotted(n.func.value.func) == "super":
                fallback = "calls super().forward"
            elif (name.startswith("torch.") and not name.startswith(HONEST_TORCH)) or name.startswith("F."):
                fallback = f"calls {name}"
            if fallback:
                self.add("reference-fallback", n, f"except handler {fallback} (falls back to the reference)")
                break
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            text = strip_cpp_comments(node.value)
            for rule, pattern, message in CPP_PATTERNS:
                m = pattern.search(text)
                if m:
                    self.add(rule, node, f"{message} ({m.group(0)})")
            m = CPP_PRECISION.search(text) if self.fp32 else None
            if m:
                self.add("precision", node, f"uses {m.group(0)} in C++ on fp32 inputs")


def scan(source: str, input_dtype: str = "float32") -> list[Finding]:
    """Findings for a candidate's source, sorted by line; an unparsable source is one `syntax` finding."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding("syntax", exc.lineno or 0, f"does not parse: {exc.msg}")]
    scanner = _Scanner(fp32=input_dtype == "float32")
    scanner.visit(tree)
    seen, out = set(), []
    for f in sorted(scanner.findings, key=lambda f: (f.line, f.rule)):
        if (f.rule, f.line, f.message) not in seen:
            seen.add((f.rule, f.line, f.message))
            out.append(f)
    return out
