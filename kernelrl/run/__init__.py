"""Runners: execute verification and timing of HGEMM methods in an isolated GPU worker process."""
