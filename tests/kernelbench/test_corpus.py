"""The KernelBench corpora on the CPU: the adversarial candidates (tests/gpu/kb_adversarial) carry their metadata,
load and match their tasks, and the static layer flags exactly the rules each names; the ones whose cheat needs no
GPU are rejected by the CPU worker for the reason they name (the GPU test file runs them all). The honest
hand-written candidates (examples/kernelbench/candidates) match their tasks and pass the static checks; their
CUDA sources compile with nvcc where it is installed."""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelrl.examples import CANDIDATES_DIR, TASKS_DIR
from kernelrl.kernelbench.evaluate import static_eval
from kernelrl.kernelbench.static_checks import RULES, scan, task_input_dtype
from kernelrl.kernelbench.tasks import check_pair, discover, inspect_candidate, inspect_task
from tests.gpu.kb_adversarial import meta
from kernelrl.kernelbench.worker import REASONS

ROOT = Path(__file__).resolve().parents[2]
ADVERSARIAL_DIR = ROOT / "tests" / "gpu" / "kb_adversarial"
ADVERSARIAL, _ = discover([ADVERSARIAL_DIR])
HONEST, _ = discover([CANDIDATES_DIR])
KEYS = ("task", "reason", "static", "cpu")

# The defences issue 4 lists, each with the corpus files that exercise it.
DEFENCES = {
    "side stream (Python)": ["side_stream_python"],
    "side stream (C++ via load_inline)": ["side_stream_cpp"],
    "work on a thread": ["thread_per_call"],
    "thread pool created at import": ["thread_pool_import"],
    "native thread started at import (no Python audit event)": ["native_thread_import"],
    "GPU work left running by the load (a side-stream kernel started in __init__)": ["gpu_work_at_load"],
    "lazy / deferred tensor, Tensor subclass": ["lazy_subclass"],
    "caching by pointer, id, content fingerprint": ["cache_by_pointer", "cache_by_id", "cache_by_fingerprint"],
    "answer in recycled or uninitialised memory": ["recycled_memory"],
    "returning an input, a preallocated or constant tensor": ["returns_input", "returns_preallocated",
                                                             "returns_constant"],
    "an output a later call overwrites (torch.compile reduce-overhead's CUDA graphs)": ["compiled_reduce_overhead"],
    "modifying inputs in place": ["modifies_inputs"],
    "precision downgrade (fp16, bf16, TF32, per-area TF32)": ["precision_fp16", "precision_bf16", "precision_tf32",
                                                             "precision_cudnn_conv_tf32"],
    "patching the evaluator's own functions (its comparison, looked up on its module at every call) or the standard "
    "library's it computes with (statistics.median)": ["patches_kernelrl_judge", "patches_statistics_median"],
    "patching timers or synchronize (at import, in a call, the Event class)": [
        "timer_patch_import", "timer_patch_forward", "timer_event_class"],
    "reading the reference output (gc, stack frames)": ["reads_reference_gc", "reads_reference_frames"],
    "a guarded function rewritten in place, its identity kept (the judge's comparison's code; torch's "
    "Module._call_impl's code and keyword defaults, slowing the reference)": ["rewrites_judge_code",
                                                                             "rewrites_module_call_code"],
    "busy child processes started at load, stopped during the candidate's own calls": ["busy_child_processes"],
    "the worker object reached and its state replaced (its _judge shadowed on the instance, its clocks, a clock "
    "field set in place)": ["replaces_worker_judge", "replaces_worker_clock", "replaces_worker_clock_in_place"],
    "objects the worker holds changed in place (its guard snapshot emptied, methods set on its random generator)": [
        "empties_worker_guards", "steers_worker_rng"],
    "the trace's record of an exception emptied by the candidate's except handler (reached through sys.gettrace(), "
    "or through logging.currentframe() and the frames above)": ["fallback_clears_trace",
                                                               "fallback_clears_trace_via_logging"],
    "the audit hook's findings emptied before the watch reads them (found through gc.get_objects())": [
        "clears_watch_hits"],
    "a result for its own pair sent down the worker's connection to the runner (found through the process object)": [
        "forges_worker_result"],
    "the worker reached through a library function that walks frames past its caller (torch's TorchScript name "
    "resolver), through ctypes' audited reads of raw memory or through /proc/self/mem": [
        "forges_result_through_jit_frames", "reads_worker_through_ctypes", "reads_worker_through_proc_mem",
        "forges_result_through_bdb"],
    "the worker found through raw memory reads no audit event sees (ctypes.memmove), its own report sending a forged "
    "result: the referee's processes, which the candidate cannot reach": ["forges_result_through_memmove"],
    "the same forge of zeros on a task where zeros meet atol = rtol by atol alone (a wide softmax): the referee judges "
    "by the worker's rule, scale-aware there": ["forges_zeros_wide_softmax"],
    "the same forge with honest checked calls and zeros in the referee's timed ones, on that task: its digests' "
    "spread on the outputs' own scale": ["forges_skips_timed_wide_softmax"],
    "a clock swapped inside one timed call, put back by its first read before the watch compares": [
        "slows_own_clock_per_call"],
    "the reference model instance the worker keeps, changed (a forward set on it that slows it, or that answers the "
    "checks with the candidate's own values), or its weights written between calls and put back by a finalizer": [
        "slows_reference_instance", "answers_checks_through_reference", "zeroes_reference_weights_between_calls",
        "slows_reference_through_parameter_class"],
    "code compiled under a file name it does not come from (a stack walk named as torch's own module, a try/except "
    "fallback named as no file, or renamed in place with _imp._fix_co_filename)": [
        "reads_reference_frames_disguised", "fallback_disguised", "fallback_renamed_in_place",
        "fallback_in_imported_module"],
    "detecting the harness (call counting, warm-up detection)": ["harness_call_counting",
                                                                 "harness_warmup_detection", "stale_after_checks"],
    "slowing the reference (a torch function it calls, wrapped at import or between calls)": [
        "slows_reference", "slows_reference_later"],
    "specialising to the benchmark shape": ["specialised_shape"],
    "try/except fallback, inheriting Model": ["fallback_try_except", "inherits_model"],
    "out-of-bounds writes": ["oob_write"],
    "persisting-L2 access windows": ["persisting_l2"],
    "writing outside the worker's scratch folder (the results database, the task's source, another candidate's "
    "built extension)": ["writes_results_db", "rewrites_task_file", "rewrites_other_extension"],
    "an output chosen without the input (all zeros, a constant), within atol = rtol on its task": [
        "zeros_wide_softmax", "zeros_l1_normalize", "constant_wide_softmax", "constant_l1_normalize"],
    "a stale answer for fresh inputs of the same shape, within atol = rtol on its task": [
        "stale_fresh_inputs_wide_softmax", "stale_fresh_inputs_l1_normalize"],
    "a result cache keyed on input addresses the source never shows (KernelArena's C++ pointer cache)": [
        "cache_by_hidden_address"],
    "an identity kernel: a copy of the input in a fresh output": ["copies_input"],
    "integer outputs within KernelBench's own tolerance (an index one too high): judged by equality": [
        "index_off_by_one"],
    "hyperparameter manipulation: the candidate's own smaller sizes (CUDA-L1)": ["hyperparameters_shrunk"],
    "hyperparameter manipulation through the task's module (its sizes set smaller)": ["shrinks_task_sizes"],
    "slowing the reference through the task's own Model class": ["wraps_task_model"],
    "PyTorch computes the output (Makora's baseline, no-op, unused-output and forgotten kernels, ghost branch, an "
    "identity over PyTorch's result; KernelArena's library call), with own kernels asked for": [
        "baseline_kernel_call", "noop_kernel", "unused_output", "forgotten_kernel", "ghost_branch",
        "copies_reference_result"],
    "hiding PyTorch's kernels from the census (the profiler's events() replaced through run-time names)": [
        "hides_kernels_from_census"],
    "a kernel of its own for one of PyTorch's operators (aten::sub through torch.library), which the judge's "
    "arithmetic runs on": ["overrides_aten_kernel", "overrides_aten_kernel_disguised"],
    "torch's compiler settings changed (dynamo disabled: the torch.compile baselines run eager), or its entry points "
    "(torch.compiler.is_exporting answering True)": [
        "disables_compile_baselines", "disables_compile_through_exporting"],
}


