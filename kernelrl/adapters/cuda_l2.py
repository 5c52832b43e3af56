"""Adapter for CUDA-L2 kernel files: wrap one in a kernelrl candidate (a .cu text to build with torch's headers).

A CUDA-L2 file (github.com/deepreinforce-ai/CUDA-L2, kernels/<gpu>_<MMA>/<M>_<N>_<K>.cu) defines

    void cuda_l2_<gpu>_<acc>(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c)

and its harness calls it on inputs zero-padded to the tile sizes the file declares (`BM = Int<128>{}` and the like;
no padding when the file does not declare all three), with `b_col_major` = B transposed (a contiguous (K, N)
tensor whose memory is B^T, N×K row-major) and `c` padded too. Each file is tuned and checked for the one shape in
its name. Files launch with `<<<grid, block, smem>>>`, that is on the default stream.

The wrapper built here gives such a file kernelrl's contract: A, B, C unpadded and row-major, a workspace and a
stream. Inside kernelrl_hgemm it pads A and B into the workspace where the shape is not a multiple of the tiles,
writes b_col_major there, calls the file's function on torch::from_blob views, and copies the valid M×N block into
C when C was padded. A file that never reads `b` (845 of the 1000 released H100 files) is built to take B as N×K
(`kernelrl_hgemm_b_layout` "nk": the caller's B^T, made outside the timed call as cuBLAS TN gets it), which is
b_col_major's memory itself: no transpose kernel per call, and a copy only where the shape must be padded. The
wrapper is compiled with `--default-stream per-thread`, so the file's default-stream
launches go to the per-thread stream; that stream is made torch's current stream for the call and joined to the
caller's stream with events before and after, so the work is ordered on the given stream and CUDA graphs capture it.
Those joins cost about 1.5 us a call on the H200 (benchmarks/results/h200/cuda_l2/wrapper_cost/), so where every
launch in the file is a `<<<>>>` on the default stream and it enqueues nothing any other way, the wrapper rewrites
those launches onto the caller's stream instead (direct_launch_source) and joins nothing; `kernelrl_hgemm_info`
says which (`"launch": "direct"` or `"joined"`).

The untimed-padding variant (CUDA-L2's own protocol, which pads outside its timed region) moves the padding and the
transpose into an extra export, kernelrl_hgemm_stage, that the evaluator calls whenever the inputs change; then
kernelrl_hgemm only runs the kernel and the copy-out of C.

torch's headers cost about a minute of compile per wrapper. A file that uses nothing of its tensors but sizes, data
pointers and a dtype check (968 of the 1000 released H100 files; `torch_api`) is built against kernelrl's stand-in
header instead (kernelrl/adapters/torch_shim): its tensors are views the wrapper makes of the padded operands, and no
torch library is linked. Any other file gets torch's own headers and libraries."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from kernelrl.build.builder import BuildRequest

ALIGN = 256  # every workspace region starts on this boundary (the file's kernels use 16-byte vector loads)

# nvcc flags of CUDA-L2's own build (tools/utils.py), plus the per-thread default stream the wrapper relies on.
NVCC_FLAGS = ("--default-stream", "per-thread", "--expt-extended-lambda", "--use_fast_math",
              "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-diag-suppress", "177")

_DETECT = re.compile(r"\bcuda_l2_\w+\s*\(\s*(?:const\s+)?(?:torch|at)::Tensor\b")
_DEFINITION = re.compile(r"\bvoid\s+(cuda_l2_\w+)\s*\(([^()]*)\)\s*\{")
_NAME = re.compile(r"cuda_l2_([A-Za-z0-9]+)_(fp16|fp32)")
_PARAM = re.compile(r"\s*((?:const\s+)?(?:torch|at)::Tensor\s*&?)\s*(\w+)\s*")
_TILE = re.compile(r"(BM|BN|BK)\s*=\s*Int<(\d+)>")  # CUDA-L2's extract_bm_bk_bn rule, applied per line
_SHAPE_NAME = re.compile(r"^(\d+)_(\d+)_(\d+)$")
# Evidence of the accumulator type in the code: CuTe MMA atoms, PTX mma/wgmma, WMMA accumulator fragments.
_ACC_EVIDENCE = (
    re.compile(r"\bSM\d{2,3}_\d+x\d+x\d+_F(16|32)F16F16(?:F16|F32)?_[A-Z]\w*"),
    re.compile(r"\bMMA_\d+x\d+x\d+_F(16|32)F16F16_[RS]S\w*"),
    re.compile(r"mma\.sync\.aligned\.m\d+n\d+k\d+\.row\.col\.f(16|32)\.f16\.f16\.f(?:16|32)"),
    re.compile(r"wgmma\.mma_async\.sync\.aligned\.m\d+n\d+k\d+\.f(16|32)\.f16\.f16"),
    re.compile(r"wmma::accumulator\s*,[^,<>]+,[^,<>]+,[^,<>]+,\s*(?:__)?(half|float)\b"),
)
# Host calls that wait for the whole device: a CUDA graph cannot capture them (device mode says so in its verdict).
# CuTe's CUTE_CHECK_LAST() is one: it synchronizes the device and exits the process on any error.
_DEVICE_SYNC = re.compile(r"\bcudaDeviceSynchronize\s*\(|\bCUTE_CHECK_LAST\s*\(\s*\)")
# What a file may use of torch to be built against kernelrl's stand-in header (kernelrl/adapters/torch_shim).
SHIM_DIR = Path(__file__).resolve().parent / "torch_shim"
SHIM_LINK = ("-cudart", "shared")
_SHIM_NAMES = {"torch::Tensor", "torch::kHalf", "torch::Half", "at::Half"}
_SHIM_METHODS = {"size", "data_ptr", "options", "dtype"}
_SHIM_HEADERS = {"torch/extension.h", "torch/types.h"}
_QUALIFIED = re.compile(r"\b(?:torch|at|c10)::\w+(?:::\w+)*")
_LIBRARY_INCLUDE = re.compile(r'#\s*include\s*[<"]((?:torch|ATen|c10|caffe2|pybind11)/[^>"]+)[>"]')
_TENSOR_DECL = re.compile(r"\b(?:torch|at)::Tensor\s*&?\s*(\w+)")
# What the function may do with `b` without reading its data.
_B_METADATA = re.compile(r"\s*\.\s*(?:size|sizes|dim|ndimension|options|dtype|scalar_type|device|is_cuda|numel|"
                         r"stride|strides|is_contiguous)\b")


@dataclass(frozen=True)
class CudaL2File:
    """What the adapter needs to know about one CUDA-L2 kernel file."""

    path: str
    function: str                          # e.g. cuda_l2_h100_fp32
    gpu: str                               # the GPU the file was tuned on, from the function name
    declared_acc: str                      # the accumulator the function name claims
    acc: str                               # the one the wrapper declares: fp16 if any MMA in the code accumulates
                                           # in fp16
    acc_evidence: tuple[str, ...]          # the MMA instructions found, e.g. SM80_16x8x16_F32F16F16F32_TN
    tiles: tuple[int, int, int] | None     # (BM, BN, BK) by CUDA-L2's rule; None: the harness pads nothing
    shape: tuple[int, int, int] | None     # (M, N, K) from a file name like 1024_64_4096.cu
    param_types: tuple[str, ...]           # the four parameter types, as written (for the forward declaration)
    reads_b: bool                          # the function may read `b`'s data (not only its sizes)
    sha256: str
    device_syncs: int = 0                  # cudaDeviceSynchronize() calls in the code (not in comments)
    torch_api: str = "torch"               # "shim": uses only what kernelrl's stand-in torch header offers
    launch: str = "joined"                 # "direct": its launches can be put on the caller's stream (below)

    @property
    def name(self) -> str:
        return Path(self.path).name


def is_cuda_l2_source(text: str) -> bool:
    """True for text in CUDA-L2's format (a cuda_l2_* function taking torch tensors) that is not already a candidate."""
    return bool(_DETECT.search(text)) and "kernelrl_hgemm" not in text


