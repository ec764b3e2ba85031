"""What every stage shares, and nothing else: the record rule (`core.records`), the file rules
(`core.files`: atomic writes, JSON/JSONL reading with file:line errors, output locks) and the
framework registry (`core.frameworks`). It imports no stage and no heavy dependency.
"""
