"""Dataset stage: task directories -> a HuggingFace dataset folder, and its regeneration.

Reads: checked task directories (with env.json and reference.json where present), the folder's
previous manifest.
Writes: parquet shards under data/, README.md rendered from dataset_card.md, plots under
assets/, manifest.json (versions, frozen splits and their file hashes).
Refuses: to rewrite a released split, to reuse a released version number.

Command: `python -m benchmark` (`build`, `push`, `regenerate`).
"""
