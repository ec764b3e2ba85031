"""The natural-language requirement of a task: a Markdown template, optionally an LLM rewrite.

Reads: a `Task` (PR title and body, target kernels, context, tests); for the LLM path, an
OpenAI-compatible `chat/completions` endpoint and an API key from the environment.
Writes: nothing; `write_requirement` returns the text and its origin ("llm" or "template") for
the task directory to store.
Refuses: to return a draft that reproduces the gold kernel. Only names and signatures of the new
version are used; `leaks_gold` guards every LLM answer, and a template whose PR body quotes the
gold code is drafted without the body. LLM failures raise `RequirementError`, and
`write_requirement` falls back to the template.

Sections, in order: title, Goal, Where, Interface, Constraints, How it is checked.
"""

from __future__ import annotations

import ast
import http.client
import json
import logging
import os
import re
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence

from curation.errors import RequirementError
from curation.model import ContextItem, TargetKernel, Task, TaskType

log = logging.getLogger(__name__)

SECTIONS = ("## Goal", "## Where", "## Interface", "## Constraints", "## How it is checked")
GOAL_MAX_CHARS = 700
DOC_MAX_LINES = 12  # a new target's docstring, quoted up to this many lines
CONTEXT_MAX_NAMES = 6  # names shown per context file
_TRIVIAL_LINE = 12  # shorter stripped lines (`else:`, `)`, `return x`) prove nothing

_TYPE_GOAL = {
    TaskType.OPTIMIZATION: (
        "Optimization",
        "Make the kernel(s) below faster while keeping their results unchanged.",
    ),
    TaskType.NEW_OP: (
        "New operator",
        "Implement the new Triton kernel(s) below and launch them from the framework.",
    ),
    TaskType.FEATURE: (
        "Feature",
        "Extend the kernel(s) below with the capability described, keeping existing uses working.",
    ),
    TaskType.BUG_FIX: (
        "Bug fix",
        "Fix the defect described below in the kernel(s) without slowing them down.",
    ),
}