def parse_cuda_l2(text: str, path: str | os.PathLike = "<text>") -> CudaL2File:
    """Parse a CUDA-L2 kernel file. Raises ValueError with one line when the text is not in that format."""
    label = Path(path).name
    code = _strip_comments(text)
    bare = _blank_strings(code)
    defs = [m for m in _DEFINITION.finditer(bare) if "Tensor" in m.group(2)]  # not the __global__ kernels
    names = sorted({m.group(1) for m in defs})
    if not defs:
        raise ValueError(f"{label}: not a CUDA-L2 kernel file: no definition of "
                         f"void cuda_l2_<gpu>_<fp16|fp32>(torch::Tensor a, torch::Tensor b, "
                         f"torch::Tensor b_col_major, torch::Tensor c)")
    if len(names) > 1:
        raise ValueError(f"{label}: defines {len(names)} cuda_l2_ functions ({', '.join(names)}): expected one")
    match = defs[0]
    function = match.group(1)
    name = _NAME.fullmatch(function)
    if not name:
        raise ValueError(f"{label}: function {function} is not named cuda_l2_<gpu>_<fp16|fp32>")
    params = match.group(2).split(",")
    parsed = [_PARAM.fullmatch(p) for p in params]
    if len(params) != 4 or not all(parsed):
        raise ValueError(f"{label}: {function} must take four torch::Tensor parameters "
                         f"(a, b, b_col_major, c), not ({' '.join(match.group(2).split())})")
    matched = [p for p in parsed if p is not None]  # every one (checked above)
    types = tuple(" ".join(p.group(1).replace("&", " &").split()) for p in matched)
    b_name = matched[1].group(2)
    body = _body(bare, match.end() - 1)
    evidence = sorted({(m.group(0), m.group(1)) for rx in _ACC_EVIDENCE for m in rx.finditer(code)})
    accs = {"fp16" if bits in ("16", "half") else "fp32" for _, bits in evidence}
    declared = name.group(2)
    acc = "fp16" if declared == "fp16" or "fp16" in accs else "fp32"
    stem = Path(path).stem
    shape_match = _SHAPE_NAME.match(stem)
    return CudaL2File(path=str(path), function=function, gpu=name.group(1), declared_acc=declared, acc=acc,
                      acc_evidence=tuple(dict.fromkeys(e for e, _ in evidence)), tiles=extract_tiles(text),
                      shape=(int(shape_match[1]), int(shape_match[2]), int(shape_match[3])) if shape_match else None,
                      param_types=types, reads_b=_reads(body, b_name),
                      sha256=hashlib.sha256(text.encode()).hexdigest(),
                      device_syncs=len(_DEVICE_SYNC.findall(bare)),
                      torch_api="shim" if uses_only_the_shim(code) else "torch",
                      launch="direct" if direct_launch_source(text) is not None else "joined")


