"""Spread tasks over the GPUs of a Ray cluster: one actor per GPU, each running the ordinary runner on its share of
the tasks; results come back to the driver, which commits them as they arrive (so nothing measured is lost and the
database has one writer). Libraries are built once by the driver: one host, or a filesystem every node shares.

Each inner run pays a fixed price (the local runner spawns a GPU worker process, imports torch, loads every
library), so a call gives each actor one share, striped so cheap and costly shapes mix evenly (tasks come sorted by
cost), and the actors live on across calls (a tuning run makes one call per batch of shapes). Small fixed-size
sub-batches made the first two-GPU tune slower than one GPU (benchmarks/results/h200x2/summary.md)."""

from __future__ import annotations

from kernelrl.run.runner import Runner, RunnerError


class _Collector:
    """Records what an inner runner reports, to replay it on the driver."""

    def __init__(self):
        self.events = []

    def records(self, task, records):
        self.events.append(("records", task, records))

    def lt_algo(self, tuning):
        self.events.append(("lt_algo", tuning))

    def env(self, info):
        self.events.append(("env", info))


def _shard_class(ray):
    @ray.remote
    class Shard:
        def __init__(self, inner: str, inner_options: dict):
            self.runner = Runner.create(inner, **inner_options)

        def run(self, tasks, methods, settings, lt_cache):
            sink = _Collector()
            self.runner.run(tasks, methods, settings, sink.records, lt_cache=lt_cache, on_lt_algo=sink.lt_algo,
                            on_env=sink.env)
            return sink.events
    return Shard


def _ray():
    """Ray, imported on first use: an optional dependency (pip install 'ray[default]'), and a slow import."""
    import ray
    return ray


def start_ray(address: str | None) -> None:
    """Connect to a Ray cluster, or with None or "local" start one here (once per process)."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=None if address in (None, "local") else address, include_dashboard=False,
                 log_to_driver=False, ignore_reinit_error=True)


_ACTORS: dict[tuple, list] = {}  # (Ray job, inner runner, workers) → live actors, reused by later calls


def stripes(tasks: list, n: int, batch: int | None = None) -> list[list]:
    """Tasks dealt round-robin into n shares (none empty); with `batch`, shares of at most that many instead."""
    if batch:
        n = max(n, -(-len(tasks) // batch))
    n = max(1, min(n, len(tasks)))
    return [tasks[i::n] for i in range(n)]


class RayRunner(Runner, kind="ray"):
    """`inner_options`: what each actor's inner runner is made with (KernelBench's `worker_target`, its worker
    process's entry point); `gpus`: whether each actor takes one GPU (default: a local inner runner does; a CPU
    run, KernelBench's `--device cpu`, passes False and spreads over CPUs)."""

    def __init__(self, address: str | None = None, inner: str = "local", workers: int | None = None,
                 batch: int | None = None, inner_options: dict | None = None, gpus: bool | None = None):
        self.address, self.inner, self.workers, self.batch = address, inner, workers, batch
        self.inner_options = dict(inner_options or {})
        self.gpus = inner == "local" if gpus is None else gpus

    def run(self, tasks, methods, settings, on_records, lt_cache=None, on_lt_algo=None, on_env=None,
            on_progress=None):
        try:
            ray = _ray()
        except ImportError:
            raise RunnerError("--ray needs Ray: pip install 'ray[default]'") from None
        start_ray(self.address)
        per_gpu = self.gpus
        available = int(ray.cluster_resources().get("GPU" if per_gpu else "CPU", 0))
        workers = self.workers or available
        if workers < 1:
            raise RunnerError("the Ray cluster has no GPU to run on: start it with GPUs (ray start --num-gpus N)")
        options = tuple(sorted((k, getattr(v, "__qualname__", repr(v))) for k, v in self.inner_options.items()))
        key = (ray.get_runtime_context().get_job_id(), self.inner, workers, options, per_gpu)
        if key not in _ACTORS:
            shard = _shard_class(ray).options(num_gpus=1 if per_gpu else 0, num_cpus=1)
            _ACTORS[key] = [shard.remote(self.inner, self.inner_options) for _ in range(workers)]
        actors = _ACTORS[key]
        batches = stripes(list(tasks), len(actors), self.batch)
        cache = dict(lt_cache or {})
        running = {}
        idle = list(actors)
        while batches or running:
            while batches and idle:
                actor = idle.pop()
                running[actor.run.remote(batches.pop(0), methods, settings, cache)] = actor
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                idle.append(running.pop(ref))
                for event in ray.get(ref):
                    if event[0] == "records":
                        on_records(event[1], event[2])
                    elif event[0] == "lt_algo":
                        cache[event[1]["key"]] = event[1]
                        if on_lt_algo:
                            on_lt_algo(event[1])
                    elif event[0] == "env" and on_env:
                        on_env(event[1])
