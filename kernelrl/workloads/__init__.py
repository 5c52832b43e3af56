from kernelrl.workloads.hgemm import PAPER_DIMS, GemmProblem, ShapeError, parse_shapes, size_class

__all__ = ["PAPER_DIMS", "GemmProblem", "ShapeError", "parse_shapes", "size_class"]