def _shim_sha() -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted((SHIM_DIR / "torch").glob("*.h")))).hexdigest()[:16]


def uses_only_the_shim(code: str) -> bool:
    """Whether code (comments stripped) needs nothing of torch beyond kernelrl's stand-in header: the only torch
    headers it includes are torch/extension.h and torch/types.h, the only torch names it writes are Tensor, kHalf and
    Half, and its tensors are asked only for sizes, data pointers, options and dtypes."""
    if any(h not in _SHIM_HEADERS for h in _LIBRARY_INCLUDE.findall(code)):
        return False
    bare = _blank_strings(code)
    if any(name not in _SHIM_NAMES for name in _QUALIFIED.findall(bare)):
        return False
    if any(m.group(1) != "dtype" for m in re.finditer(r"\.\s*options\s*\(\s*\)\s*\.\s*(\w+)", bare)):
        return False
    for var in set(_TENSOR_DECL.findall(bare)):
        for use in re.finditer(rf"\b{re.escape(var)}\b\s*(\.|->)\s*(\w+)", bare):
            if use.group(1) == "->" or use.group(2) not in _SHIM_METHODS:
                return False
    return True


def extract_tiles(text: str) -> tuple[int, int, int] | None:
    """(BM, BN, BK) exactly as CUDA-L2's harness finds them: per line, spaces removed, `BM = Int<128>` and the like,
    the last line winning; None unless all three are found (the harness then pads nothing)."""
    found: dict[str, int] = {}
    for line in text.split("\n"):
        m = _TILE.search(line.strip().replace(" ", ""))
        if m:
            found[m.group(1)] = int(m.group(2))
    if all(found.get(t, 0) > 0 for t in ("BM", "BN", "BK")):
        return found["BM"], found["BN"], found["BK"]
    return None


