import shutil

import pytest


def _has_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    no_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU (run on the device machine)")
    no_nvcc = pytest.mark.skip(reason="needs nvcc on PATH")
    gpu, nvcc = _has_gpu(), shutil.which("nvcc") is not None
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(no_gpu)
        if "nvcc" in item.keywords and not nvcc:
            item.add_marker(no_nvcc)


@pytest.fixture(scope="module")
def local_cluster():
    """A Ray cluster of this machine's CPUs for one test module (the Ray runner's tests)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
