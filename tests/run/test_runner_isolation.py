"""LocalRunner turns a worker's crash, hang or fatal error into a verdict for the method that was running, and
restarts a fresh worker for the rest. CPU-only stand-ins for the GPU worker speak its pipe protocol.

The stand-ins live at module top level: the runner spawns them, so they must be picklable by reference."""

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from kernelrl.harness.channel import KEY_FIELD, Sender
from kernelrl.run.protocol import tasks_of
from kernelrl.run.runner import LocalRunner, RunnerError, RunSettings, Task
from kernelrl.workloads.hgemm import GemmProblem

METHODS = [{"name": "good", "kind": "torch"}, {"name": "bad", "kind": "candidate", "lib_path": "x"},
           {"name": "also_good", "kind": "torch"}]
MODES = ["device", "offline"]


def _no_core_dumps():
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def _record(method, mode, skip):
    return {"method": method, "mode": mode, "time_us_median": 1.0, "time_us_p10": 0.9, "time_us_p90": 1.1,
            "samples": 3, "tflops": 1.0, "max_rel_err": 0.0, "verified": True, "reason": None,
            "extra": {"skip_seen": sorted(skip)}}


def _sender(conn, payload) -> Sender:
    """Each message tagged with the worker's key, as WorkerBase.send does (kernelrl/harness/channel.py)."""
    return Sender(conn, payload[KEY_FIELD])


def _serve(raw, payload, misbehave):
    """The protocol of run/worker.py::worker_main; `misbehave(conn, task_id, method)` may crash or hang."""
    _no_core_dumps()
    conn = _sender(raw, payload)
    conn.send(("env", {"gpu": "fake", "pid": os.getpid()}))
    for task in payload["tasks"]:
        records = []
        for spec in payload["methods"]:
            name = spec["name"]
            if name in task["skip"]:
                continue
            conn.send(("begin", task["id"], name, "time:device"))
            misbehave(conn, task["id"], name)
            records += [_record(name, mode, task["skip"]) for mode in task["modes"]]
        conn.send(("begin", task["id"], None, "report"))  # as WorkerBase.report announces each result
        conn.send(("task", task["id"], records))
    conn.send(("done",))


def _segfault_on_bad_task0(conn, task_id, method):
    if method == "bad" and task_id == 0:
        os.kill(os.getpid(), signal.SIGSEGV)


def _hang_on_bad_task0(conn, task_id, method):
    if method == "bad" and task_id == 0:
        time.sleep(1000)


def _exit_on_bad_capture(conn, task_id, method):
    if method == "bad" and task_id == 0:  # a CUDA-L2 file that exits when graph capture refuses its synchronize
        conn.send(("begin", task_id, method, "capture"))
        os._exit(1)


def _fatal_on_bad(conn, task_id, method):
    if method == "bad":
        conn.send(("fatal", task_id, method, "time:device", "crash", "CUDA error: an illegal memory access"))
        conn.close()
        os._exit(3)


def segfault_worker(conn, payload):
    _serve(conn, payload, _segfault_on_bad_task0)


def hang_worker(conn, payload):
    _serve(conn, payload, _hang_on_bad_task0)


def fatal_worker(conn, payload):
    _serve(conn, payload, _fatal_on_bad)


def capture_exit_worker(conn, payload):
    _serve(conn, payload, _exit_on_bad_capture)


def honest_worker(conn, payload):
    _serve(conn, payload, lambda *args: None)


def slow_start_worker(conn, payload):
    time.sleep(3)  # longer than the run's hang timeout (below), as a loaded machine's start-up can be
    _serve(conn, payload, lambda *args: None)


def startup_error_worker(conn, payload):
    _sender(conn, payload).send(("startup_error", "RuntimeError: no CUDA GPU visible to torch"))


def sandbox_blocks_gpu_worker(conn, payload):
    """A worker whose GPU cannot start while confined (CUDA's error 304 under Landlock, issue 43)."""
    send = _sender(conn, payload).send
    if not payload.get("unconfined_because"):
        send(("env", {"sandbox": "Landlock ABI 7: writes only beneath /tmp/x"}))
        send(("startup_error", "RuntimeError: no CUDA GPU visible to torch"))
        return
    send(("env", {"sandbox": f"off (a confined worker could not start its GPU here: "
                             f"{payload['unconfined_because']})"}))
    _serve(conn, payload, lambda *args: None)


def forging_worker(conn, payload):
    """Serves as _serve does, and on task 0's bad method something else in its process writes a result of its own to
    the pipe, untagged (a candidate that found the connection, or its file descriptor)."""
    raw = conn

    def forge(conn, task_id, method):
        if method == "bad" and task_id == 0:
            raw.send(("task", task_id, [_record("bad", "device", set())]))

    _serve(conn, payload, forge)