def layout(spec: CudaL2File, m: int, n: int, k: int) -> dict:
    """Workspace regions (byte offsets from the 256-byte-aligned base) for one shape; mirrors the C++ in the wrapper."""
    bm, bn, bk = spec.tiles or (1, 1, 1)
    mp, np_, kp = _round_up(m, bm), _round_up(n, bn), _round_up(k, bk)
    pad_a, pad_c = (mp, kp) != (m, k), (mp, np_) != (m, n)
    pad_b = spec.reads_b and (kp, np_) != (k, n)
    # A file that never reads `b` is given B^T (kernelrl_hgemm_b_layout "nk"), which is b_col_major's memory: a
    # copy only where it must be padded.
    own_bcm = spec.reads_b or (kp, np_) != (k, n)
    off, regions = 0, {}
    for region, needed, elems in (("a", pad_a, mp * kp), ("b", pad_b, kp * np_), ("b_col_major", own_bcm, np_ * kp),
                                  ("c", pad_c, mp * np_)):
        if needed:
            regions[region] = off
            off = _round_up(off + 2 * elems, ALIGN)
    return {"padded": (mp, np_, kp), "regions": regions, "bytes": off}


def workspace_bytes(spec: CudaL2File, m: int, n: int, k: int) -> int:
    """What kernelrl_hgemm_workspace returns: the regions plus ALIGN bytes of slack to align the base."""
    return layout(spec, m, n, k)["bytes"] + ALIGN


def info(spec: CudaL2File, untimed_padding: bool = False) -> dict:
    bm, bn, bk = spec.tiles or (None, None, None)
    return {"acc": spec.acc, "family": "cuda_l2",
            "params": {"BM": bm, "BN": bn, "BK": bk, "source": spec.name, "function": spec.function,
                       "declared_acc": spec.declared_acc, "mma": list(spec.acc_evidence),
                       "shape": list(spec.shape) if spec.shape else None,
                       "padding": "untimed" if untimed_padding else "timed", "sha256": spec.sha256[:16],
                       "device_syncs": spec.device_syncs, "torch_api": spec.torch_api, "launch": spec.launch}}


def wrapper_source(spec: CudaL2File, untimed_padding: bool = False, any_shape: bool = False,
                   torch_api: str | None = None) -> str:
    """The candidate .cu text. The CUDA-L2 file comes after all of the wrapper's own code (these files #define short
    macros such as BN and BK, which must not reach the wrapper): inline with its launches on the caller's stream where
    direct_launch_source can rewrite them, else #included by absolute path.

    By default kernelrl_hgemm_supports accepts only the shape in the file's name (when it has one): CUDA-L2 files
    hard-code parts of their shape. `any_shape` lifts that. `torch_api` ("shim" or "torch", default the file's own)
    picks the headers the wrapper is written for."""
    include = str(Path(spec.path).resolve())
    if any(c in include for c in '"\n\r'):
        raise ValueError(f"{spec.name}: the path {include!r} cannot be #included (it holds a quote or a newline)")
    bm, bn, bk = spec.tiles or (1, 1, 1)
    exact = spec.shape is not None and not any_shape
    sm, sn, sk = spec.shape or (0, 0, 0)
    api = torch_api or spec.torch_api
    if api == "shim" and spec.torch_api != "shim":
        raise ValueError(f"{spec.name}: uses more of torch than kernelrl's stand-in header offers; build it with "
                         f"torch's headers (torch_api='torch')")
    direct = direct_launch_source(Path(spec.path).read_text(errors="replace")) if spec.launch == "direct" else None
    if spec.launch == "direct" and direct is None:
        raise ValueError(f"{spec.name}: changed since it was read (its launches no longer rewrite): read it again")
    info_json = json.dumps(info(dataclasses.replace(spec, torch_api=api), untimed_padding), separators=(",", ":"))
    values = {
        "PATH": include, "SHA": spec.sha256, "MODE": "untimed (kernelrl_hgemm_stage pads; kernelrl_hgemm runs)"
        if untimed_padding else "timed (inside kernelrl_hgemm)",
        "FUNCTION": spec.function,
        "PARAMS": ", ".join(spec.param_types),
        "BM": str(bm), "BN": str(bn), "BK": str(bk), "ALIGN": str(ALIGN),
        "READS_B": "true" if spec.reads_b else "false", "EXACT": "true" if exact else "false",
        "SM": str(sm), "SN": str(sn), "SK": str(sk), "UNTIMED": "1" if untimed_padding else "0",
        "SHIM": "1" if api == "shim" else "0",
        # The stand-in's own text, so that editing it rebuilds (the build cache knows include folders by path)
        "SHIM_SHA": _shim_sha() if api == "shim" else "-",
        "INFO": info_json.replace("\\", "\\\\").replace('"', '\\"'),
        "DIRECT": "1" if direct is not None else "0",
        # Last: the file's own text may hold anything. Its launches rewritten onto the caller's stream, inline (with
        # its own line numbers in messages), or #included unchanged.
        "FILE": f'#line 1 "{include}"\n{direct}' if direct is not None else f'#include "{include}"',
    }
    text = _TEMPLATE
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    return text