# PR-body noise: templates, trackers, bots. Matched per line, case-insensitively.
_NOISE_LINE = re.compile(
    r"""^\s*(?:
        (?:[-*]|\d+\.)\s*\[[ xX]?\]            # checklist item
      | [-*_=]{3,}\s*$                        # horizontal rule
      | \|                                     # table row: benchmark numbers
      | (?:[-*]\s*)?(?:__->__\s*)?\#\d+\s*$    # ghstack entry or a bare issue number
      | (?:cc|ccing|/cc)\s*[:@]                 # reviewer pings
      | (?:signed-off-by|co-authored-by|reviewed[- ]by|pulled[- ]by|differential\ revision
         |pull\ request\ resolved|test\ plan|ghstack-source-id|stack\ from\ \[?ghstack
         |see\ merge\ request)\b
      | .*(?:fill\ in\ the\ pr\ description|before\ submitting|link\ existing\ issues
         |fixes\ \#issue_number|pr\ checklist)
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_INTERNAL_TRACKER = re.compile(
    r"internalfb\.com|fburl\.com|fb\.workplace|atlassian\.net|\bjira\b|nvbugs|partners\.nvidia"
    r"|\bgo/[\w-]+|\bb/\d{6,}|\bD\d{7,}\b|\bT\d{7,}\b",
    re.IGNORECASE,
)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_DETAILS = re.compile(r"<details\b.*?(?:</details>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.DOTALL | re.MULTILINE)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_URL = re.compile(r"<?https?://\S+>?")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|\*\*[^*]+\*\*\s*:?\s*$|[A-Z][\w ]{0,30}:\s*$)")
_SKIP_SECTION = re.compile(
    r"checklist|before submitting|test (?:plan|result)|benchmark|release note|documentation"
    r"|essential elements|performance result|accuracy",
    re.IGNORECASE,
)
_DANGLING = re.compile(r"^(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|see|ref|related)\W*$", re.I)
_TITLE_TAGS = re.compile(r"^\s*(?:\[[^\]]*\]\s*)+|\s*\(#\d+\)\s*$")

# What the base kernel's source reveals about constraints worth stating.
_SOURCE_FACTS = (
    (re.compile(r"\btl\.dot\("), "computes block matrix products with `tl.dot`"),
    (re.compile(r"\btl\.atomic_\w+\("), "uses atomics ({found}); results may not be bit-exact"),
    (re.compile(r"\bmask\s*="), "masks its loads/stores; every access must stay in bounds"),
    (re.compile(r"\btl\.float32\b"), "computes in float32 where inputs may be narrower"),
    (re.compile(r"\btl\.make_block_ptr\("), "addresses memory through block pointers"),
    (re.compile(r"\btl\.max\([\s\S]*?\btl\.exp2?\("), "subtracts the max before `exp`"),
)


def draft_requirement(task: Task) -> str:
    """The deterministic Markdown requirement of `task`, built from code facts and PR text."""
    return _render(task, with_body=True)


def leaks_gold(text: str, task: Task, min_lines: int = 3) -> bool:
    """Whether `text` reproduces `min_lines`+ consecutive lines of a gold kernel.

    A run is consecutive non-trivial lines of `text` (stripped, at least 12 characters; shorter
    ones are skipped) that all occur in some kernel's `after_src`. Lines the model sees anyway
    (base sources, base autotune configs, signatures, context) may extend a run but do not make a
    leak on their own: a run leaks only when it holds at least one line found only in the gold.
    This way a pasted one-line fix with its neighbours is caught, and quoting base code is not.
    """
    gold = _lines(k.after_src for k in task.kernels)
    if not gold:
        return False
    known = _known_lines(task)
    run = 0
    new_in_run = False
    for raw in text.splitlines():
        line = raw.strip()
        if len(line) < _TRIVIAL_LINE:
            continue
        if line not in gold:
            run, new_in_run = 0, False
            continue
        run += 1
        new_in_run = new_in_run or line not in known
        if run >= min_lines and new_in_run:
            return True
    return False


# The LLM sees the same facts as the template plus the base sources; never the gold body.
SYSTEM_PROMPT = f"""You write task requirements for a benchmark of Triton GPU kernels taken from \
real pull requests. A model will read your requirement, then write the kernel inside the \
framework at the PR's base commit; the framework's own tests and a timing against the PR \
author's kernel judge it.

Write Markdown with a one-line `#` title and exactly these sections, in this order: \
{", ".join(f"`{s}`" for s in SECTIONS)}.
- Goal: what to implement or change and why (fuse passes, avoid an extra HBM round trip, add an \
op, fix a bug, ...), in your own words.
- Where: the file(s), kernel name(s), whether each is modified or new, and the wrapper(s) that \
launch it.
- Interface: signatures (current, and required when they change), inputs and outputs with \
shapes, dtypes and memory layouts where the code shows them, `tl.constexpr` parameters, autotune \
configurations of the base.
- Constraints: dtypes, masks and bounds, compile-time block sizes, numerical stability, what must \
stay unchanged.
- How it is checked: the listed test files and command, and the timing against the reference.

Rules: never include the new implementation, its body or any code from the pull request's diff; \
signatures of the new version are allowed. Base code may be referred to but need not be copied. \
Do not invent facts the material does not support. Answer with the Markdown only."""


class LlmDrafter:
    """Drafts a requirement through an OpenAI-compatible chat endpoint (urllib, no SDK)."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60,
    ):
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s

    def draft(self, task: Task) -> str:
        """The LLM's requirement for `task`; raises `RequirementError` when it is unusable."""
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(task)},
            ],
        }
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(
            f"{self.endpoint}/chat/completions",
            data=json.dumps(payload).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = _one_line(exc.read(300).decode("utf-8", "replace")) if exc.fp else ""
            raise RequirementError(
                f"LLM endpoint answered HTTP {exc.code} {detail}".rstrip(), task_id=task.task_id
            ) from exc
        # URLError and socket timeouts are OSErrors; a cut-off body is an HTTPException.
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise RequirementError(
                f"LLM endpoint failed: {reason!r}", task_id=task.task_id
            ) from exc
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RequirementError(
                f"malformed LLM response ({type(exc).__name__})", task_id=task.task_id
            ) from exc
        if not isinstance(content, str) or not content.strip():
            raise RequirementError("LLM returned no text", task_id=task.task_id)
        text = _unfence(content)
        missing = [s for s in SECTIONS if s.lower() not in text.lower()]
        if missing:
            raise RequirementError(
                f"LLM draft lacks sections {', '.join(missing)}", task_id=task.task_id
            )
        if leaks_gold(text, task):
            raise RequirementError("LLM draft leaks the gold kernel", task_id=task.task_id)
        return text


def write_requirement(task: Task, drafter: LlmDrafter | None) -> tuple[str, str]:
    """(requirement text, origin): the LLM's draft when it works, else the template."""
    if drafter is not None:
        try:
            return drafter.draft(task), "llm"
        except RequirementError as exc:
            log.warning("%s; using the template requirement", exc)
    return draft_requirement(task), "template"


def user_prompt(task: Task) -> str:
    """The facts the LLM works from: the template draft, the PR text and the base sources."""
    parts = [
        f"Framework: {task.framework} ({task.repo}), base commit {task.base_commit[:12]}.",
        f"Task type: {task.task_type.type}.",
        f"PR title: {task.title}",
        "PR description (cleaned):",
        _safe_body(task, 3000, first_only=False) or "(none)",
        "",
        "A factual draft built from the code (keep its facts, improve its prose):",
        draft_requirement(task),
        "",
        "Base (current) source of each target kernel; the new version is not shown:",
    ]
    for k in task.kernels:
        src = k.before_src or "(the kernel does not exist yet)"
        parts += [f"### `{k.name}` in `{k.old_file or k.file}`", "```python", src.rstrip(), "```"]
    parts.append("Context at the base commit (name: signature -- why it is shown):")
    for path, ctx in sorted(task.context.items()):
        for item in (*ctx.classes, *ctx.functions):
            parts.append(f"- `{path}` {item.name}: `{_one_line(item.signature)}` -- {item.why}")
    return "\n".join(parts)


def clean_pr_body(body: str, max_chars: int = GOAL_MAX_CHARS, *, first_only: bool = True) -> str:
    """The descriptive part of a PR body: no templates, checklists, trackers, logs or links.

    With `first_only`, keeps the first substantive paragraph (and the next when it is very
    short); else every kept paragraph. Capped at `max_chars` on a word boundary.
    """
    text = _HTML_COMMENT.sub("", body.replace("\r\n", "\n"))
    text = _DETAILS.sub("", text)
    text = _FENCE.sub("", text)  # code blocks in PR bodies are logs, commands or the new code
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    paragraphs: list[list[str]] = [[]]
    skipping = False
    for raw in text.split("\n"):
        line = raw.strip()
        if _HEADING.match(raw) and len(line) < 80:
            skipping = bool(_SKIP_SECTION.search(line))
            paragraphs.append([])
            continue
        if skipping or _NOISE_LINE.match(line) or _INTERNAL_TRACKER.search(line):
            continue
        line = re.sub(r"^summary:\s*", "", _URL.sub("", line), flags=re.IGNORECASE).strip()
        if _DANGLING.match(line):
            continue  # what is left of "Fixes <link>" once the link is gone
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    kept = [" ".join(p) for p in paragraphs if p]
    out = ""
    for para in kept:
        out = f"{out}\n\n{para}" if out else para
        if first_only and len(out) >= min(160, max_chars):
            break
    if len(out) > max_chars:
        out = out[: max_chars - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return out


def _render(task: Task, *, with_body: bool) -> str:
    label, goal = _TYPE_GOAL.get(task.task_type.type, ("Task", "Implement the change below."))
    title = _TITLE_TAGS.sub("", task.title).strip() or ", ".join(k.name for k in task.kernels)
    out = [f"# {label} in {task.framework}: {title}", "", "## Goal", goal]
    body = _safe_body(task, GOAL_MAX_CHARS) if with_body else ""
    if body.split("\n\n", 1)[0].strip() == task.title.strip():
        body = body.split("\n\n", 1)[1] if "\n\n" in body else ""  # the title, said again
    if body:
        out += [
            "",
            "From the pull request:",
            "",
            *(f"> {x}" if x else ">" for x in body.split("\n")),
        ]
    out += ["", "## Where"]
    if task.targets:
        # the Interface lists each target with its file and signature: here only the files,
        # and the changes that are not "write this function" (a move, a removal, a relaunch)
        files = sorted(task.target_files)
        out.append("Files: " + ", ".join(f"`{f}`" for f in files) + ".")
        out += [f"- {_where(k, with_wrappers=False)}" for k in task.kernels
                if k.change not in ("modified", "added")]  # fmt: skip
    else:
        out += [f"- {_where(k)}" for k in task.kernels]
    names = {k.name for k in task.kernels}
    shown = [
        f"`{path}`: " + _capped([i.name for i in (*ctx.classes, *ctx.functions)])
        for path, ctx in sorted(task.context.items())
        if any(i.name not in names for i in (*ctx.classes, *ctx.functions))
    ]
    if shown:
        out += ["", "Related code at the base commit (given as context):"]
        out += [f"- {x}" for x in shown]
    out += ["", "## Interface", *_targets(task), "", *_interface(task)]
    out += ["", "## Constraints", *_constraints(task)]
    out += ["", "## How it is checked", *_checks(task)]
    return "\n".join(out).rstrip() + "\n"


def _safe_body(task: Task, max_chars: int, *, first_only: bool = True) -> str:
    """The cleaned PR body, or "" when it quotes a line found only in the gold kernel.

    Cleaning joins a paragraph's lines, so code pasted outside a fence would slip past the
    line-based `leaks_gold`; a substring test on the gold-only lines catches it.
    """
    body = clean_pr_body(task.body, max_chars, first_only=first_only)
    known = _known_lines(task)
    gold_only = _lines(k.after_src for k in task.kernels) - known
    if any(line in body for line in gold_only):
        log.info("%s: PR body quotes the gold kernel; left out of the requirement", task.task_id)
        return ""
    return body


def _where(k: TargetKernel, *, with_wrappers: bool = True) -> str:
    what = {
        "template": "Triton template",
        "assigned": "Triton kernel (built with `triton.jit(fn)`)",
    }.get(k.kind, "Triton kernel")
    if k.role == "helper":
        what = "`@triton.jit` helper"
    if k.change == "added":
        text = f"add a new {what} `{k.name}` in `{k.file}`"
    elif k.change == "deleted":
        text = f"remove the {what} `{k.name}` from `{k.file}`"
    elif k.change == "launch_changed":
        text = (
            f"keep the {what} `{k.name}` in `{k.file}` as it is and change how it is launched "
            "(grid, block sizes, warps, stages)"
        )
    elif k.change in ("moved", "renamed_file") and k.old_file:
        text = f"move the {what} `{k.name}` from `{k.old_file}` to `{k.file}`"
    else:
        text = f"modify the {what} `{k.name}` in `{k.file}`"
    if k.wrappers and with_wrappers:
        text += "; launched by " + ", ".join(f"`{w}`" for w in k.wrappers)
    return text + "."


def _targets(task: Task) -> list[str]:
    """The functions the model writes, as the starting tree (the setup state) has them."""
    if not task.targets:
        return []
    out = [
        "You write these functions (the targets). Your starting tree already holds the rest of "
        "the change (callers, new modules, configuration); each target is at its base version, "
        "or, where the change adds it, a stub that raises `NotImplementedError`; each with the "
        "signature it must have:",
    ]
    for t in task.targets:
        what = {
            "modified": "change it",
            "added": "new: replace the stub",
            "deleted": "the change removes it",
            "unchanged": "launches the kernels; change it if your kernels need it",
        }[str(t.status)]
        out.append(f"- `{t.file}`: `{t.name}` ({t.role}; {what}): `{_one_line(t.signature)}`")
        if t.docstring and t.status == "added":
            doc = _one_line(t.docstring.strip("\"' \n"))
            out.append(f"  - documented as: {doc[:300]}")
    return out


def _base_constexprs(k: TargetKernel) -> tuple[str, ...]:
    """The `tl.constexpr` parameters of the base version (none for a new kernel)."""
    head = header(k.before_src) or ""
    return tuple(
        m.group(1) for m in re.finditer(r"(\w+)\s*:\s*(?:tl|triton\.language)\.constexpr", head)
    )


def _interface(task: Task) -> list[str]:
    wrappers: dict[str, ContextItem] = {}
    for item in _context_items(task):
        wrappers.setdefault(item.name, item)
        wrappers.setdefault(item.name.rsplit(".", 1)[-1], item)
    # the targets' signatures are in the Interface list already (as the change leaves them)
    written = {t.name.rsplit(".", 1)[-1]: _one_line(t.signature) for t in task.targets}
    # the dtypes and shapes of the largest launch the kept tests made of each kernel with the
    # gold (`tests.launches`, recorded by `eval reference`): `name(q=bfloat16[...], ..., BT=64)`
    seen_launches = {line.split("(", 1)[0]: line for line in task.tests.launches}
    out: list[str] = []
    # A specification, not a dump: one line per signature, each said once, and nothing the
    # starting tree already shows (base signatures and autotune configurations are in it).
    for k in task.kernels:
        start = len(out)
        out += ["", f"### `{k.name}`"]
        if k.signature_before and not task.targets:  # no setup state: say where it starts
            base = _one_line(header(k.before_src) or k.signature_before)
            out.append(f"Signature at the base commit: `{base}`")
        if k.change != "deleted" and k.signature_after and _signature_changed(k):
            label = "Required signature" if k.signature_before else "Signature (new)"
            head = header(k.after_src) or k.signature_after
            if "#" in head:  # its parameters carry comments (dtypes, shapes): keep them
                out += [f"{label}:", "```python", head, "```"]
            elif written.get(k.name, "").rstrip(":") != _one_line(head).rstrip(":"):
                out.append(f"{label}: `{_one_line(head)}`")
        elif k.signature_before and k.change != "deleted":
            out.append("Keep its signature.")
        doc = docstring(k.after_src) if k.change == "added" else None
        if doc:
            lines = doc.splitlines()
            more = (
                [f"> ({len(lines) - DOC_MAX_LINES} more lines)"]
                if len(lines) > DOC_MAX_LINES
                else []
            )
            out += ["What it computes (its documentation):",
                    *(f"> {x}" for x in lines[:DOC_MAX_LINES]), *more]  # fmt: skip
        if k.autotune_configs_before and not task.targets:
            out += ["Autotune configurations at the base commit:", "```python"]
            out += [k.autotune_configs_before.rstrip(), "```"]
        launched = [f"`{w}`" + ("" if w.rsplit(".", 1)[-1] in written
                                else f": `{_one_line(wrappers[w].signature)}`")
                    for w in k.wrappers if w in wrappers]  # fmt: skip
        if launched:
            out.append("Launched by " + "; ".join(launched))
        seen = seen_launches.get(k.name)
        if seen:
            out.append(f"The tests launch it (the gold, on the GPU) with: `{seen}`")
        if len(out) == start + 2:  # nothing to say beyond the Interface list
            del out[start:]
    return out[1:] if out and out[0] == "" else out


def _constraints(task: Task) -> list[str]:
    out: list[str] = []
    relaunch: list[str] = []
    keep: list[str] = []
    constexprs = False
    # a target at its base version is in the starting tree: its parameters and what it
    # computes with are there to read, not repeated here
    in_tree = {t.name for t in task.targets if t.status == "modified"}
    for k in task.kernels:
        base = _base_constexprs(k)
        constexprs = constexprs or bool(base)
        if base and k.name not in in_tree:
            out.append(
                f"- `{k.name}`: {_names(base)} {'is' if len(base) == 1 else 'are'} "
                "`tl.constexpr` at the base commit."
            )
        facts = [] if k.name in in_tree else _source_facts(k.before_src or "")
        if facts:
            out.append(f"- The base `{k.name}` " + "; ".join(facts) + ".")
        if k.wrappers and k.change != "deleted":
            changed = k.change == "added" or _signature_changed(k)
            (relaunch if changed else keep).extend(k.wrappers)
    if constexprs:
        out.append("- `tl.arange` extents must be compile-time powers of two.")
    if relaunch:
        out.append(
            f"- {_names(dict.fromkeys(relaunch))} must launch the new kernel signatures; keep "
            "the wrappers' own signatures compatible with their callers."
        )
    if kept := [w for w in dict.fromkeys(keep) if w not in relaunch]:
        out.append(f"- Keep the signature of {_names(kept)} unchanged: callers rely on it.")
    out.append(
        "- Results must match the reference within the tolerances of the framework's tests, "
        "for every dtype and shape they cover."
    )
    if task.targets:
        out.append(
            "- Change only the target functions listed under Interface (adding imports is "
            "fine); do not edit tests, conftest files, pytest configuration or packaging."
        )
    else:
        out.append("- Change only the files named above; do not edit tests.")
    return out


def _checks(task: Task) -> list[str]:
    t = task.tests
    out = ["The framework's own tests run on your starting tree with your targets in place:"]
    if t.node_ids:
        out += [f"- `{n}`" for n in t.node_ids]
        out += ["", "(the tests of the PR that launch a target kernel, chosen on a GPU)"]
        return [*out, *_perf(task)]
    out += [f"- `{f}` (added or updated by the PR)" for f in t.changed_in_pr]
    out += [f"- `{f}`" for f in t.selected_existing if f not in t.changed_in_pr]
    if not t.files:
        out.append("- (no test files were selected)")
    if t.command:
        out += ["", "Command:", "```bash", t.command, "```"]
    return [*out, *_perf(task)]


def _perf(task: Task) -> list[str]:
    out = [
        "",
        "Performance: the GPU time of your kernel is compared with the kernel time of the "
        "reference implementation (the merged PR) on the same inputs and GPU.",
    ]
    if task.task_type.type is TaskType.OPTIMIZATION:
        out.append("It should also beat the base kernel it replaces.")
    return out


def _source_facts(src: str) -> list[str]:
    facts = []
    for pattern, fact in _SOURCE_FACTS:
        if "{found}" not in fact:
            if pattern.search(src):
                facts.append(fact)
            continue
        found = sorted({m.group().rstrip("(") for m in pattern.finditer(src)})
        if found:
            facts.append(fact.format(found=", ".join(f"`{x}`" for x in found)))
    return facts


def header(src: str | None) -> str | None:
    """The `def` line(s) of a kernel through its parameter list, as written (comments kept:
    they often carry the shapes and dtypes of pointer arguments)."""
    if not src:
        return None
    lines = src.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("def ")), None)
    if start is None:
        return None
    depth = 0
    for end in range(start, len(lines)):
        code = lines[end].split("#", 1)[0]
        depth += code.count("(") - code.count(")")
        if depth <= 0 and code.rstrip().endswith(":"):
            return textwrap.dedent("\n".join(lines[start : end + 1]))
    return None