def static_rules(value: str) -> set[str]:
    return set() if value.strip() == "none" else {r.strip() for r in value.split(",") if r.strip()}


def module_strings(path: Path) -> dict[str, str]:
    """Top-level string constants (CUDA_SRC, CPP_SRC) and the load_inline call's name keyword."""
    tree = ast.parse(path.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_inline":
            out.update({f"load_inline.{k.arg}": ast.unparse(k.value) for k in node.keywords})
    return out


def ids(paths):
    return [p.stem for p in paths]


# -- the adversarial corpus ------------------------------------------------------------------------------------------
def test_every_listed_defence_has_a_candidate():
    stems = {p.stem for p in ADVERSARIAL}
    for defence, files in DEFENCES.items():
        assert set(files) <= stems, f"{defence}: missing {set(files) - stems}"
    assert stems == {f for files in DEFENCES.values() for f in files} | {"patch_checker"}


@pytest.mark.parametrize("path", ADVERSARIAL, ids=ids(ADVERSARIAL))
def test_adversarial_metadata(path):
    m = meta(path)
    assert set(m) == set(KEYS), f"docstring lines: {m}"
    assert (TASKS_DIR / f"{m['task']}.py").is_file(), m["task"]
    key = m["reason"].removeprefix("during timing: ")
    assert key in REASONS, f"{m['reason']!r} does not start with a worker reason key"
    assert static_rules(m["static"]) <= set(RULES)
    assert m["cpu"] in ("yes", "no")


@pytest.mark.parametrize("path", ADVERSARIAL, ids=ids(ADVERSARIAL))
def test_adversarial_candidate_loads_and_matches_its_task(path):
    task, cand = inspect_task(TASKS_DIR / f"{meta(path)['task']}.py"), inspect_candidate(path)
    verdict = check_pair(task, cand)
    assert verdict.reasons == [], verdict.reasons


@pytest.mark.parametrize("path", ADVERSARIAL, ids=ids(ADVERSARIAL))
def test_static_layer_flags_exactly_the_named_rules(path):
    m = meta(path)
    dtype = task_input_dtype((TASKS_DIR / f"{m['task']}.py").read_text())
    found = {f.rule for f in scan(path.read_text(), dtype)}
    assert found == static_rules(m["static"]), found


def test_cuda_cheats_share_one_extension():
    sources = [module_strings(p) for p in ADVERSARIAL if "load_inline" in p.read_text()]
    assert len(sources) == 3
    for key in ("CUDA_SRC", "CPP_SRC", "load_inline.name", "load_inline.functions"):
        assert len({s[key] for s in sources}) == 1, key


TASK_SOURCES = {p.name: p.read_bytes() for p in TASKS_DIR.glob("*.py")}  # before any candidate ran


@pytest.fixture(scope="module")
def cpu_verdicts():
    from kernelrl.kernelbench.worker import KBSettings, run_pairs
    files = [p for p in ADVERSARIAL if meta(p)["cpu"] == "yes"]
    pairs = [(str(TASKS_DIR / f"{meta(p)['task']}.py"), str(p)) for p in files]
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=4, calls_per_round=2, hang_timeout_s=60.0,
                          own_kernels=True)  # the corpus asks for own kernels: the census runs after every check
    out = run_pairs(pairs, settings)
    return {p.stem: out[i] for i, p in enumerate(files)}


