"""The KernelBench worker process: `KBWorker` loads each task and its candidate, runs the checks and the timing and
reports one record per baseline (what it checks, in which order: kernelrl/kernelbench/worker.py). Its parts are
mixins, one idea each: the guards and the watch over the candidate's code (watch.py), the inputs (inputs.py), the
correctness checks (judge.py) and the timing (timing.py); this module holds the pair's course from loading to the
report. Candidate code runs only in this process, which the parent starts through `pairs.worker_main`."""

from __future__ import annotations

import gc
import importlib
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

import torch
from torch.utils import cpp_extension

from kernelrl.harness import process_settings
from kernelrl.harness.device_state import DeviceState
from kernelrl.harness.dispatch_guard import DispatchGuard
from kernelrl.harness.record import Record
from kernelrl.harness.rounds import Clocks
from kernelrl.harness.sandbox import enter_emptied_dir
from kernelrl.harness.tolerance import input_independent
from kernelrl.harness.verdicts import Category, Rejected, Verdict
from kernelrl.harness.worker_base import LOAD_SETTLE_BUDGET_S, WorkerBase, os_threads
from kernelrl.kernelbench import extension_fence, memory_plan, pair_residue
from kernelrl.kernelbench.build import extension_dir, use_extension_dir
from kernelrl.kernelbench.census import CensusMixin
from kernelrl.kernelbench.call_trace import hide_trace
from kernelrl.kernelbench.failed_builds import replaying
from kernelrl.kernelbench.inputs import InputsMixin, _storage, host_copy, model_bytes, module_tensors, redraw_bytes
from kernelrl.kernelbench.judge import JudgeMixin, new_errors
from kernelrl.kernelbench.memguard import MemoryGuard
from kernelrl.kernelbench.memory_plan import Footprint
from kernelrl.kernelbench.memory_report import MemoryReportMixin
from kernelrl.kernelbench.pairs import MODE
from kernelrl.kernelbench.reference_probe import ReferenceProbeMixin
from kernelrl.kernelbench.tamper import load_compiler_configs, static_tampering
from kernelrl.kernelbench.task_guard import TaskSnapshot
from kernelrl.kernelbench.tasks import load_module
from kernelrl.kernelbench.timing import TimingMixin
from kernelrl.kernelbench.watch import Fatal, WatchMixin, _short, audit_thread_starts
from kernelrl.run.protocol import RECYCLE, serve


def _load_verdict(exc: BaseException) -> Rejected:
    """The verdict of a candidate that failed to import or construct: a build that failed inside the worker is a
    compile error, a package this environment lacks an environment verdict, anything else its exception."""
    text = str(exc)
    if "Error building extension" in text:
        return Rejected(Verdict.COMPILE_ERROR, _short(exc))
    if isinstance(exc, ModuleNotFoundError):
        return Rejected(Verdict.ENVIRONMENT, f"the candidate imports {exc.name!r}, which this environment does not "
                                             f"have: install it where the evaluation runs, or leave it out")
    return Rejected(Verdict.EXCEPTION, _short(exc))


