"""The per-GPU measuring lock (kernelrl/harness/gpu_lock.py): which GPUs a process holds, and that a second
holder waits, says so, and gets the GPU when the first lets go."""

import multiprocessing as mp

from kernelrl.harness.gpu_lock import exclusive_gpus, visible_gpus

SMI = ["0, GPU-aaaa-1111", "1, GPU-bbbb-2222", "2, GPU-cccc-3333"]


def test_every_gpu_without_cuda_visible_devices():
    assert visible_gpus(SMI, visible=None) == ["GPU-aaaa-1111", "GPU-bbbb-2222", "GPU-cccc-3333"]


def test_cuda_visible_devices_by_index_and_by_uuid_prefix():
    assert visible_gpus(SMI, visible="2,0") == ["GPU-cccc-3333", "GPU-aaaa-1111"]
    assert visible_gpus(SMI, visible="GPU-bbbb") == ["GPU-bbbb-2222"]


def test_cuda_stops_at_the_first_invalid_entry():
    assert visible_gpus(SMI, visible="1,7,0") == ["GPU-bbbb-2222"]
    assert visible_gpus(SMI, visible="") == []


def _hold(lock_dir, ready, release):
    with exclusive_gpus(gpus=["GPU-aaaa-1111"], lock_dir=lock_dir):
        ready.set()
        release.wait(30)


def test_a_second_job_waits_and_says_for_whom(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    assert ready.wait(30)
    said = []

    def say(text):
        said.append(text)
        release.set()  # the first job finishes while the second waits

    with exclusive_gpus(say=say, gpus=["GPU-aaaa-1111"], lock_dir=str(tmp_path)):
        holder.join(30)
        assert not holder.is_alive()
    assert said == [f"waiting for GPU-aaaa-1111: another kernelrl job is measuring on it (pid {holder.pid})"]


def test_other_gpus_are_not_waited_for(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    holder.start()
    assert ready.wait(30)
    said = []
    with exclusive_gpus(say=said.append, gpus=["GPU-bbbb-2222"], lock_dir=str(tmp_path)):
        pass
    release.set()
    holder.join(30)
    assert said == []
