// The tuned library's C++ fast path: one call checks the inputs, allocates the output and launches the plan the
// Python runtime made for this shape on an earlier call: a tuned kernel's entry point, cuBLASLt with its stored
// algorithm through the kr_blas shim, or torch's own mm where the library has nothing faster. It knows no shape it
// was not told about: any miss returns None and the caller takes the Python path, which checks everything, decides,
// and registers the plan here.
//
// kernelrl.linear (y = x @ W^T, W stored N x K) has its own tables, one per dtype (fp16, bf16): a tuned nk kernel's
// plan, cuBLASLt (TN) with its stored algorithm, or F.linear's (at::linear) where the library has nothing faster.
// Those plans count their calls, so Library.stats() sees every call the fast path served.
//
// Built by torch.utils.cpp_extension when a library is loaded (kernelrl/library/native.py). It uses only c10's
// device-generic stream API, so it compiles without CUDA headers; the CUDA stream handle comes from the registered
// CUDA guard.
#include <torch/extension.h>

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cstdint>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

// kernelrl_hgemm(A, B, C, M, N, K, workspace, workspace bytes, stream) -> CUDA error code
using KernelFn = int (*)(const void*, const void*, void*, int, int, int, void*, size_t, void*);
// kernelrl_hgemm_ex(A, B, C, bias, M, N, K, epilogue flags, workspace, workspace bytes, stream): 1 adds the bias
using KernelExFn = int (*)(const void*, const void*, void*, const void*, int, int, int, int, void*, size_t, void*);
constexpr int kEpilogueBias = 1;
// kr_lt_run(plan, algo, A, B, C, workspace, workspace bytes, stream) -> status (0 ok)
using LtFn = int (*)(void*, const void*, const void*, const void*, void*, void*, size_t, void*);

enum Kind : int64_t { kKernel = 0, kLt = 1, kTorch = 2 };  // kTorch: the library has nothing better than cuBLAS

struct Plan {
  int64_t kind;
  void* fn;
  void* plan;  // kLt: the shim's plan
  void* algo;  // kLt: the stored algorithm's bytes
  void* ws;
  size_t ws_size;
  uintptr_t align;  // pointer bits that must be zero
  int64_t calls = 0;  // linear plans: calls served here
  void* fn_ex = nullptr;  // linear plans of a kernel with kernelrl_hgemm_ex: the bias added in its epilogue
};

// The linear tables' index of a dtype, or -1.
inline int linear_table(at::ScalarType t) { return t == at::kHalf ? 0 : t == at::kBFloat16 ? 1 : -1; }

inline void* current_stream(int64_t dev) {
  static const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return cuda->getStreamNativeHandle(cuda->getStream(c10::Device(c10::DeviceType::CUDA, c10::DeviceIndex(dev))));
}

// Runs a kernel or cuBLASLt plan on C = A @ B (or x @ W^T) on dev's current stream, with dev as the current device
// (a launch goes to the current device, whichever the tensors are on). Returns the callee's error code.
inline int launch(const Plan& p, const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k,
                  int64_t dev) {
  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::CUDA, c10::DeviceIndex(dev)));
  void* stream = current_stream(dev);
  if (p.kind == kKernel)
    return reinterpret_cast<KernelFn>(p.fn)(a, b, c, int(m), int(n), int(k), p.ws, p.ws_size, stream);
  return reinterpret_cast<LtFn>(p.fn)(p.plan, p.algo, a, b, c, p.ws, p.ws_size, stream);
}

// The key packs (m, n, k, device): each dimension below 2^20, the device below 2^4.
inline uint64_t key_of(int64_t m, int64_t n, int64_t k, int64_t dev) {
  return (uint64_t(m) << 44) | (uint64_t(n) << 24) | (uint64_t(k) << 4) | uint64_t(dev);
}

inline bool packable(int64_t m, int64_t n, int64_t k, int64_t dev) {
  return m > 0 && n > 0 && k > 0 && m < (1 << 20) && n < (1 << 20) && k < (1 << 20) && dev >= 0 && dev < 16;
}