class KBWorker(WorkerBase, WatchMixin, InputsMixin, JudgeMixin, TimingMixin, CensusMixin, ReferenceProbeMixin,
               MemoryReportMixin):
    """The KernelBench workload's worker: a candidate is a Python module (ModelNew) imported into this process."""

    def __init__(self, conn, payload: dict):
        super().__init__(conn, payload)
        self.s = payload["settings"]
        self.flush_buf = None
        self.guard = None
        self.cand_file: str | None = None
        self.armed = False
        self.in_hook = False
        self.hits: list[tuple[str, str]] = []  # (verdict key, what) seen while the candidate ran
        self._arena = 0
        self.notes: list[str] = []  # harness-side degradations, reported in every record's `extra`
        self.pair_notes: list[str] = []  # what this pair's task did that the verdict had to allow for
        self.known_failures: list[dict] = []  # the build step's failed builds of this pair's candidate (payload)
        self.writable_run: list | None = None  # the run's writable folders; per pair, narrowed (extension_fence.py)
        self.fence: dict | None = None  # other candidates' built libraries before this pair's candidate loaded
        self.own_extensions: str | None = None  # this pair's candidate's extension folder
        self.residue: pair_residue.ProcessState | None = None  # the process as this pair began (pair_residue.py)
        self.base_environ: dict[str, str] | None = None  # the environment before the first pair
        self.base_settings: process_settings.Settings | None = None  # the interpreter's settings then
        self.own_loads: set[str] = set()  # extension folders whose libraries their own candidate's pairs loaded here
        self.task_notes: list[str] = []  # the same for the task itself (kept with it while it is reused)
        self.task_cache: tuple | None = None  # (key, module, reference model, footprint verdict, footprint, ...)
        # set by _task: the task's input and output bytes, its input bytes, the seconds its reference's load took
        self.footprint: int
        self.input_bytes: int
        self.ref_settle_s: float
        self.task_reused = False  # whether this pair's task came from the cache (reported in `extra`)
        self.rounds_run = 0  # timed rounds the pair's timing ran (fewer than asked where they settled)
        self.time_spread: dict[str, dict] = {}  # method -> p10, p90 (µs) and n of its timed calls (set by _time)
        self.baseline_fns: dict = {}  # the cached task's prepared baselines, by name
        self.mem_plan: memory_plan.Plan | None = None  # the task's memory plan (kernelbench/memory_plan.py), kept
        # with the task
        self.mem_base = 0  # device bytes allocated when the plan measured what is free (the models, flush buffer)
        self.spill_inputs = False  # `_inputs` returns host copies (the checks' pristine inputs, where the plan says)
        self.trivial_probes: list = []  # the task's outputs' trivial alternatives (kernelbench/trivial.py)
        self.task_verdicts: dict[str, str] = {}  # profile -> why the task cannot tell right from trivial there
        self.trivial_audit: dict = {}  # profile -> alternative -> [within atol = rtol, judged correct]
        self.task_snapshot: TaskSnapshot | None = None  # the task module as loaded (task_guard.py)
        self.profiled = False  # a kernel census profiled CUDA in this process (census.py): recycled after its pair
        self.pair_dir = ""  # the working directory of the pair being judged (beneath the scratch folder: start)

    def prepare(self):
        """The imports made before any candidate code; a hot spare makes them while it waits (a start took 3.8 s
        after CUDA's on the H100, 65 starts in the GPU suite; torch's compiler configs are most of it on the CPU)."""
        sys.dont_write_bytecode = True  # imports write no .pyc: every write left is a candidate's (watch._audit)
        for name in ("kernelrl.kernelbench.memguard", "kernelrl.kernelbench.tasks", "kernelrl.harness.stats",
                     "kernelrl.harness.tolerance", "kernelrl.harness.device_state", "kernelrl.harness.verdicts",
                     "kernelrl.kernelbench.build", "kernelrl.harness.compare", "kernelrl.harness.record",
                     "kernelrl.kernelbench.static_checks", "kernelrl.kernelbench.tamper"):
            importlib.import_module(name)  # every harness module is loaded before any candidate code runs
        load_compiler_configs()  # their settings known before any candidate code (tamper.compiler_settings)

    def start(self):
        self.torch = torch
        self.device = torch.device(self.s["device"])
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            if not torch.cuda.is_available():
                raise RuntimeError("no CUDA GPU visible to torch")
            torch.cuda.init()
            if self.s.get("flush_l2_mb"):
                self.flush_buf = torch.empty(self.s["flush_l2_mb"] << 20, dtype=torch.uint8, device=self.device)
            props = torch.cuda.get_device_properties(0)
            self.send("env", {"gpu": props.name, "torch": torch.__version__, "cuda_runtime": torch.version.cuda})
        else:
            self.send("env", {"gpu": "cpu", "torch": torch.__version__, "cuda_runtime": None})
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        # the imports were made by prepare(), which protocol.serve runs first (a hot spare while it waits)
        self._cuda_sync = torch._C._cuda_synchronize if self.cuda else None
        self._Event = torch.cuda.Event
        self._event_record = torch.cuda.Event.record
        self._event_elapsed = torch.cuda.Event.elapsed_time
        self._current_frames = sys._current_frames
        self._manual_seed = torch.manual_seed
        self.seeded, self.call_seed = False, 0
        self._settrace, self._gettrace = sys.settrace, sys.gettrace
        hide_trace()  # before the guards: they guard what sys.gettrace is now (call_trace.py)
        # the timed rounds' clocks, from the copies above (a candidate may replace the module-level ones)
        self.clocks = Clocks(now=time.perf_counter, sync=self.sync,
                             event=(lambda: self._Event(enable_timing=True)) if self.cuda else None,
                             record=self._event_record, elapsed_ms=self._event_elapsed)
        self.state = DeviceState(torch, self.cuda)
        self.threads_audited = audit_thread_starts()  # before the guards: they guard its wrappers
        # a build the build step saw fail (the candidate caught it) fails here at once, and the pair says so
        cpp_extension._run_ninja_build = replaying(cpp_extension._run_ninja_build, self.known_failures)
        self.guards = self._capture_guards()
        self.precision0 = self._precision()
        self.switches0, self.switches_at_watch = self.state.switches(), None
        self.l2_0 = self._persisting_l2()
        self._know_library()
        self.dispatch = DispatchGuard(self.library)  # the dispatcher before any candidate code (dispatch_guard.py)
        if self.cuda:
            self.guard = MemoryGuard(torch, self.device, sync=self.sync)
        self._start_torch_pools()
        # each pair runs in its own working directory (run_task): paths given relative to this one
        self.launch_dir = os.getcwd()
        self.pair_dir = os.path.join(tempfile.gettempdir(), "pair")
        if self.s.get("extensions_dir"):
            self.s["extensions_dir"] = os.path.abspath(self.s["extensions_dir"])
        sys.addaudithook(self._audit)
        self._freeze_instance()

    def _start_torch_pools(self):
        """Start the threads torch itself keeps (the CPU intra-op pool, the CUDA driver's, cuBLAS's) before any
        candidate loads: the background check compares the process's threads across a candidate's load, and a
        candidate whose __init__ is the first to run a parallel CPU op must not be charged with torch's pool."""
        x = torch.randn(1 << 21)
        x.sum(), x.mul_(2)  # parallel over 2M elements: the OpenMP team starts here
        if self.cuda:
            a = torch.randn(256, 256, device=self.device)
            (a @ a).sum().item()
            self.sync()

    def _fence_check(self, failure: Rejected | None) -> Rejected | None:
        """Another candidate's built library rewritten or removed since this candidate loaded: its `file write`,
        whatever verdict it had earned (the kernel census's `reference kernels` comes later in a pair than the write,
        and a write that changes another candidate's verdict is the finding to name)."""
        if self.fence is None:
            return failure
        moved = extension_fence.changed(self.fence, extension_fence.libraries(self._fenced(),
                                                                              self.own_extensions or ""))
        self.fence = None
        if not moved or (failure is not None and failure.verdict is Verdict.FILE_WRITE):
            return failure
        return Rejected(Verdict.FILE_WRITE, f"the candidate rewrote or removed another candidate's built extension "
                                            f"({', '.join(moved[:3])}): its verdict would depend on this one")

    def _as_built(self, own: Path, record: dict | None) -> None:
        """The candidate's extension folder as its build left it, else emptied (built again in this pair from the
        candidate's own sources): another pair's write there never decides this candidate's verdict."""
        if record is None:  # a payload from before the build step recorded folders
            return
        changed = extension_fence.altered(own, record)
        if changed:
            what = ", ".join(c or "the whole folder, past the walk's bounds" for c in changed[:3])
            emptied = extension_fence.empty(own)
            self._build_note(f"its extension folder had changed since its build, or its build had not finished "
                             f"({what}{', ...' if len(changed) > 3 else ''}): "
                             + ("emptied, for the candidate to build again" if emptied else
                                "could not be emptied: the candidate loads what is left"))

    def _fenced(self) -> list[str]:
        """The folders the fence watches: this run's candidates' (run_pairs), else the whole extension root."""
        return list(self.s.get("fenced") or [self.s["extensions_dir"]])

    def _build_note(self, note: str) -> None:
        if note not in self.pair_notes:
            self.pair_notes.append(note)

    def sync(self):
        if self.cuda:
            self._cuda_sync()

    # -- one pair ----------------------------------------------------------------------------------------------
    def run_task(self, task: dict):
        tid, skip = task["id"], set(task.get("skip", ()))
        task = {**task, **{k: os.path.join(self.launch_dir, task[k]) for k in ("task_path", "candidate_path")}}
        # a fresh working directory: a candidate that builds into a relative folder (`cuda_extensions/`, as many
        # KernelBench kernels do) writes where it may, and sees none of the pair before it
        enter_emptied_dir(self.pair_dir)
        # the environment as the worker began (a pair's CXX, CUDA_HOME or flags would build the next pair's
        # extension: that pair's verdict would depend on this one's)
        if self.base_environ is None:
            self.base_environ, self.base_settings = dict(os.environ), process_settings.read()
        else:
            pair_residue.restore_environ(self.base_environ)
            assert self.base_settings is not None  # read with base_environ
            process_settings.restore(self.base_settings)
            self.state.restore_switches(self.switches0)
        self.residue = pair_residue.capture()
        self.pair_notes = []
        self.fence = None  # read again once this pair's candidate folder is known
        self.own_extensions = None
        self.known_failures[:] = task.get("failed_builds") or ()  # in place: the build wrapper holds this list
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()  # the pair's peak, beside its plan's (`_memory_report`)
        if "candidate" in skip or "reference" in skip:
            self.report(tid, [])  # the runner already reported this pair's verdict
            return
        baselines = [b for b in self.s["baselines"] if b not in skip]
        self.base_seed = zlib.crc32(task["name"].encode()) & 0x7FFF_FFFF
        self.begin(tid, "reference", "load")
        tmod, ref, too_large = self._task(tid, task["task_path"])
        self.call_seed = self.base_seed
        if self.seeded:
            self.pair_notes.append("the reference is random (two calls on the same inputs differ: dropout in training "
                                   "mode, random numbers in forward): each checked candidate call and its reference "
                                   "ran right after the same torch.manual_seed")
        ref_state = ref.state_dict()
        if too_large:
            self._report(tid, baselines, too_large, {}, {})
            return self._after_pair(too_large)
        self.begin(tid, "candidate", "load")
        self.cand_file = self.trace.file = str(Path(task["candidate_path"]).resolve())
        self.trace.own.clear()  # the last candidate's code objects (load_module gives this one's)
        # read before any of its code runs; decides the verdict only if every dynamic check passes (those name
        # what the patch did)
        static = static_tampering(Path(self.cand_file).read_text(), Path(task["task_path"]).read_text())
        if self.s.get("extensions_dir"):
            root = self.s["extensions_dir"]
            folder = os.path.realpath(extension_dir(root, self.cand_file))
            if folder not in self.own_loads and any(extension_fence.inside(p, folder)
                                                    for p in extension_fence.mapped_libraries(root)):
                # its library is loaded here already, and not by an earlier pair of its own: a load would get that
                # one, not what its folder holds; a fresh worker judges this pair (it was not reported)
                return RECYCLE
            own = use_extension_dir(root, self.cand_file)
            if self.writable_run is None:
                self.writable_run = list(self.writable)
            self.writable = extension_fence.pair_writable(self.writable_run, self.s["extensions_dir"], own)
            self.own_extensions = str(own)
            self._as_built(own, task.get("built_contents"))
            self.fence = extension_fence.libraries(self._fenced(), own)
        threads = os_threads()
        before = self._watch()
        try:
            cmod = load_module(task["candidate_path"], on_code=self.trace.note_file_code)
            cand = self._construct(cmod.ModelNew, list(tmod.get_init_inputs()), "ModelNew", self.pair_notes)
            own = cand.state_dict()
            shared = {k: v for k, v in ref_state.items() if k in own and own[k].shape == v.shape}
            if shared:
                cand.load_state_dict(shared, strict=False)
            cand = cand.to(self.device)
        except Exception as exc:
            self._unwatch(before, "load", threads)
            failure: Rejected | None = _load_verdict(exc)
            self._report(tid, baselines, failure, {}, {})
            return self._after_pair(failure)
        # OS threads: native ones too (a C++ extension's, pthread_create through ctypes: no audit event sees them)
        self._unwatch(before, "load", threads)
        if moved := self.task_snapshot.reference_values("during load"):  # type: ignore[union-attr]
            raise Fatal(Verdict.HARNESS_PATCH, moved)
        try:  # GPU work the load left running: the reference's own load sets the scale (its weights made there)
            self.check_device_settled(self.clocks.now, self.clocks.sync, "the candidate's load",
                                      LOAD_SETTLE_BUDGET_S + 2 * self.ref_settle_s)
        except RuntimeError as exc:  # a kernel the load launched failed
            self._probe_context(exc)
            failure = Rejected(Verdict.EXCEPTION, f"a kernel launched while loading failed: {_short(exc)}")
            self._report(tid, baselines, failure, {}, {})
            return self._after_pair(failure)
        errs = new_errors()
        assert self.mem_plan is not None  # made with the task's footprint, which fit (too_large is None)
        self.spill_inputs = self.mem_plan.pristine_on_host  # the checks' pristine inputs on the host (memory plan)
        try:
            self._check_class(cand, ref)
            self._verify(tid, tmod, ref, cand, errs)
        except torch.OutOfMemoryError as exc:  # the harness's own copies: the task's verdict, not the candidate's
            failure = self._too_large(exc, "the checks")
            self._report(tid, baselines, failure, errs, {})
            return self._after_pair(failure)
        except Rejected as exc:
            self._report(tid, baselines, exc, errs, {})
            return self._after_pair(exc)
        finally:
            self.spill_inputs = False
        self._free()
        try:
            times, failure, base_reasons = self._time(tid, tmod, ref, cand, baselines, errs)
        except torch.OutOfMemoryError as exc:
            times, failure, base_reasons = {}, self._too_large(exc, "the timing"), {}
        failure = failure or static
        if failure is None or failure.verdict.category is not Category.DEFENCE:
            # every operator read again (about 70 ms): a kernel registered after the load, out of torch.library's
            # record, is this pair's verdict, not the next pair's
            foreign = self.dispatch.foreign(everything=True)
            if foreign:
                failure = Rejected(Verdict.HARNESS_PATCH, f"{'; '.join(foreign[:3])} by the pair's end: PyTorch's "
                                                          f"own operators compute the reference and the checks")
            if moved := self.task_snapshot.reference_values("by the pair's end"):  # type: ignore[union-attr]
                failure = Rejected(Verdict.HARNESS_PATCH, moved)
        if failure is None and errs["numerics"] is None and self.s.get("own_kernels"):
            failure = self._census(tid, tmod, ref, cand)
        numerics_only = failure is None and errs["numerics"] is not None
        if numerics_only:  # every check passed a looser profile: timed for it, not correct under this run's own
            looser = ", ".join(p for p, ok in errs["passes"].items() if ok)
            failure = Rejected(Verdict.WRONG_VALUES, f"{errs['numerics']}; within the {looser} profile's")
        task_says = self.task_verdicts.get(self.s.get("tolerance_profile", "strict"))
        timed = numerics_only or failure is None
        if failure is None and task_says:  # every check passed, but this task cannot tell right from trivial
            blind = Verdict.INPUT_INDEPENDENT if input_independent(self.task_verdicts) else Verdict.TOLERANCE_BLIND
            failure = Rejected(blind, task_says)
        self._report(tid, baselines, failure, errs, times, base_reasons, timed=timed)
        return self._after_pair(failure)

    def _task(self, tid, path: str):
        """The task's module, its reference model and its footprint verdict, made once for consecutive pairs of one
        task (a GRPO group, several candidates of a task): the compiled baselines are kept with them
        (`self.baseline_fns`), so torch.compile runs once per task and worker, not once per pair."""
        key = (Path(path).name, zlib.crc32(Path(path).read_bytes()))  # the same task file, wherever it lies
        self.task_reused = self.task_cache is not None and self.task_cache[0] == key
        if self.task_reused:
            assert self.task_cache is not None
            _, tmod, ref, too_large, self.footprint, self.input_bytes, self.ref_settle_s, self.seeded, \
                self.task_notes, self.trivial_probes, self.task_verdicts, self.trivial_audit = self.task_cache
            return tmod, ref, too_large
        self.task_cache, self.task_snapshot = None, None  # the last task's, dropped before the next one loads
        self._drop_baselines()
        self._release_pinned()
        self._free()
        tmod = load_module(path)
        init = list(tmod.get_init_inputs())
        self.task_notes = []
        ref = self._construct(tmod.Model, init, "the task's Model", self.task_notes).to(self.device)
        t0 = self.clocks.now()
        self.sync()
        self.ref_settle_s = self.clocks.now() - t0  # the scale for the candidate's load (check_device_settled)
        too_large = self._measure_footprint(tid, tmod, ref)
        self.trivial_probes, self.task_verdicts, self.trivial_audit = [], {}, {}
        if too_large is None:
            too_large = self._probe_trivial(tid, tmod, ref)
        self.task_cache = (key, tmod, ref, too_large, self.footprint, self.input_bytes, self.ref_settle_s,
                           self.seeded, self.task_notes, self.trivial_probes, self.task_verdicts, self.trivial_audit)
        # compared after every stretch of candidate code (watch._tampered); the reference's values after the load,
        # before every reference call (judge._reference) and at the pair's end
        self.task_snapshot = TaskSnapshot(tmod, ref)
        return tmod, ref, too_large

    def _construct(self, cls, init: list, who: str, notes: list[str]):
        """`cls(*init)` under the run's seed, built on the device (its weights initialised there: an 8192 x 8192
        Linear takes half a second on the CPU, and level 2 has a dozen) where KernelBench builds on the CPU and
        moves; both sides are built alike and the candidate gets the reference's weights, so the judged outputs are
        comparable either way. A constructor that fails on the device is built again on the CPU, with a note in
        `notes`."""
        if self.cuda and self.s.get("build_on_device", True):
            self._manual_seed(self.base_seed)
            try:
                with self.torch.device(self.device):
                    return cls(*init)
            except Exception as exc:  # e.g. a constructor that calls .numpy() on a tensor it made
                notes.append(f"{who} built on the CPU and moved: its constructor failed on the device "
                             f"({_short(exc)})")
        self._manual_seed(self.base_seed)
        return cls(*init)

    def _after_pair(self, failure: Rejected | None):
        """Free the pair's memory; after a defence verdict ask for a fresh worker (what a cheat did to this
        process, it may have done in ways no check saw), and after a kernel census on CUDA too (the profiler's CUPTI
        session would make a later pair's CUDA graphs crash: that pair's verdict would depend on this one)."""
        if self.mem_plan is not None and not self.mem_plan.keep_baselines:
            self._drop_baselines()  # memory_plan: not kept beside the next pair's checks
        self._free()
        defence = failure is not None and failure.verdict.category is Category.DEFENCE
        # what the pair left in this process that a later pair would get (its finalizers ran in _free)
        residue = self.residue is not None and self._left_behind(self.residue)
        if self.own_extensions and not residue:
            # what this pair loaded from its own folder, it loaded from its build as checked: a later pair of the
            # same candidate (a repeated sample) may use it in this worker
            self.own_loads.add(os.path.realpath(self.own_extensions))
        if residue:  # said where the run's log shows it: a fresh worker for the next pair is this pair's cost
            print(f"kernelrl: a fresh worker after this pair, which {'; '.join(residue)}", file=sys.stderr, flush=True)
        return RECYCLE if defence or self.profiled or residue else None

    def _left_behind(self, residue: pair_residue.ProcessState) -> list[str]:
        """What this pair left that a later pair would get: pair_residue's reasons and a lowered hard limit."""
        lowered = process_settings.lowered_limits(self.base_settings) if self.base_settings is not None else []
        return pair_residue.left_behind(residue, self.own_extensions) + lowered

    def _free(self):
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def _measure_footprint(self, tid, tmod, ref) -> Rejected | None:
        """The task's footprint (one input set and the reference output), from one reference call before any
        candidate code runs, and its memory plan (kernelbench/memory_plan.py): what the worker holds in each phase
        and, where the full plan does not fit this device, the spills and reductions that make it fit (named in
        the records' notes). The pair's verdict when even every reduction does not fit."""
        torch = self.torch
        self.footprint = self.input_bytes = 0
        self.seeded = False
        self.mem_plan = None
        self.begin(tid, "reference", "footprint")
        draw_extra = temporaries = 0
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        try:
            inputs: list | None = self._inputs(tmod, self.base_seed, "task", host=False)
            if self.cuda:  # get_inputs' own temporaries (a product of two draws), then the call's alone
                draw_extra = max(0, torch.cuda.max_memory_allocated() - base - self._nbytes(inputs))
                torch.cuda.reset_peak_memory_stats()
            out = self._call(ref, inputs)
            self.sync()
        except torch.OutOfMemoryError as exc:
            inputs = out = None
            self._free()
            return Rejected(Verdict.TOO_LARGE, f"the task's own inputs and reference call do not fit this device "
                                               f"({_short(exc)})")
        in_bytes, out_bytes = self._nbytes(inputs), self._nbytes(out)
        self.footprint = in_bytes + out_bytes
        self.input_bytes = in_bytes
        if self.cuda:
            temporaries = max(0, torch.cuda.max_memory_allocated() - base - self.footprint)
        fp = Footprint(in_bytes, out_bytes, temporaries, max(draw_extra, redraw_bytes(inputs)), model_bytes(ref))
        try:
            random = self._random_reference(ref, inputs, out)
        except torch.OutOfMemoryError:  # no room for a second output: judged as a deterministic task
            random = None
        del inputs, out
        self._free()
        if random is not None:
            return random
        s = self.s
        checks = 3 + 2 * max(0, s["n_seeds"] - 1) + 2
        if not self.cuda:
            self.mem_plan = memory_plan.full(fp, input_sets=s["input_sets"], baselines=tuple(s["baselines"]),
                                             checks=checks)
            return None
        free, total = torch.cuda.mem_get_info()
        used = total - free  # the context, the models, the flush buffer, other processes
        free += torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        if s.get("memory_cap_gib"):  # evaluate as on a card of this much memory (an 80 GB card's plan on a larger)
            free = min(free, int(s["memory_cap_gib"] * memory_plan.GIB) - used)
        self.mem_plan = memory_plan.plan(fp, free, memory_plan.host_available(), input_sets=s["input_sets"],
                                         baselines=tuple(s["baselines"]), checks=checks)
        self.mem_base = torch.cuda.memory_allocated()  # the models and the flush buffer: what `free` excludes
        if not self.mem_plan.fits:
            return Rejected(Verdict.TOO_LARGE, self.mem_plan.refusal())
        if note := self.mem_plan.note():
            self.task_notes.append(note)
        return None

    def _out_of_memory(self, tid, ref, pristine, phase, exc: Rejected) -> Rejected:
        """The verdict of a candidate call that failed with `exc`. Where it ran out of device memory, the
        reference's own call runs on the same inputs beside the same copies: if it runs out too, the task is too
        large for this device (not the candidate's verdict); if it fits, the candidate needs more than the
        reference, and the verdict is its own."""
        if not (self.cuda and exc.verdict is Verdict.EXCEPTION and "out of memory" in exc.detail.lower()):
            return exc
        exc.__traceback__ = None  # the failed call's frames (and the memory they hold) go
        self._free()
        try:
            self._reference(tid, ref, pristine, f"{phase} (memory)")
        except Rejected as too_large:
            return too_large
        self._free()
        return Rejected(Verdict.EXCEPTION, f"{exc.detail} (the reference's own call fits beside the same copies)")

    def _prev_reference(self, ref, ref_out):
        """The previous check's reference output as the next check keeps it: on the host where the memory plan
        says (`stale result` compares it in chunks), except tensors the reference model owns (a reference that
        returns the same buffer every call: `same tensor every call` compares storages)."""
        plan = self.mem_plan
        if not (self.cuda and plan is not None and plan.prev_ref_on_host):
            return ref_out
        own = {_storage(t) for t in module_tensors(ref)}

        def keep(x):
            if isinstance(x, (tuple, list)):
                return [keep(y) for y in x]
            if isinstance(x, torch.Tensor) and x.device.type == "cuda" and _storage(x) not in own:
                return host_copy(x)
            return x
        return keep(ref_out)

    def _release_pinned(self):
        """Return the pinned host blocks torch cached for the last task's spilled copies (inputs.host_copy)."""
        empty = getattr(torch._C, "_host_emptyCache", None) or \
            getattr(getattr(torch, "accelerator", None), "empty_host_cache", None)
        if self.cuda and empty is not None:
            gc.collect()
            try:
                empty()
            except RuntimeError:
                pass

    def _drop_baselines(self):
        """Release the prepared baselines (their static copies); torch.compile's CUDA graph trees keep theirs in
        a private pool until dynamo is reset."""
        compiled = any(name.startswith("compile") for name in self.baseline_fns)
        self.baseline_fns = {}
        if compiled and self.cuda and "torch._dynamo" in sys.modules:
            gc.collect()
            sys.modules["torch._dynamo"].reset()

    def _report(self, tid, baselines, failure: Rejected | None, errs, times, base_reasons=None, timed=False):
        """One record per baseline. `timed`: every check passed under some tolerance profile, so the candidate's
        time and speedups are reported (and count for the profiles in `profiles`) even when `verified` (this run's
        own profile) is False."""
        self.begin(tid, None, "report")  # closes the pair's last phase
        failure = self._fence_check(failure)
        phases = self.take_phases()
        reason, verdict, detail = (str(failure), failure.verdict.value, failure.detail) if failure is not None else \
            (None, None, None)
        cand_us = times.get("candidate") if timed else None
        profiles = {p: bool(timed and cand_us is not None and ok and p not in self.task_verdicts)
                    for p, ok in (errs.get("passes") or {}).items()}
        records = []
        for b in baselines:
            base_us = times.get(b)
            ok = reason is None and cand_us is not None
            records.append(Record(
                "candidate", MODE, verified=ok, reason=reason, verdict=verdict, detail=detail,
                time_us_median=cand_us if ok else None, max_rel_err=errs.get("max_rel_err"),
                extra={"task_reused": self.task_reused, "task_phase_s": phases, "rounds_run": self.rounds_run,
                       **({"time_spread": self.time_spread} if timed and self.time_spread else {}),
                       **({"trivial_audit": self.trivial_audit} if self.trivial_audit else {}),
                       **({"memory": memory} if (memory := self._memory_report()) else {}),
                       **({"notes": notes} if (notes := self.notes + self.task_notes + self.pair_notes) else {})},
                baseline=b,
                candidate_us=cand_us, baseline_us=base_us,
                speedup=base_us / cand_us if base_us and cand_us else None,
                max_abs_err=errs.get("max_abs_err"), tolerance=errs.get("tolerance"),
                baseline_reason=(base_reasons or {}).get(b), profile=self.s.get("tolerance_profile", "strict"),
                profiles=profiles or None, tightest_tolerance=errs.get("tightest") if profiles else None,
                task_verdicts=dict(self.task_verdicts) or None,
                kernelbench_rule=errs.get("kernelbench_rule")).to_dict())
        self.report(tid, records)

    def _call(self, model, inputs):
        with torch.no_grad():
            return model(*inputs)


def serve_worker(conn, payload: dict):
    """The worker process's life: the runner protocol of kernelrl.run.protocol, with `Fatal` ending it."""
    serve(conn, payload, KBWorker(conn, payload), fatal=(Fatal,))
