"""One-off experiments, kept runnable: what each showed and where its result lies, benchmarks/experiments/README.md."""
