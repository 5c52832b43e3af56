// kernelrl's stand-in for <torch/extension.h> when it wraps a CUDA-L2 kernel file (kernelrl/adapters/cuda_l2.py).
//
// A CUDA-L2 file takes its operands as torch::Tensor and, in 968 of the 1000 released H100 files, uses nothing of
// them but their sizes, their data pointers and a dtype check. torch's real headers cost about a minute of compile
// per file: with them the simplest selected file took 67 s on the H200's host, against 4 s with this header on a
// 2-core CPU machine. So a file that uses only that much is built against this header: a tensor is a data pointer
// and two sizes, always fp16, and no torch library is linked. The adapter decides (cuda_l2.uses_only_the_shim), and
// a file that does not build this way is built again with torch's own headers.
#pragma once

#include <cuda_fp16.h>

// The standard headers torch's own reach the file through (CUDA-L2's CHECK macros print with std::cout, for one).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace at {
using Half = __half;
}  // namespace at

namespace torch {

using Half = __half;

enum class Dtype { Half };
constexpr Dtype kHalf = Dtype::Half;

inline std::ostream& operator<<(std::ostream& out, Dtype) { return out << "Half"; }

struct TensorOptions {
  Dtype dtype() const { return Dtype::Half; }
};

inline std::ostream& operator<<(std::ostream& out, const TensorOptions&) { return out << "TensorOptions(Half)"; }

// A row-major fp16 matrix the wrapper lends the file: the operands as CUDA-L2's harness passes them, padded.
class Tensor {
 public:
  Tensor(void* data, int64_t rows, int64_t cols) : data_(data), rows_(rows), cols_(cols) {}
  int64_t size(int64_t dim) const {
    if (dim == 0 || dim == -2) return rows_;
    if (dim == 1 || dim == -1) return cols_;
    throw std::out_of_range("a CUDA-L2 operand has two dimensions");
  }
  void* data_ptr() const { return data_; }
  template <typename T>
  T* data_ptr() const { return static_cast<T*>(data_); }
  TensorOptions options() const { return TensorOptions{}; }
  Dtype dtype() const { return Dtype::Half; }

 private:
  void* data_;
  int64_t rows_, cols_;
};

}  // namespace torch
