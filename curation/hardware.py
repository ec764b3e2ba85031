"""What hardware a task's tests need, read from the code and the tests (never from the title).

Reads: the gold bytes of the target files and of the selected test files. Writes nothing.
Decides `Hardware`: the vendor (Ascend from `torch_npu` or an `ascend`/`npu` path, AMD from a
`rocm`/`hip`/`amd` path, Intel from an `xpu`/`intel` path; NVIDIA otherwise), NVLink multicast
(symmetric-memory multicast: `multimem` instructions, NVLS, `symm_mem` multicast pointers), and
the number of GPUs (test modules that skip below N devices, or that spawn N processes), and the
GPU generation newer than Hopper that the gold's change tests for (`arch`: a line the gold adds
to a target file that names Blackwell, sm_100 and later, tcgen05 or a capability of 10 and up;
Liger-Kernel #1267 picks its warps by it and leaves Hopper's as they were). Each fact
keeps its evidence (`path:line: what`). A task whose hardware is not one NVIDIA GPU without
multicast goes to its own configuration, out of the default one, and is never run where its
needs cannot be met; the eval never turns multicast on.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping

from curation.model import Hardware, Vendor

# a path component (or a word of one) naming the backend: `backends/_ascend/`,
# `backends/triton_ascend/`, `chunk_npu.py`, `rocm/`, `xpu_kernels.py`
_VENDOR_PATH = (
    (Vendor.ASCEND, re.compile(r"(^|/|_)(ascend|npu)(/|_|\.py$)", re.I)),
    (Vendor.AMD, re.compile(r"(^|/|_)(rocm|hip|amd)(/|_|\.py$)", re.I)),
    (Vendor.INTEL, re.compile(r"(^|/|_)(xpu|intel)(/|_|\.py$)", re.I)),
)
_NPU_IMPORT = re.compile(r"^\s*(import torch_npu|from torch_npu\b)", re.M)
_MULTICAST = re.compile(
    r"multimem\.|multimem_|\bNVLS\b|multicast_ptr|symm_mem\.rendezvous|get_multicast", re.I
)
# A whole test module that skips below N devices (`pytestmark = ...device_count() < 2...`):
# a single test's skip only drops that test, which the GPU selection sees by itself.
_MODULE_SKIP = re.compile(
    r"^pytestmark\b.*?(?:device_count\(\)|world_size|WORLD_SIZE|num_gpus)\s*\)?\s*<\s*(\d+)",
    re.M,
)
_SPAWN = re.compile(r"nproc_per_node\s*=\s*(\d+)|torch\.multiprocessing\.spawn\(")
# a test for a Blackwell GPU (compute capability 10 and up) in Python or in a kernel's asm, and
# the words its evidence says it with (`eval.gate.arch_gap` finds the line by them)
BLACKWELL_EVIDENCE = "the gold's change tests for a Blackwell GPU"
_BLACKWELL = re.compile(
    r"blackwell|\bsm_?1[0-2]\d\b|SM1[0-2]\d\b|tcgen05"
    r"|capability\([^)]*\)\s*(?:\[0\]\s*)?>=?\s*\(?\s*1[0-2]\b|\bmajor\s*>=?\s*1[0-2]\b",
    re.I,
)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _statement_lines(text: str) -> set[int] | None:
    """The lines of `text` that hold code other than imports, docstrings and comments (by
    Python's tokenizer: a logical line that starts with `import`, `from` or a string literal
    is left out whole); None when the text does not tokenize."""
    lines: set[int] = set()
    first: tokenize.TokenInfo | None = None
    skipped = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENCODING, tokenize.ENDMARKER)  # fmt: skip
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NEWLINE:
                first = None
                continue
            if tok.type in skipped:
                continue
            first = first or tok
            if first.type == tokenize.STRING or first.string in ("import", "from"):
                continue
            lines.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return lines


def _arch(target_files: Mapping[str, bytes], base_files: Mapping[str, bytes]) -> str | None:
    """Evidence that the gold's change tests for a Blackwell GPU: the first line of code it
    adds to a target file (absent from that file at the base) that names one; an import, a
    docstring or a comment is no test (flash-linear-attention #953 imports
    `IS_NVIDIA_BLACKWELL` in a parenthesized list and tests it further down). None when
    none does."""
    for path, data in target_files.items():
        text = data.decode("utf-8", "replace")
        before = set(base_files.get(path, b"").decode("utf-8", "replace").splitlines())
        code = _statement_lines(text)
        for n, line in enumerate(text.splitlines(), 1):
            m = _BLACKWELL.search(line)
            if not m or line in before or (code is not None and n not in code):
                continue
            if code is None and line.lstrip().startswith(("#", "import ", "from ")):
                continue
            return f"{path}:{n}: {BLACKWELL_EVIDENCE} ({m.group(0)})"
    return None


def detect(
    target_files: Mapping[str, bytes],
    test_files: Mapping[str, bytes],
    base_files: Mapping[str, bytes] | None = None,
) -> Hardware:
    """The hardware the task needs, with evidence (files read in path order: the record is the
    same whatever order the caller's mappings have). `base_files`: the target files at the
    base commit, to tell the lines the gold adds (without them no `arch` is read)."""
    target_files = dict(sorted(target_files.items()))
    test_files = dict(sorted(test_files.items()))
    evidence: list[str] = []
    # Each target file's vendor; the task needs a vendor only when every target file is that
    # vendor's: a PR that changes the generic kernel and its Ascend twin together
    # (flash-linear-attention #1071) is exercised by the NVIDIA tests through the generic one.
    vendors: dict[str, Vendor] = {}
    for path, data in target_files.items():
        text = data.decode("utf-8", "replace")
        for kind, pattern in _VENDOR_PATH:
            if pattern.search(path):
                vendors[path] = kind
                evidence.append(f"{path}: a {kind} backend path")
                break
        m = _NPU_IMPORT.search(text)
        if m and path not in vendors:
            vendors[path] = Vendor.ASCEND
            evidence.append(f"{path}:{_line(text, m.start())}: imports torch_npu")
    kinds = set(vendors.values())
    vendor = Vendor.NVIDIA
    if len(kinds) == 1 and len(vendors) == len(target_files):
        vendor = kinds.pop()
    elif vendors:
        generic = sorted(set(target_files) - set(vendors))
        evidence.append(
            f"vendor files beside generic ones ({', '.join(generic[:3])}): NVIDIA runs it"
        )
    multicast = False
    for path, data in target_files.items():
        text = data.decode("utf-8", "replace")
        m = _MULTICAST.search(text)
        if m:
            multicast = True
            evidence.append(f"{path}:{_line(text, m.start())}: NVLink multicast ({m.group(0)})")
            break
    gpus = 2 if multicast else 1
    for path, data in test_files.items():
        text = data.decode("utf-8", "replace")
        for m in _MODULE_SKIP.finditer(text):
            n = int(m.group(1))
            if gpus < n <= 64:
                gpus = n
                evidence.append(f"{path}:{_line(text, m.start())}: the module needs {n} GPUs")
        for m in _SPAWN.finditer(text):
            n = int(m.group(1)) if m.group(1) else 2
            if gpus < n <= 64:
                gpus = n
                evidence.append(f"{path}:{_line(text, m.start())}: spawns {n} processes")
    gate = _arch(target_files, base_files) if base_files is not None else None
    if gate:
        evidence.append(gate)
    return Hardware(gpus=gpus, nvlink_multicast=multicast, vendor=vendor,
                    evidence=tuple(evidence), arch="blackwell" if gate else "")  # fmt: skip