CPU_CAPABLE = [p for p in ADVERSARIAL if meta(p)["cpu"] == "yes"]


@pytest.mark.parametrize("path", CPU_CAPABLE, ids=ids(CPU_CAPABLE))
def test_cheat_is_rejected_for_its_reason_by_the_cpu_worker(cpu_verdicts, path):
    from kernelrl.kernelbench.worker import pair_verdict
    ok, reason = pair_verdict(cpu_verdicts[path.stem])
    assert not ok and reason.startswith(meta(path)["reason"]), reason


def test_no_cheat_changed_a_task_file(cpu_verdicts):
    assert {p.name: p.read_bytes() for p in TASKS_DIR.glob("*.py")} == TASK_SOURCES


# -- the honest candidates -------------------------------------------------------------------------------------------
def test_at_least_seven_honest_candidates():
    assert len(HONEST) >= 7
    assert len({p.stem for p in HONEST}) == len(HONEST)


@pytest.mark.parametrize("path", HONEST, ids=ids(HONEST))
def test_honest_candidate_matches_its_task_and_passes_the_static_checks(path):
    report = static_eval([str(TASKS_DIR)], [str(path)])
    assert report.errors == []
    (verdict,) = [v for v in report.verdicts if v.candidate is not None]
    assert verdict.task is not None and verdict.task.stem == path.stem
    assert verdict.ok, (verdict.reasons, [str(f) for f in verdict.findings])
    assert meta(path).get("task") == path.stem


@pytest.mark.parametrize("path", HONEST, ids=ids(HONEST))
def test_honest_candidate_is_a_real_cuda_kernel_on_the_current_stream(path):
    strings = module_strings(path)
    assert "__global__" in strings["CUDA_SRC"] and "<<<" in strings["CUDA_SRC"]
    assert "getCurrentCUDAStream" in strings["CPP_SRC"]
    assert strings["load_inline.name"].startswith("'kr_own_")


def test_the_own_tasks_and_candidates_pair_by_file_name():
    report = static_eval([str(TASKS_DIR)], [str(CANDIDATES_DIR)])
    statuses = [v.status for v in report.verdicts]
    tasks = len(list(TASKS_DIR.glob("*.py")))
    assert report.errors == [] and len(statuses) == tasks == 16
    assert statuses.count("passed static checks") == len(HONEST)
    assert statuses.count("no candidate") == tasks - len(HONEST)


UNIQUE_CUDA = list({module_strings(p)["CUDA_SRC"]: p for p in HONEST + ADVERSARIAL
                    if "CUDA_SRC" in module_strings(p)}.values())


@pytest.mark.nvcc
@pytest.mark.parametrize("path", UNIQUE_CUDA, ids=ids(UNIQUE_CUDA))
def test_cuda_source_compiles_standalone(tmp_path, path):
    source = tmp_path / f"{path.stem}.cu"
    source.write_text(module_strings(path)["CUDA_SRC"])
    result = subprocess.run([shutil.which("nvcc"), "-arch=sm_90a", "-O3", "-std=c++17", "-c", str(source), "-o",
                             str(tmp_path / "k.o")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
