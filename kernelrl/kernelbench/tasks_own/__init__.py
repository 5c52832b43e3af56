"""kernelrl's own task set, in KernelBench format (one task per file, `<n>_<Name>.py`), fp32 inputs, modest
shapes. `TASKS_DIR` is the folder to pass to `kernelrl kb eval --tasks`."""

from pathlib import Path

TASKS_DIR = Path(__file__).parent
