"""The scripts the suites of `python -m benchmarks` and the device scripts (benchmarks/device/) run; each also runs
on its own, as its docstring says (`python benchmarks/suites/NAME.py ...`)."""
