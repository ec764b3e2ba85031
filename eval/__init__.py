"""Eval stage: run a task's tests with the base, gold or a model's kernel, time its kernels,
and score predictions.

Reads: task directories, the framework's repository (or a slim bundle of it), predictions.jsonl.
Writes: `reference.json` per task (reference runs), a run directory per evaluation with a log
directory per task and `results.json` / `report.md`.
Refuses: to judge by stdout (junit XML and exit codes only), to credit a prediction that never
launches a Triton kernel.

Command: `python -m eval` (`reference`, `score`, `bundle`).
"""
