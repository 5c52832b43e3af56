"""Each static rule: a small offending snippet is flagged for its reason; an honest neighbour is not flagged."""

import textwrap

import pytest

from kernelrl.kernelbench.static_checks import RULES, scan, task_input_dtype

OFFENDING = {
    "cuda-stream": [
        "import torch\ns = torch.cuda.Stream()\n",
        'src = "cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);"\n',
    ],
    "threads": [
        "import threading\n",
        "from concurrent.futures import ThreadPoolExecutor\n",
        "import multiprocessing as mp\n",
        'src = "std::thread t(work); t.detach();"\n',
    ],
    "timer-patch": [
        "import torch\ntorch.cuda.synchronize = lambda: None\n",
        "import time\ntime.perf_counter = lambda: 0.0\n",
        "import torch\ntorch.cuda.Event = object\n",
        "import time\nsetattr(time, 'time', lambda: 0.0)\n",
    ],
    "harness-patch": [
        "import torch\ntorch.allclose = lambda *a, **k: True\n",
        "import torch\ntorch.Tensor.clone = lambda self: self\n",
        "import torch.nn as nn\nnn.Module.__call__ = lambda self, *a: None\n",
        "import builtins\nsetattr(builtins, 'isinstance', lambda *a: True)\n",
    ],
    "introspection": [
        "import gc\n",
        "import inspect\n",
        "import sys\nf = sys._getframe(1)\n",
    ],
    "reference-fallback": [
        "class ModelNew:\n    def forward(self, x):\n        try:\n            return k(x)\n"
        "        except Exception:\n            return super().forward(x)\n",
        "def f(x):\n    try:\n        return k(x)\n    except RuntimeError:\n        return Model()(x)\n",
        "import torch\ndef f(a, b):\n    try:\n        return k(a, b)\n    except Exception:\n"
        "        return torch.matmul(a, b)\n",
    ],
    "inherits-model": ["class ModelNew(Model):\n    pass\n"],
    "tensor-subclass": [
        "import torch\nclass Lazy(torch.Tensor):\n    pass\n",
        "class Lazy:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return func(*args)\n",
    ],
    "identity-cache": [
        "cache = {}\ndef f(x):\n    return cache[id(x)]\n",
        "cache = {}\ndef f(x):\n    return cache.get(x.data_ptr())\n",
        "cache = {}\ndef f(x):\n    if (x.data_ptr(), x.shape) in cache:\n        return 1\n",
        "cache = {}\ndef f(x):\n    key = (x.data_ptr(), tuple(x.shape))\n    return cache.setdefault(key, x + 1)\n",
    ],
    "persisting-l2": [
        'src = "attr.accessPolicyWindow.base_ptr = p;"\n',
        'src = "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n);"\n',
    ],
    "precision": [
        "def f(x):\n    return x.half()\n",
        "import torch\ndef f(x):\n    return x.to(torch.bfloat16)\n",
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
        "import torch\ntorch.set_float32_matmul_precision('high')\n",
        "import torch\ntorch.backends.cudnn.conv.fp32_precision = 'tf32'\n",
        "import torch\ntorch.backends.mkldnn.matmul.fp32_precision = 'bf16'\n",
        "import torch\nlevel = 'tf32'\ntorch.backends.fp32_precision = level\n",
        "import torch\ntorch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)\n",
        'src = "__global__ void k(const __half* a) {}"\n',
    ],
}

HONEST = {
    "cuda-stream": [
        "import torch\ns = torch.cuda.current_stream()\n",
        'src = "k<<<g, b, 0, at::cuda::getCurrentCUDAStream()>>>(x); // no cudaStreamCreate here"\n',
        '"""We never call cudaStreamCreate."""\n',
    ],
    "threads": ["import os\nimport torch.utils.cpp_extension\n", 'src = "__syncthreads();"\n'],
    "timer-patch": ["import time\nt0 = time.perf_counter()\n", "import torch\ntorch.cuda.synchronize()\n"],
    "harness-patch": [
        "import torch\ntorch.backends.cudnn.benchmark = True\n",
        "import torch._dynamo\ntorch._dynamo.config.cache_size_limit = 64\n",
        "import torch\nx = torch.zeros(3)\nx.data = torch.ones(3)\n",
    ],
    "introspection": ["import sys\nprint(sys.version)\n"],
    "reference-fallback": [
        "def f(x):\n    try:\n        return k(x)\n    except Exception as e:\n"
        "        raise RuntimeError('kernel failed') from e\n",
        "import torch\ntry:\n    import ext\nexcept ImportError:\n    dev = torch.cuda.current_device()\n",
    ],
    "inherits-model": ["import torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n"],
    "tensor-subclass": ["import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"],
    "identity-cache": [
        "def f(x, out):\n    kernel(x.data_ptr(), out.data_ptr(), x.numel())\n",
        "def f(x):\n    return x[0]\n",
        "def f(x, out):\n    ptr = x.data_ptr()\n    kernel(ptr, out.data_ptr())\n",
    ],
    "persisting-l2": ['src = "cudaStreamSynchronize(s);"\n'],
    "precision": [
        "import torch\ndef f(x):\n    return x.float()\n",
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
        "import torch\ntorch.set_float32_matmul_precision('highest')\n",
        "import torch\ntorch.backends.cudnn.conv.fp32_precision = 'ieee'\n",
        "import torch\ntorch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(False)\n",
        'src = "__global__ void k(const float* a) {} // not __half"\n',
    ],
}


@pytest.mark.parametrize("rule, source", [(r, s) for r, srcs in OFFENDING.items() for s in srcs])
def test_offending_snippet_is_flagged(rule, source):
    findings = scan(textwrap.dedent(source))
    assert rule in {f.rule for f in findings}, findings
    assert all(f.line >= 1 and f.message for f in findings)


@pytest.mark.parametrize("rule, source", [(r, s) for r, srcs in HONEST.items() for s in srcs])
def test_honest_snippet_is_not_flagged(rule, source):
    assert scan(textwrap.dedent(source)) == []


def test_every_rule_has_offending_and_honest_snippets():
    assert set(OFFENDING) == set(HONEST) == set(RULES)


def test_half_is_fine_when_the_task_inputs_are_half():
    assert scan("def f(x):\n    return x.half()\n", input_dtype="float16") == []


def test_task_input_dtype_from_get_inputs():
    assert task_input_dtype("import torch\ndef get_inputs():\n    return [torch.randn(4)]\n") == "float32"
    assert task_input_dtype("import torch\ndef get_inputs():\n    return [torch.randn(4).half()]\n") == "float16"
    assert task_input_dtype("import torch\ndef get_inputs():\n"
                            "    return [torch.randn(4, dtype=torch.bfloat16)]\n") == "bfloat16"


def test_finding_names_its_line():
    (finding,) = scan("x = 1\nimport threading\n")
    assert (finding.rule, finding.line) == ("threads", 2) and str(finding).startswith("threads (line 2):")


def test_honest_load_inline_candidate_is_clean():
    source = '''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    cuda_src = """
    __global__ void swish_kernel(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] / (1.0f + expf(-x[i])) + 1.0f;
    }
    torch::Tensor swish(torch::Tensor x) {
        auto y = torch::empty_like(x);
        int n = x.numel();
        swish_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
        return y;
    }
    """
    ext = load_inline(name="swish", cpp_sources="torch::Tensor swish(torch::Tensor x);", cuda_sources=cuda_src,
                      functions=["swish"])

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return ext.swish(x.contiguous())
    '''
    assert scan(textwrap.dedent(source)) == []
