"""Measuring jobs: library calls that build candidates and measure them through the runner and the harness
(`measure.run_bench`: the bench job, the tuner, evolve and train all call it). They sit above harness/, run/ and
results (which never import them) and below the CLI and the reports."""