def torch_build_flags() -> dict[str, tuple[str, ...]]:
    """Compile and link flags for code that uses torch's C++ API, for BuildRequest's flags/include_dirs/link.

    Include dirs are torch's own (include_paths() with the default device type) plus Python's, which
    torch/extension.h needs: nvcc brings CUDA's headers itself, and include_paths("cuda") would only add
    $CUDA_HOME/include (raising when CUDA_HOME is unset), which can belong to another toolkit than nvcc's."""
    import torch.utils.cpp_extension  # only to build against torch's C++ API: the adapter itself needs no torch
    cpp_extension = torch.utils.cpp_extension

    includes = list(cpp_extension.include_paths())
    python_include = sysconfig.get_paths().get("include")
    if python_include and os.path.isdir(python_include):
        includes.append(python_include)
    libs = list(cpp_extension.library_paths())
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    link = ([f"-L{d}" for d in libs] + ["-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-lc10", "-lc10_cuda"]
            + [f"-Xlinker=-rpath,{d}" for d in libs])
    return {"flags": (f"-D_GLIBCXX_USE_CXX11_ABI={abi}",), "include_dirs": tuple(includes), "link": tuple(link)}


def build_request(path: str | os.PathLike, name: str | None = None, untimed_padding: bool = False,
                  any_shape: bool = False, extra_flags: tuple[str, ...] = (), torch_api: str | None = None
                  ) -> BuildRequest:
    """A BuildRequest for the wrapper around the CUDA-L2 file at `path`: against kernelrl's stand-in torch header
    where the file allows it (no torch library linked), else against torch's own. `torch_api="torch"` forces the
    latter. Raises ValueError (one line) if the file is not in CUDA-L2's format."""
    path = Path(path).resolve()
    spec = parse_cuda_l2(path.read_text(errors="replace"), path)
    api = torch_api or spec.torch_api
    source = wrapper_source(spec, untimed_padding, any_shape, torch_api=api)
    if api == "shim":  # CUDA's runtime shared, as torch's extensions link it: ~30 KB a wrapper instead of ~1 MB
        return BuildRequest(source=source, name=name or path.stem, origin=str(path),
                            flags=NVCC_FLAGS + tuple(extra_flags), include_dirs=(str(SHIM_DIR),),
                            link=SHIM_LINK)
    torch_flags = torch_build_flags()
    return BuildRequest(source=source, name=name or path.stem,
                        origin=str(path), flags=NVCC_FLAGS + torch_flags["flags"] + tuple(extra_flags),
                        include_dirs=torch_flags["include_dirs"], link=torch_flags["link"])


# Host calls that put work on a stream some other way than a `<<<>>>` launch: a file that makes any of them keeps the
# fork/join, which orders whatever it enqueues on the per-thread default stream.
_OTHER_ENQUEUE = re.compile(r"\bcuda(?:Launch\w*|Memcpy\w*|Memset\w*|Stream\w*|Event\w*|Graph\w*|MallocAsync|"
                            r"FreeAsync|MemPrefetch\w*)\s*\(|\blaunch_kernel\w*\s*\(|\bcutlass::\w*[Ll]aunch")
