// kernelrl's stand-in for <torch/types.h>: everything a shim-built CUDA-L2 file needs is in extension.h.
#pragma once
#include <torch/extension.h>
