"""Eval stage: run a task's tests with the base, gold or a model's kernel, time its kernels,
and score predictions.

Reads: task directories, the framework's repository (or a slim bundle of it), predictions.jsonl.
Writes: `reference.json` per task (reference runs), a run directory per evaluation with a log
directory per task and `results.json` / `report.md`.
Refuses: to run a prediction outside the sandbox (`eval.sandbox`), to let it change anything but
its targets (`eval.targets`), to judge by stdout or by any file a run writes (verdicts come over
the signed channel of `eval.verdict`, with exit codes), to credit a prediction that never
launches a Triton kernel or whose run was tampered with (docs/security.md).

Command: `python -m eval` (`reference`, `score`, `bundle`).
"""
