"""The LLM proposer: contrastive kernel evolution against any OpenAI-compatible model server.

A model is shown earlier kernels with their measured speedups, ptxas reports, profiler metrics and the verdicts of
failed ones, asked to explain why the fast ones are fast, and then to write a faster one; the evaluator measures
it (every defence applies), and the population remembers it. `kernelrl evolve` runs it.

Modules: client (OpenAI-compatible chat client, retries, concurrency), budget and usage (limits, JSONL log),
prompts and templates/ (the prompt builder), extract (code from replies), screen and lexcheck (static checks
before building), population and sampling (the SQLite population, islands, who appears in a prompt), target,
hgemm_target and kb_target (what is optimised and how it is judged), profile and ncu_driver (Nsight Compute),
loop (the generations), export (files for bench and kb eval), ui (progress)."""