def docstring(src: str | None) -> str | None:
    """The docstring of the kernel function in `src`, if it has one."""
    if not src:
        return None
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return ast.get_docstring(node)
    return None


def _signature_changed(k: TargetKernel) -> bool:
    if k.signature_before is None or k.signature_after is None:
        return k.signature_after is not None
    return _one_line(k.signature_before) != _one_line(k.signature_after)


def _known_lines(task: Task) -> set[str]:
    """Non-trivial lines the model may see anyway: base sources, configs, signatures, context."""
    return _lines(
        [
            *(k.before_src for k in task.kernels),
            *(k.autotune_configs_before for k in task.kernels),
            *(k.signature_before for k in task.kernels),
            *(k.signature_after for k in task.kernels),
            *(header(k.after_src) for k in task.kernels),
            *(docstring(k.after_src) for k in task.kernels),
            *(item.source for item in _context_items(task)),
        ]
    )


def _context_items(task: Task) -> list[ContextItem]:
    return [i for ctx in task.context.values() for i in (*ctx.classes, *ctx.functions)]


def _lines(sources: Iterable[str | None]) -> set[str]:
    return {
        s
        for src in sources
        if src
        for line in src.splitlines()
        if len(s := line.strip()) >= _TRIVIAL_LINE
    }


def _capped(names: Sequence[str], most: int = CONTEXT_MAX_NAMES) -> str:
    """`a`, `b`, ... and N more: the context list names what is there, it does not list it all."""
    shown = ", ".join(f"`{n}`" for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _names(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _one_line(text: str) -> str:
    """A (multi-line) header on one line: `def f(a, b):`, not `def f( a, b, ):`."""
    flat = " ".join(text.split())
    return re.sub(r",?\s*\)", ")", re.sub(r"\(\s+", "(", flat))


def _unfence(text: str) -> str:
    """Drop one fence around the whole answer: models like to wrap Markdown in ```markdown."""
    m = re.fullmatch(r"\s*```(?:markdown|md)?\s*\n(.*)\n```\s*", text, re.DOTALL)
    return (m.group(1) if m else text).strip() + "\n"
