"""Spread tasks over the GPUs of a Ray cluster: one actor per GPU, each running the ordinary runner on the batches
it is handed; results come back to the driver, which commits them as they arrive (so nothing measured is lost and
the database has one writer). Libraries are built once by the driver: one host, or a filesystem every node shares."""

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
        def __init__(self, inner: str):
            self.runner = Runner.create(inner)

        def run(self, tasks, methods, settings, lt_cache):
            sink = _Collector()
            self.runner.run(tasks, methods, settings, sink.records, lt_cache=lt_cache, on_lt_algo=sink.lt_algo,
                            on_env=sink.env)
            return sink.events
    return Shard


class RayRunner(Runner, kind="ray"):
    def __init__(self, address: str | None = None, inner: str = "local", workers: int | None = None,
                 batch: int = 8):
        self.address, self.inner, self.workers, self.batch = address, inner, workers, batch

    def run(self, tasks, methods, settings, on_records, lt_cache=None, on_lt_algo=None, on_env=None,
            on_progress=None):
        try:
            import ray
        except ImportError:
            raise RunnerError("--ray needs Ray: pip install 'ray[default]'") from None
        if not ray.is_initialized():
            ray.init(address=None if self.address in (None, "local") else self.address, include_dashboard=False,
                     log_to_driver=False, ignore_reinit_error=True)
        per_gpu = self.inner == "local"
        available = int(ray.cluster_resources().get("GPU" if per_gpu else "CPU", 0))
        workers = self.workers or available
        if workers < 1:
            raise RunnerError("the Ray cluster has no GPU to run on: start it with GPUs (ray start --num-gpus N)")
        shard = _shard_class(ray).options(num_gpus=1 if per_gpu else 0, num_cpus=1)
        actors = [shard.remote(self.inner) for _ in range(min(workers, max(1, len(tasks))))]
        batches = [tasks[i:i + self.batch] for i in range(0, len(tasks), self.batch)]
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