// One table per loaded library. Plans are registered on a shape's first call, then only read; the mutex is
// uncontended in practice and keeps a registration from another thread safe.
class Plans {
 public:
  void add(int64_t m, int64_t n, int64_t k, int64_t dev, int64_t kind, int64_t fn, int64_t plan, int64_t algo,
           int64_t ws, int64_t ws_size, int64_t align) {
    if (!packable(m, n, k, dev)) return;  // such shapes stay on the Python path
    TORCH_CHECK(kind == kKernel || kind == kLt || kind == kTorch, "kernelrl fast path: unknown plan kind ", kind);
    std::lock_guard<std::mutex> lock(mutex_);
    table_[key_of(m, n, k, dev)] = Plan{kind, reinterpret_cast<void*>(fn), reinterpret_cast<void*>(plan),
                                        reinterpret_cast<void*>(algo), reinterpret_cast<void*>(ws), size_t(ws_size),
                                        uintptr_t(align)};
  }

  // dtype: 0 fp16, 1 bf16 (linear_table); kind kKernel (an nk kernel), kLt (cuBLASLt TN: plan and algo) or kTorch
  // (F.linear)
  void add_linear(int64_t dtype, int64_t m, int64_t n, int64_t k, int64_t dev, int64_t kind, int64_t fn, int64_t plan,
                  int64_t algo, int64_t ws, int64_t ws_size, int64_t align, int64_t fn_ex) {
    if (!packable(m, n, k, dev)) return;
    TORCH_CHECK(dtype == 0 || dtype == 1, "kernelrl fast path: unknown linear dtype ", dtype);
    TORCH_CHECK(kind == kKernel || kind == kLt || kind == kTorch, "kernelrl fast path: unknown plan kind ", kind);
    std::lock_guard<std::mutex> lock(mutex_);
    linear_[dtype][key_of(m, n, k, dev)] = Plan{kind, reinterpret_cast<void*>(fn), reinterpret_cast<void*>(plan),
                                                reinterpret_cast<void*>(algo), reinterpret_cast<void*>(ws),
                                                size_t(ws_size), uintptr_t(align), 0,
                                                reinterpret_cast<void*>(fn_ex)};
  }

