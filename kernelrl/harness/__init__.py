"""The measurement harness every evaluator stands on: typed verdicts (`verdicts`), the one tolerance rule of
KernelBench-style outputs (`tolerance`), timing statistics and the one hidden-work rule (`stats`), and the
device-global state a candidate can change, snapshotted and put back around every method (`device_state`).

The HGEMM worker (`kernelrl.run.worker`) and the KernelBench worker (`kernelrl.kernelbench.worker`) raise
`Rejected(Verdict, detail)` from here; evolve, train and the CLI read the verdict key of a record, never its text."""
