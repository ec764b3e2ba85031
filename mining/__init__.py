"""Mining stage: framework histories -> candidate PRs with function-level Triton kernel changes.

Reads: a git repository (a local clone or bare mirror, or a blob-less bare clone it makes).
Writes: `<out>/<framework>/candidates.jsonl` (one `Candidate` per PR), `state.json` (where the
next run resumes) and `summary.json`.
Refuses: a corrupt state file (it never overwrites one), a repository it cannot read.

Importing this package loads neither tree-sitter nor GitPython; the modules that need them do.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
