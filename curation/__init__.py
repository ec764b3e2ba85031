"""Curation stage: mined candidates -> reviewed benchmark tasks.

Reads: `<work>/<framework>/candidates.jsonl` from the mining stage, and the framework's
repository through the git gateway (`mining.git`).
Writes: one directory per task (`tasks/<task_id>/`, see `curation.taskdir`), the source of
truth for every later stage, plus `rejected.jsonl` and `curation_summary.json`.
Refuses: to overwrite a curator's decision or edited requirement (`curation.json`).

Commands: `python -m curation.curate` (build tasks), `python -m curation.check` (validate task
directories), `python -m curation.review` (the curator's local web page).
"""
