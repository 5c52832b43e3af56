"""kernelrl's benchmark suites: `python -m benchmarks --list` (benchmarks/README.md)."""