_DEFAULT_STREAMS = {"0", "nullptr", "NULL", "cudaStreamDefault", "cudaStreamLegacy", "cudaStreamPerThread",
                    "(cudaStream_t)0", "cudaStream_t(0)"}
LAUNCH_STREAM = "kr_cl2_launch_stream"


def direct_launch_source(text: str) -> str | None:
    """The file's text with every `<<<grid, block[, smem[, stream]]>>>` launch on the default stream given the
    wrapper's stream instead (LAUNCH_STREAM, the caller's stream during a call), so the wrapper needs no fork/join
    around the call; None where that cannot be done safely: a launch on a stream of the file's own, or work enqueued
    any other way (cudaLaunchKernel*, async copies and sets, streams, events, graphs, CUTLASS's launchers)."""
    code = _strip_comments(text)  # the same length as text: positions carry over
    if _OTHER_ENQUEUE.search(_blank_strings(code)):
        return None
    edits: list[tuple[int, int, str]] = []
    start = code.find("<<<")
    while start >= 0:
        args, end = _launch_args(code, start + 3)
        if args is None:
            return None
        if len(args) == 2:
            edits.append((end, end, f", 0, {LAUNCH_STREAM}"))
        elif len(args) == 3:
            edits.append((end, end, f", {LAUNCH_STREAM}"))
        elif len(args) == 4 and " ".join(args[3].split()) in _DEFAULT_STREAMS:
            first = end - len(args[3])
            edits.append((first, end, f" {LAUNCH_STREAM}"))
        else:
            return None
        start = code.find("<<<", end + 3)
    if not edits:
        return None
    for first, last, new in reversed(edits):
        text = text[:first] + new + text[last:]
    return text


def _launch_args(code: str, i: int) -> tuple[list[str] | None, int]:
    """The top-level comma-separated arguments of a launch configuration starting at i (just after `<<<`), and the
    position of its closing `>>>`; (None, i) where it does not close."""
    depth, args, begin = 0, [], i
    while i < len(code):
        c = code[i]
        if depth == 0 and code.startswith(">>>", i):
            args.append(code[begin:i])
            return args, i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(code[begin:i])
            begin = i + 1
        elif c == ";":
            break
        i += 1
    return None, i


# -- helpers ---------------------------------------------------------------------------------------------------------
def _round_up(x: int, tile: int) -> int:
    return -(-x // tile) * tile


_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def _strip_comments(text: str) -> str:
    """Comments become spaces (newlines kept); string and character literals stay."""
    def repl(m):
        s = m.group(0)
        return s if s[0] in "\"'" else re.sub(r"[^\n]", " ", s)
    return _TOKENS.sub(repl, text)


def _blank_strings(code: str) -> str:
    """String and character literals become "" (asm strings hold braces that would upset brace matching)."""
    return _TOKENS.sub(lambda m: '""' if m.group(0)[0] == '"' else ("''" if m.group(0)[0] == "'" else m.group(0)),
                       code)


def _body(code: str, brace: int) -> str:
    depth = 0
    for i in range(brace, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return code[brace + 1:i]
    return code[brace + 1:]


def _reads(body: str, var: str) -> bool:
    """Whether the function body may read the data of tensor `var`: any use other than its metadata (sizes, dtype)
    or an argument to a CHECK* macro counts."""
    for m in re.finditer(rf"\b{re.escape(var)}\b", body):
        after, before = body[m.end():], body[:m.start()]
        if _B_METADATA.match(after):
            continue
        if re.search(r"\bCHECK\w*\s*\(\s*$", before) and re.match(r"\s*[,)]", after):
            continue
        return True
    return False


# The wrapper (cuda_l2_wrapper.cu.in beside this file, C++ kept in a C++ file): @@KEY@@ markers are replaced by
# wrapper_source().
_TEMPLATE = (Path(__file__).parent / "cuda_l2_wrapper.cu.in").read_text()