def _runner_marker(runner_pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"kernelrl-ran-in-runner-{runner_pid}"


class _MakesMarker:
    """Unpickling this calls os.mkdir: code a worker's message would run in the runner."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return os.mkdir, (self.path,)


def code_sending_worker(conn, payload):
    """Serves as _serve does, and on task 0's bad method sends, tagged with the worker's own key (what a candidate
    that read the key from the process's memory can do), a message whose unpickling would run code in the runner."""
    def send_code(sender, task_id, method):
        if method == "bad" and task_id == 0:
            sender.send(("task", task_id, [_MakesMarker(_runner_marker(os.getppid()))]))

    _serve(conn, payload, send_code)


def early_exit_worker(conn, payload):
    _no_core_dumps()
    os._exit(7)


def run(target, n_tasks=2, hang_timeout_s=30.0, methods=METHODS):
    tasks = [Task(i, GemmProblem(64, 64, 64 * (i + 1)), list(MODES)) for i in range(n_tasks)]
    got = []
    envs = []
    LocalRunner(worker_target=target).run(tasks, methods, RunSettings(hang_timeout_s=hang_timeout_s),
                                          lambda task, records: got.append((task.id, set(task.skip), records)),
                                          on_env=envs.append)
    return tasks, got, envs


def by_task_method(got):
    out = {}
    for task_id, _, records in got:
        for r in records:
            out.setdefault((task_id, r["method"]), []).append(r)
    return out


# -- crash ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def segfault_run():
    return run(segfault_worker)


def test_crash_becomes_the_running_methods_verdict(segfault_run):
    _, got, _ = segfault_run
    bad = by_task_method(got)[(0, "bad")]
    assert [r["mode"] for r in bad] == MODES
    for r in bad:
        assert not r["verified"] and r["time_us_median"] is None
        assert r["reason"].startswith("crash") and "SIGSEGV" in r["reason"]
        assert "time:device" in r["reason"]


def test_worker_is_restarted_with_the_culprit_skipped(segfault_run):
    tasks, got, envs = segfault_run
    assert "bad" in tasks[0].skip
    assert len(envs) == 2 and envs[0]["pid"] != envs[1]["pid"]  # a fresh process
    (task0_timings,) = [records for task_id, _, records in got if task_id == 0 and records[0]["verified"]]
    assert {r["method"] for r in task0_timings} == {"good", "also_good"}
    assert all(r["extra"]["skip_seen"] == ["bad"] for r in task0_timings)


def test_other_tasks_and_methods_complete_after_a_crash(segfault_run):
    _, got, _ = segfault_run
    table = by_task_method(got)
    for key in [(0, "good"), (0, "also_good"), (1, "good"), (1, "bad"), (1, "also_good")]:
        assert [r["mode"] for r in table[key]] == MODES, key
        assert all(r["verified"] for r in table[key]), key


def test_each_task_is_reported_once_per_method(segfault_run):
    _, got, _ = segfault_run
    assert all(len(records) == len(MODES) for records in by_task_method(got).values())


def test_a_death_during_capture_points_to_offline_mode():
    _, got, _ = run(capture_exit_worker)
    (bad,) = {r["reason"] for r in by_task_method(got)[(0, "bad")]}
    assert bad.startswith("crash: the worker died (exit code 1) during capture of the call into a CUDA graph")
    assert "--mode offline" in bad


# -- hang ----------------------------------------------------------------------------------------------------

def test_hang_becomes_a_verdict_and_the_rest_completes():
    tasks, got, _ = run(hang_worker, hang_timeout_s=5.0)
    table = by_task_method(got)
    assert all(r["reason"].startswith("hang") and not r["verified"] for r in table[(0, "bad")])
    assert "time:device" in table[(0, "bad")][0]["reason"]
    assert "bad" in tasks[0].skip
    assert all(r["verified"] for key in [(0, "good"), (0, "also_good"), (1, "bad")] for r in table[key])


# -- fatal and start-up errors -------------------------------------------------------------------------------

def test_fatal_message_gives_its_reason_to_that_method():
    tasks, got, _ = run(fatal_worker, n_tasks=1)
    table = by_task_method(got)
    assert {r["reason"] for r in table[(0, "bad")]} == {"crash: CUDA error: an illegal memory access"}
    assert all(r["verified"] for key in [(0, "good"), (0, "also_good")] for r in table[key])
    assert tasks[0].skip == {"bad"}


def test_a_slow_worker_start_up_is_not_judged_by_the_hang_timeout():
    _, got, _ = run(slow_start_worker, n_tasks=1, hang_timeout_s=1.0)
    assert all(r["verified"] for records in by_task_method(got).values() for r in records)


def test_startup_error_raises_runner_error():
    with pytest.raises(RunnerError, match="no CUDA GPU visible"):
        run(startup_error_worker, n_tasks=1)


def test_a_gpu_the_sandbox_keeps_from_starting_runs_unconfined_and_says_so(capsys):
    _, got, envs = run(sandbox_blocks_gpu_worker, n_tasks=2)
    assert all(r["verified"] for records in by_task_method(got).values() for r in records)
    assert len(by_task_method(got)) == 2 * len(METHODS)
    lines = [e["sandbox"] for e in envs if "sandbox" in e]
    assert lines[0].startswith("Landlock") and lines[-1].startswith("off (a confined worker could not start its GPU "
                                                                      "here: RuntimeError: no CUDA GPU visible")
    assert "goes on with unconfined workers" in capsys.readouterr().err


def test_death_before_any_method_raises_runner_error():
    with pytest.raises(RunnerError, match="exit code 7"):
        run(early_exit_worker, n_tasks=1)


def test_honest_worker_runs_once():
    _, got, envs = run(honest_worker)
    assert len(envs) == 1
    assert {key for key in by_task_method(got)} == {(t, m["name"]) for t in (0, 1) for m in METHODS}


# -- hot spare -------------------------------------------------------------------------------------------------

def spare_logging_worker(conn, payload):
    """Logs when it was spawned and when it got its tasks (a spare waits for them), then serves like _serve and
    segfaults on task 0's bad method."""
    log = payload["settings"]["blas_lib"]  # the test's log file, passed through a settings field
    with open(log, "a") as fh:
        fh.write(f"spawned {os.getpid()} {'spare' if payload['tasks'] is None else 'with-tasks'}\n")
    tasks = tasks_of(payload)
    if tasks is None:
        with open(log, "a") as fh:
            fh.write(f"dismissed {os.getpid()}\n")
        return
    with open(log, "a") as fh:
        fh.write(f"active {os.getpid()}\n")
    _serve(conn, dict(payload, tasks=tasks), _segfault_on_bad_task0)


def test_after_a_crash_the_hot_spare_spawned_beforehand_takes_over(tmp_path):
    log = tmp_path / "workers.log"
    tasks = [Task(i, GemmProblem(64, 64, 64 * (i + 1)), list(MODES)) for i in range(2)]
    got = []
    LocalRunner(worker_target=spare_logging_worker, hot_spare=True).run(
        tasks, METHODS, RunSettings(hang_timeout_s=30.0, blas_lib=str(log)),
        lambda task, records: got.append((task.id, set(task.skip), records)))
    events = [line.split() for line in log.read_text().splitlines()]
    how = {e[1]: e[2] for e in events if e[0] == "spawned"}
    active = [e[1] for e in events if e[0] == "active"]
    # the first worker with its tasks; after its crash, its spare (spawned beforehand, waiting); that one's own
    # spare, never needed, is dismissed or killed before it logs anything
    assert [how[p] for p in active] == ["with-tasks", "spare"]
    assert all(e[1] not in active for e in events if e[0] == "dismissed")
    results = by_task_method(got)
    assert results[(0, "bad")][0]["verdict"] == "crash" and all(r["verified"] for r in results[(1, "bad")])


def spare_that_dies_worker(conn, payload):
    """A spare dies while it waits (its task pipe closed first, then a marker file); a worker with tasks waits for
    that marker, serves and segfaults on task 0's bad method, so the dead spare is the one the restart finds."""
    marker = Path(payload["settings"]["blas_lib"])
    if payload["tasks"] is None:
        if not marker.exists():
            payload["task_pipe"].close()
            marker.write_text("dead")
            os._exit(5)
        tasks = tasks_of(payload)  # a later spare: waits as spares do
        if tasks is None:
            return
        payload = dict(payload, tasks=tasks)
    else:
        for _ in range(600):  # until the first spare is dead (a deadlock guard, not a timing bound)
            if marker.exists():
                break
            time.sleep(0.1)
    _serve(conn, payload, _segfault_on_bad_task0)


def test_a_spare_that_died_waiting_is_replaced_by_a_fresh_start(tmp_path):
    tasks = [Task(i, GemmProblem(64, 64, 64 * (i + 1)), list(MODES)) for i in range(2)]
    got = []
    LocalRunner(worker_target=spare_that_dies_worker, hot_spare=True).run(
        tasks, METHODS, RunSettings(hang_timeout_s=30.0, blas_lib=str(tmp_path / "spare_dead")),
        lambda task, records: got.append((task.id, set(task.skip), records)))
    results = by_task_method(got)
    assert results[(0, "bad")][0]["verdict"] == "crash" and all(r["verified"] for r in results[(1, "bad")])


def test_a_message_without_the_worker_s_tag_is_that_method_s_harness_patch_and_the_run_goes_on():
    _, got, _ = run(forging_worker)
    results = by_task_method(got)
    assert results[(0, "bad")][0]["verdict"] == "harness patch"
    assert "without the worker's tag" in results[(0, "bad")][0]["reason"]
    assert all(r["verified"] for r in results[(1, "bad")])  # a fresh worker for the rest


def test_a_tagged_message_that_would_run_code_in_the_runner_is_refused_before_anything_runs():
    marker = _runner_marker(os.getpid())
    _, got, _ = run(code_sending_worker)
    results = by_task_method(got)
    assert not marker.exists()
    assert results[(0, "bad")][0]["verdict"] == "harness patch"
    assert "plain data only" in results[(0, "bad")][0]["reason"]
    assert all(r["verified"] for r in results[(1, "bad")])
