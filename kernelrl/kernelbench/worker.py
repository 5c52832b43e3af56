"""The dynamic evaluation of KernelBench-format pairs: a spawned worker process that loads each task and its
candidate, checks the candidate's outputs against the reference, and times it beside the baselines, interleaved in
shuffled order.

This module describes it and names its verdict keys (`REASONS`); the code lies in modules of one idea each: the
parent side (pairs.py: `KBSettings`, `run_pairs`, `pair_verdict`, `task_result`, `failed_record`, all importable
from here too) and, in the worker process only, `KBWorker` (worker_process.py) with its guards and watch
(watch.py, tamper.py), inputs (inputs.py), checks (judge.py) and timing (timing.py).

It speaks the HGEMM worker's protocol (`begin`, `task`, `fatal`, `done`, `startup_error`) so `LocalRunner` turns
a crash or hang into the verdict of whatever ran ("candidate", "reference" or a baseline) and restarts a fresh
worker for the rest. Candidate code runs only here, never in the parent. A candidate that changed the process
itself (patched a function, started a thread, changed a numerics flag, read the harness's memory) gets a `fatal`
verdict: this worker exits and a fresh one evaluates the remaining pairs, so nothing it did outlives its pair. After
any other defence verdict the worker asks to be replaced too (`recycle`), and after a kernel census on CUDA (the
profiler's CUPTI session can break CUDA graphs replayed later in the process): a verdict depends only on its own pair.

Before any pair runs, `run_pairs` builds every candidate's torch extensions (kernelrl/kernelbench/build.py), and the
worker points torch's extension folder at the candidate's own, so importing only loads. Before a candidate loads,
one reference call measures the task's footprint (an input set and the reference output) and the memory plan
(kernelbench/memory_plan.py) counts what each phase holds beside it (the copies, held outputs, the timing pool, the
baselines' static copies, chunked comparisons): where that does not fit the device, copies move to the host and,
only then, checks are reduced (fewer held outputs, fewer timing input sets, static baselines untimed), each named in
the records' notes; a task that cannot fit even so gets `task too large` (what it needs, what is free) without
running the candidate. An out-of-memory error of the reference's own call, or of the harness's copies, is `task too
large` too; one of the candidate's call is its own verdict only where the reference's call fits beside the same
copies.

Records (harness.record.Record as plain dicts, one per (pair, baseline)): method "candidate", mode "kb", baseline,
verified, reason, verdict (the key), max_abs_err, max_rel_err, tolerance (the one it was judged by), candidate_us,
baseline_us, speedup (baseline median / candidate median). A worker crash
or hang gives the runner's `verdict_records` instead (method = what was running, verified False).

Defences, in the order a candidate meets them (each verdict starts with the key in `REASONS`):

- Load: the module import and `ModelNew(...)` run under the same watch as every call (below); a class named `Model`
  (or the task's own Model) among ModelNew's bases is `inherits Model`. An OS thread (/proc/self/task, native ones
  too) still running after the load that was not there before it, or a GPU still busy after the load for longer
  than 0.1 s plus twice what the reference's load left: `background activity` (torch's own pools are started when
  the worker starts, so they are never the candidate's).
- Every candidate call (checks, warm-up and timed calls): an audit hook (installed before any candidate code runs,
  permanent) reports frame and heap introspection the candidate's own code performs (`sys._getframe`,
  `sys._current_frames`, `gc.get_objects`/`get_referrers`/`get_referents`, `tb_frame`/`gi_frame`/... access,
  `sys.settrace`/`setprofile`): `introspection` (the walk up the stack skips `inspect`/`traceback` helpers; library
  code's own use is not the candidate's, library code known by what its file compiles to, not by the file name a
  code object carries: kernelbench/code_origin.py). A thread started from the candidate's code (audit event,
  Python 3.12+), or a Python thread alive after the call that was not before: `thread`. Timers, synchronize, the
  Event and Stream classes and the harness's own functions are captured before any candidate code runs (the harness
  times with its captured copies) and compared after every call: `timer patch` / `harness patch`. So are torch's own
  functions
  the reference calls (kernelrl/kernelbench/tamper.py: torch.*, torch.nn.functional.*, torch.Tensor methods, the
  nn modules' methods and globals), global module hooks and torch modes, also before the baselines are prepared
  and around every baseline's timed calls: a wrapper that slows the reference is `harness patch` before a
  baseline is timed beside it. A static finding that the source assigns to a timer or a torch, time, sys or
  builtins attribute (static_checks `timer-patch` / `harness-patch`) fails a pair that every dynamic check
  passed, with that key. TF32 and reduced-precision flags
  against their state at start-up: `precision`. The persisting-L2 set-aside (`cudaLimitPersistingL2CacheSize`,
  read through the driver): `persisting L2`. A file opened for writing, removed, renamed or an SQLite database
  opened outside the worker's scratch folder, its caches and the extension root (harness/sandbox.py, whose kernel
  confinement also stops writes no Python hook sees): `file write`, and the write is refused. All of these are
  fatal (fresh worker).
- Checks, each call on fresh clones, the reference computed after the candidate's call (its output never exists in
  memory while the candidate runs), compared with TF32 off under two tolerance profiles (harness/tolerance.py:
  `strict`, fp32 atol=rtol=1e-4 and fp16/bf16 1e-2; `kernelbench`, 1e-2 for every dtype), one of which
  (`tolerance_profile`) decides `verified`; a pair that passes only the looser one is checked to the end and timed,
  and every record says which profiles it passes and the tightest tolerance its outputs met. Where the reference
  itself is non-finite (its own overflow or NaN on the inputs drawn), the candidate must hold the same non-finite
  values there (a note says so) and the rest is compared as usual. Before the candidate loads, the reference is
  called twice on the same inputs: a random one (dropout in training mode, random numbers in forward) is judged
  call by call, each checked candidate call and its reference right after the same `torch.manual_seed` (a note
  says so), and one that does not repeat itself even then is `random reference`, a verdict on the task:
  1. the task's inputs (seed 0); on CUDA the call is a guarded one (`memguard`): free memory poisoned, so elements
     never written show the pattern (`unwritten output`), and writes outside every block the call allocated are
     `out-of-bounds write`;
  2. the same input tensors (same addresses, same Python objects) refilled in place with other values: an answer
     cached by pointer or `id` comes back stale (`stale result`: the output matches the previous call's answer);
  3. a copy of those inputs with a few elements (secret positions) set to the tensor's max and min: a cache keyed
     on a partial content fingerprint comes back stale (`stale result`);
  4. the remaining public seeds and the per-run secret seed, each with the task's distribution and uniform(-2, 2);
  5. a smaller batch (dim 0 cut to about half, when every input shares it and the reference accepts it): a kernel
     correct only at the benchmark shape is `specialised to the benchmark shape: ...`;
  6. CUDA only: inputs poisoned, then made ready on the caller's stream behind a ~5 ms spin kernel, the output
     copied on the caller's stream right after the call returns: work on a side stream (Python or C++) that does
     not wait for the caller's stream, or that the caller's stream does not wait for, is `stream order: ...`.
  Every check call runs under `sys.settrace` for the candidate's own frames (its file's, and code it made at run time
  under any name: strings compiled, code objects built or unmarshalled): an exception that passed through its
  code while the call still returned normally is `reference fallback` (try/except around a kernel). Every output
  stays alive until the checks end (a candidate cannot tell checking from timing by whether its last output lives).
  Each output: `wrong shape`/`wrong type`/`tensor subclass` (lazy or deferred tensors), `returned an input` (its
  storage is an input's), `modified inputs`, `wrong dtype`/`wrong device`, `unwritten output`, `NaN/Inf`,
  `stale result`, `wrong values`, `same tensor every call` (a preallocated or constant output).
- Timing: every method's every call gets a fresh clone of one of a few input sets with a few elements (secret
  positions) changed, so no two calls see the same inputs (content caches miss, and an answer a baseline left in
  freed memory is for other inputs); the L2 is flushed (256 MB write) before each call; host clock around a
  device-wide synchronize. Each round's last call and about a third of the others (at least one more per round,
  chosen with the run's secret; every call gets the same pristine copy of its inputs, checked or not, so the
  candidate cannot tell) are checked against the reference, computed after the call (`during timing: ...`):
  counting calls, detecting warm-up or dropped outputs and cheating later is caught. Each round's last call is also
  timed with events on the caller's stream: synchronized time well beyond the event time is `hidden work`.
- Crashes (including sticky CUDA errors, probed after an exception) and hangs: `crash: ...`, `hang: ...`.
- After the worker accepts a pair (KBSettings.referee, on by default): kernelbench/referee.py runs it again in two
  processes the candidate cannot reach, the task's reference alone and the candidate alone, and compares values and
  runner-timed speed with what the worker reported (`referee: ...`): code in the candidate's process can reach the
  worker's objects through raw memory reads and report for it (docs/reward_hacks.md)."""

