"""KernelBench-format tasks: a task file defines `Model`, `get_inputs()` and `get_init_inputs()`; a candidate file
defines `ModelNew` with the same constructor and forward signatures. Loading and matching (`tasks`), the static
second defence layer (`static_checks`), CUDA-L1-style result tables (`aggregate`) and the CSV (`evaluate`) run on
the CPU; `worker` verifies and times pairs in a spawned process (GPU, or CPU as a dry run), with `memguard` around
its checked calls on the GPU; `build` compiles candidates' torch extensions first, in parallel, each in its own
folder. Own task set and honest hand-written candidates for it: examples/kernelbench/ (`kernelrl.examples`)."""