  // (dtype, m, n, k, device, kind, calls) of every linear plan
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>> linear_counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>> rows;
    for (int64_t t = 0; t < 2; ++t)
      for (const auto& [key, p] : linear_[t])
        rows.emplace_back(t, int64_t(key >> 44), int64_t((key >> 24) & 0xFFFFF), int64_t((key >> 4) & 0xFFFFF),
                          int64_t(key & 0xF), p.kind, p.calls);
    return rows;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    table_.clear();
    linear_[0].clear();
    linear_[1].clear();
  }

  // y = x @ W^T (+ bias) through a registered plan, or None: the Python path decides (and raises on bad input).
  c10::optional<at::Tensor> linear(const at::Tensor& x, const at::Tensor& w, const c10::optional<at::Tensor>& bias) {
    const int t = linear_table(x.scalar_type());
    if (t < 0 || w.scalar_type() != x.scalar_type() || !x.is_cuda() || x.dim() < 1 || w.dim() != 2 ||
        !x.is_contiguous() || !w.is_contiguous())
      return c10::nullopt;
    const int64_t n = w.size(0), k = w.size(1), dev = x.get_device();
    if (k == 0 || x.size(-1) != k || w.get_device() != dev) return c10::nullopt;
    const int64_t m = x.numel() / k;
    if (!packable(m, n, k, dev)) return c10::nullopt;
    if (bias.has_value() && (bias->scalar_type() != x.scalar_type() || bias->dim() != 1 || bias->size(0) != n ||
                             bias->get_device() != dev))
      return c10::nullopt;
    const uintptr_t px = uintptr_t(x.data_ptr()), pw = uintptr_t(w.data_ptr());
    Plan p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = linear_[t].find(key_of(m, n, k, dev));
      if (it == linear_[t].end() || (it->second.kind != kTorch && ((px | pw) & it->second.align)))
        return c10::nullopt;
      ++it->second.calls;
      p = it->second;
    }
    if (p.kind == kTorch) return at::linear(x, w, bias);
    std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
    sizes.back() = n;
    at::Tensor out = at::empty(sizes, x.options());
    if (uintptr_t(out.data_ptr()) & p.align) return at::linear(x, w, bias);  // the caching allocator aligns to 512
    // The bias in the kernel's epilogue (one rounding, no second pass) where it has one and the bias is a plain
    // contiguous vector; else added after, as F.linear's own unfused path would.
    const bool fused = bias.has_value() && p.kind == kKernel && p.fn_ex != nullptr && bias->is_contiguous() &&
                       !(uintptr_t(bias->data_ptr()) & 3);
    int rc;
    if (fused) {
      const c10::DeviceGuard guard(c10::Device(c10::DeviceType::CUDA, c10::DeviceIndex(dev)));
      rc = reinterpret_cast<KernelExFn>(p.fn_ex)(x.data_ptr(), w.data_ptr(), out.data_ptr(), bias->data_ptr(),
                                                 int(m), int(n), int(k), kEpilogueBias, p.ws, p.ws_size,
                                                 current_stream(dev));
    } else {
      rc = launch(p, x.data_ptr(), w.data_ptr(), out.data_ptr(), m, n, k, dev);
    }
    TORCH_CHECK(rc == 0, "kernelrl: the ", p.kind == kKernel ? "tuned kernel" : "cuBLASLt call", " for linear ", m,
                "x", n, "x", k, " failed with error ", rc);
    if (bias.has_value() && !fused) out.add_(*bias);
    return out;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return int64_t(table_.size());
  }

  // None when this call is not one the table knows: the Python path decides (and raises on bad input).
  c10::optional<at::Tensor> run(const at::Tensor& a, const at::Tensor& b, const c10::optional<at::Tensor>& out_opt) {
    if (a.scalar_type() != at::kHalf || b.scalar_type() != at::kHalf || !a.is_cuda() || a.dim() != 2 ||
        b.dim() != 2 || !a.is_contiguous() || !b.is_contiguous())
      return c10::nullopt;
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    const int64_t dev = a.get_device();
    if (b.size(0) != k || b.get_device() != dev || !packable(m, n, k, dev)) return c10::nullopt;
    Plan p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = table_.find(key_of(m, n, k, dev));
      if (it == table_.end()) return c10::nullopt;
      p = it->second;
    }
    at::Tensor out;
    if (out_opt.has_value()) {
      out = *out_opt;
      if (out.scalar_type() != at::kHalf || out.get_device() != dev || out.dim() != 2 || out.size(0) != m ||
          out.size(1) != n || !out.is_contiguous())
        return c10::nullopt;
    } else {
      out = at::empty({m, n}, a.options());
    }
    if (p.kind == kTorch) {
      at::mm_out(out, a, b);  // what torch.matmul runs for 2-D operands, without its Python layer
      return out;
    }
    const uintptr_t pa = uintptr_t(a.data_ptr()), pb = uintptr_t(b.data_ptr()), pc = uintptr_t(out.data_ptr());
    if ((pa | pb | pc) & p.align) return c10::nullopt;
    const int rc = launch(p, a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, dev);
    TORCH_CHECK(rc == 0, "kernelrl: the tuned ", p.kind == kKernel ? "kernel" : "cuBLASLt call", " for ", m, "x",
                n, "x", k, " failed with error ", rc);
    return out;
  }

 private:
  std::unordered_map<uint64_t, Plan> table_;
  std::unordered_map<uint64_t, Plan> linear_[2];
  std::mutex mutex_;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {
  pybind11::class_<Plans>(mod, "Plans")
      .def(pybind11::init<>())
      .def("add", &Plans::add, "register the plan of one (m, n, k, device)")
      .def("clear", &Plans::clear, "forget every plan")
      .def("__len__", &Plans::size)
      .def("run", &Plans::run, "C = A @ B through a registered plan, or None", pybind11::arg("a"),
           pybind11::arg("b"), pybind11::arg("out") = pybind11::none())
      .def("add_linear", &Plans::add_linear, "register the linear plan of one (dtype, m, n, k, device)")
      .def("linear_counts", &Plans::linear_counts, "(dtype, m, n, k, device, kind, calls) per linear plan")
      .def("linear", &Plans::linear, "y = x @ W^T (+ bias) through a registered plan, or None", pybind11::arg("x"),
           pybind11::arg("weight"), pybind11::arg("bias") = pybind11::none());
}