from __future__ import annotations

import importlib

from kernelrl.kernelbench.pairs import (DEFAULT_BASELINES, MODE, KBSettings, KBTask, failed_record, pair_verdict,
                                        progress_line, run_pairs, task_result, worker_main)

__all__ = ["DEFAULT_BASELINES", "MODE", "REASONS", "KBSettings", "KBTask", "failed_record",
           "pair_verdict", "progress_line", "run_pairs", "task_result", "worker_main"]

REASONS = {
    "exception": "the candidate raised (at import, construction or a call)",
    "inherits Model": "ModelNew derives from the reference Model",
    "reference kernels": "the candidate's call launched every kernel the reference's does: PyTorch computed the "
                         "output (a wrapped reference; a no-op, unused or forgotten kernel beside it; a ghost "
                         "branch); with own_kernels (kb eval --own-kernels) only",
    "introspection": "the candidate read frames or the heap (reference outputs, harness state)",
    "thread": "the candidate started a thread (work hidden from the timer)",
    "background activity": "loading the candidate left OS threads (native ones too) or GPU work running: work outside "
                           "its calls",
    "timer patch": "the candidate replaced a timer, synchronize, or the Event/Stream classes",
    "harness patch": "the candidate replaced a function the harness checks or reports with, or a torch function "
                     "the reference calls (or installed a global module hook or torch mode), at run time or in "
                     "its source",
    "precision": "the candidate changed TF32 or reduced-precision settings",
    "persisting L2": "the candidate set aside L2 for persisting accesses",
    "file write": "the candidate wrote (or tried to) outside the worker's scratch folder: the results database, "
                  "the task files",
    "reference fallback": "an exception passed through the candidate's code and the call still returned",
    "wrong shape": "output count or shape differs",
    "wrong type": "an output is not a tensor where the reference's is",
    "tensor subclass": "an output is a Tensor subclass (lazy or deferred values)",
    "returned an input": "an output shares an input's storage",
    "modified inputs": "the call changed its inputs",
    "wrong dtype": "output dtype differs",
    "wrong device": "output device differs",
    "unwritten output": "output elements hold the poison written to free memory before the call",
    "NaN/Inf": "non-finite output where the reference is finite",
    "stale result": "the output is the previous call's answer (cached by pointer, id or fingerprint)",
    "wrong values": "beyond the dtype's tolerance",
    "same tensor every call": "the output is the same storage as the previous call's (preallocated or constant)",
    "out-of-bounds write": "the call wrote free memory outside every block it allocated",
    "specialised to the benchmark shape": "wrong (or failing) on a smaller batch the reference accepts",
    "stream order": "wrong when read on the caller's stream right after the call (unsynchronized side stream)",
    "during timing": "a check of a sampled timed call failed",
    "hidden work": "synchronized time far beyond the caller's stream's event time",
    "referee": "run again outside its worker's process (kernelbench/referee.py), its outputs or its timed speed "
               "disagree with what its worker reported, or it would not run there",
    "random reference": "the task's outputs differ on the same inputs even after the same seed: nothing to judge "
                        "a candidate against",
    "input-independent reference": "the task's output (nearly) ignores its input: all zeros, one constant or the "
                                   "output of other inputs passes its tolerance, even scale-aware; a verdict on the "
                                   "task, out of fast_p",
    "tolerance cannot tell": "under the run's tolerance profile a trivial output passes on this task, even "
                             "scale-aware (a stricter profile can tell): not correct under it, out of its fast_p",
    "crash": "the worker died or the CUDA context broke",
    "hang": "no progress within the timeout",
}

# Worker-process names, importable from here as before; their modules import torch, so only on first use.
WORKER_SIDE = {"KBWorker": "kernelrl.kernelbench.worker_process", "Fatal": "kernelrl.kernelbench.watch",
               "Held": "kernelrl.kernelbench.inputs"}


def __getattr__(name: str):
    if name in WORKER_SIDE:
        return getattr(importlib.import_module(WORKER_SIDE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
