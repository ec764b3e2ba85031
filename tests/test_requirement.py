"""Requirement drafts: the template's facts, the gold-leak guard, and the LLM path against a local
test double of an OpenAI-compatible endpoint (no network needed)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from curation.errors import CurationError, RequirementError
from curation.model import (
    ContextItem,
    Difficulty,
    FileContext,
    FileStat,
    TargetKernel,
    Task,
    TaskType,
    TypeDecision,
)
from curation.model import (
    TestSelection as Selection,
)
from curation.requirement import (
    SECTIONS,
    LlmDrafter,
    clean_pr_body,
    draft_requirement,
    leaks_gold,
    write_requirement,
)

FILE = "vllm/model_executor/layers/rms_norm.py"

RMS_BEFORE = """@triton.autotune(configs=CONFIGS, key=["N"])
@triton.jit
def rms_norm_kernel(X, Y, W, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)
"""

# The gold version fuses the residual add: only its signature may reach the requirement.
RMS_AFTER = """@triton.autotune(configs=CONFIGS, key=["N"])
@triton.jit
def rms_norm_kernel(X, R, Y, W, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    res_in = tl.load(R + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    fused_sum = _residual_add(x, res_in)
    tl.store(R + row * stride + cols, fused_sum, mask=mask)
    var = tl.sum(fused_sum * fused_sum, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    tl.store(Y + row * stride + cols, fused_sum * rstd * w, mask=mask)
"""
GOLD_ONLY_LINE = "res_in = tl.load(R + row * stride + cols, mask=mask, other=0.0).to(tl.float32)"

HELPER_AFTER = """@triton.jit
def _residual_add(a, b):
    summed_values = a + b
    return summed_values
"""

PR_BODY = """<!-- Thank you for contributing! Please fill in the template. -->
## Purpose
Fuse the residual add into the RMSNorm kernel so the residual is read once and written back in \
the same pass, avoiding an extra HBM round trip per decoder layer.

Internal tracking: https://www.internalfb.com/tasks/?t=123456

## Test Plan
```
$ pytest tests/kernels/test_rms_norm.py
============ 48 passed in 12.3s ============
```
- [x] I ran the tests
- [ ] I updated the docs
cc @reviewer
"""


def _ctx(name: str, signature: str, why: str, line: int) -> ContextItem:
    return ContextItem(name, "function", signature, f"{signature}:\n    ...\n", why, line, line + 9)


def make_task(**over: Any) -> Task:
    """A task with two target kernels (a modified one, a new helper), context and tests."""
    rms = TargetKernel(
        file=FILE,
        name="rms_norm_kernel",
        change="modified",
        kind="jit",
        role="kernel",
        old_file=None,
        before_src=RMS_BEFORE,
        after_src=RMS_AFTER,
        signature_before="def rms_norm_kernel(X, Y, W, stride, N, eps, BLOCK_N: tl.constexpr)",
        signature_after="def rms_norm_kernel(X, R, Y, W, stride, N, eps, BLOCK_N: tl.constexpr)",
        constexpr_params=("BLOCK_N",),
        autotune_configs_before='[triton.Config({"BLOCK_N": 1024}, num_warps=8)]',
        autotune_configs_after='[triton.Config({"BLOCK_N": 1024}, num_warps=8)]',
        wrappers=("fused_add_rms_norm",),
        span_before=(10, 21),
        span_after=(10, 25),
    )
    helper = TargetKernel(
        file=FILE,
        name="_residual_add",
        change="added",
        kind="jit",
        role="helper",
        old_file=None,
        before_src=None,
        after_src=HELPER_AFTER,
        signature_before=None,
        signature_after="def _residual_add(a, b)",
        constexpr_params=(),
        autotune_configs_before=None,
        autotune_configs_after=None,
        wrappers=(),
        span_before=None,
        span_after=(5, 8),
    )
    ctx = FileContext(
        functions=(
            _ctx(
                "fused_add_rms_norm",
                "def fused_add_rms_norm(x, residual, weight, eps)",
                "launches rms_norm_kernel",
                30,
            ),
            _ctx(
                "RMSNorm.forward",
                "def forward(self, x, residual=None)",
                "calls fused_add_rms_norm",
                50,
            ),
        ),
        imports=("import triton", "import triton.language as tl"),
    )
    fields: dict[str, Any] = dict(
        task_id="vllm__4242__rms_norm_kernel",
        framework="vllm",
        repo="vllm-project/vllm",
        pr_id="#4242",
        pr_number=4242,
        pr_url="https://github.com/vllm-project/vllm/pull/4242",
        title="[Kernel][Perf] Fuse residual add into RMSNorm (#4242)",
        body=PR_BODY,
        merged_at="2024-05-01T12:00:00Z",
        base_commit="a" * 40,
        merge_commit="b" * 40,
        base_tag="v0.4.2",
        task_type=TypeDecision(TaskType.OPTIMIZATION, ("title says fuse",)),
        difficulty=Difficulty(3, 0.5, {}),
        kernels=(rms, helper),
        files_changed=(FileStat(FILE, "modified", 20, 4, False),),
        context={FILE: ctx},
        tests=Selection(
            command="pytest -x tests/kernels/test_rms_norm.py tests/models/test_llama.py",
            changed_in_pr=("tests/kernels/test_rms_norm.py",),
            selected_existing=("tests/models/test_llama.py",),
        ),
        requirement="",
        requirement_origin="template",
    )
    fields.update(over)
    return Task(**fields)


# --- template ---------------------------------------------------------------------------------


def test_template_states_the_facts_without_the_gold_body():
    task = make_task()
    text = draft_requirement(task)
    assert text.startswith("# Optimization in vllm: Fuse residual add into RMSNorm\n")
    for section in SECTIONS:
        assert section in text
    assert FILE in text
    assert "modify the Triton kernel `rms_norm_kernel`" in text
    assert "add a new `@triton.jit` helper `_residual_add`" in text
    assert "`fused_add_rms_norm`" in text
    assert task.kernels[0].signature_before in text  # current interface
    assert task.kernels[0].signature_after in text  # required interface: allowed
    assert "`BLOCK_N`" in text and 'triton.Config({"BLOCK_N": 1024}' in text
    assert task.tests.command in text
    assert "tests/kernels/test_rms_norm.py` (added or updated by the PR)" in text
    assert "tests/models/test_llama.py" in text
    assert "reference implementation" in text
    assert GOLD_ONLY_LINE not in text and "summed_values" not in text
    assert not leaks_gold(text, task)


def test_template_goal_drops_pr_boilerplate():
    text = draft_requirement(make_task())
    goal = text.split("## Goal", 1)[1].split("## Where", 1)[0]
    assert "avoiding an extra HBM round trip" in goal
    for noise in ("Thank you", "internalfb", "passed in", "[x]", "cc @", "Test Plan", "pytest"):
        assert noise not in goal


def test_template_drops_a_pr_body_that_quotes_the_gold_kernel():
    body = "Fuse the add.\n\n" + "\n".join(RMS_AFTER.splitlines()[6:10])
    text = draft_requirement(make_task(body=body))
    assert GOLD_ONLY_LINE not in text and not leaks_gold(text, make_task())


def test_template_constraints_come_from_the_base_source():
    constraints = draft_requirement(make_task()).split("## Constraints", 1)[1]
    constraints = constraints.split("## How it is checked", 1)[0]
    assert "masks its loads/stores" in constraints and "float32" in constraints
    assert "tl.dot" not in constraints
    # The kernel's signature changes, so its wrapper has to launch the new one.
    assert "`fused_add_rms_norm` must launch the new kernel signatures" in constraints


def test_clean_pr_body_of_an_unfilled_template_is_empty():
    body = (
        "<!-- fill me -->\nFILL IN THE PR DESCRIPTION HERE\n\n"
        "FIX #xxxx (*link existing issues this PR will resolve*)\n\n"
        "**BEFORE SUBMITTING, PLEASE READ THE CHECKLIST BELOW**\n\n---\n\n"
        "<details><summary>PR Checklist</summary>\n\n- [ ] tests\n</details>\n"
    )
    assert clean_pr_body(body) == ""


def test_clean_pr_body_keeps_the_summary_of_a_ghstack_body():
    body = (
        "Stack from [ghstack](https://github.com/ezyang/ghstack):\n* #101\n* __->__ #102\n\n"
        "Summary:\nUse a persistent reduction when rnumel is small.\n\n"
        "Test Plan: run the inductor tests\n\nDifferential Revision: D56789012\n\ncc @someone\n"
    )
    assert clean_pr_body(body) == "Use a persistent reduction when rnumel is small."


def test_clean_pr_body_caps_length_on_a_word_boundary():
    out = clean_pr_body("word " * 400, max_chars=100)
    assert len(out) <= 100 and out.endswith("…")


# --- leaks_gold -------------------------------------------------------------------------------


def test_leaks_gold_when_three_gold_lines_are_pasted():
    task = make_task()
    gold = RMS_AFTER.splitlines()[7:10]  # res_in, fused_sum, store of R: all gold-only
    assert leaks_gold("Do this:\n" + "\n".join(gold) + "\nthanks", task)
    assert not leaks_gold("Do this:\n" + "\n".join(gold[:2]), task)


def test_leaks_gold_ignores_base_code_but_not_a_pasted_small_fix():
    task = make_task()
    base_only = "\n".join(RMS_BEFORE.splitlines()[3:8])
    assert not leaks_gold(base_only, task)
    one_new_line_with_neighbours = "\n".join(RMS_AFTER.splitlines()[5:8])
    assert leaks_gold(one_new_line_with_neighbours, task)


# --- LLM path against a test double -----------------------------------------------------------

GOOD_ANSWER = """```markdown
# Fuse the residual add into `rms_norm_kernel`

## Goal
Read the residual once and write the sum back in the same pass.

## Where
`vllm/model_executor/layers/rms_norm.py`, kernel `rms_norm_kernel`, new helper `_residual_add`.

## Interface
`def rms_norm_kernel(X, R, Y, W, stride, N, eps, BLOCK_N: tl.constexpr)`

## Constraints
Masked loads; `BLOCK_N` is constexpr.

## How it is checked
`pytest -x tests/kernels/test_rms_norm.py`, timed against the reference.
```"""


@dataclass
class Endpoint:
    url: str
    mode: str = "ok"  # ok | error | leak | slow | garbage | incomplete
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
            if self.path != "/v1/chat/completions" or state.mode == "error":
                self._send(500, b'{"error": {"message": "boom"}}')
                return
            if state.mode == "slow":
                time.sleep(0.8)
            content = {
                "leak": GOOD_ANSWER.replace("## Constraints", RMS_AFTER + "\n## Constraints"),
                "incomplete": "# Title\n\n## Goal\nDo it.\n",
            }.get(state.mode, GOOD_ANSWER)
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
            self._send(200, b"not json" if state.mode == "garbage" else json.dumps(answer).encode())

        def _send(self, code: int, data: bytes) -> None:
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (the timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _drafter(ep: Endpoint, timeout_s: float = 1.0) -> LlmDrafter:
    return LlmDrafter(ep.url, "test-model", api_key_env="TEST_LLM_KEY", timeout_s=timeout_s)


def test_llm_happy_path(endpoint, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-123")
    text, origin = write_requirement(make_task(), _drafter(endpoint))
    assert origin == "llm"
    assert text.startswith("# Fuse the residual add") and "```markdown" not in text
    [req] = endpoint.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["json"]["model"] == "test-model"
    roles = [m["role"] for m in req["json"]["messages"]]
    assert roles == ["system", "user"]
    user = req["json"]["messages"][1]["content"]
    assert "rms_norm_kernel" in user and FILE in user
    assert "var = tl.sum(x * x, axis=0) / N" in user  # the base source is the starting point
    assert GOLD_ONLY_LINE not in user and "summed_values" not in user


def test_llm_without_key_sends_no_authorization(endpoint, monkeypatch):
    monkeypatch.delenv("TEST_LLM_KEY", raising=False)
    assert write_requirement(make_task(), _drafter(endpoint))[1] == "llm"
    assert "Authorization" not in endpoint.requests[0]["headers"]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("error", "HTTP 500"),
        ("leak", "leaks the gold kernel"),
        ("garbage", "malformed LLM response"),
        ("incomplete", "lacks sections"),
    ],
)
def test_llm_failures_fall_back_to_the_template(endpoint, caplog, mode, message):
    endpoint.mode = mode
    task = make_task()
    with pytest.raises(RequirementError, match=message) as exc:
        _drafter(endpoint).draft(task)
    assert isinstance(exc.value, CurationError) and task.task_id in str(exc.value)
    with caplog.at_level(logging.WARNING, logger="curation.requirement"):
        text, origin = write_requirement(task, _drafter(endpoint))
    assert (text, origin) == (draft_requirement(task), "template")
    assert any(message in r.getMessage() for r in caplog.records)


def test_llm_timeout_falls_back_to_the_template(endpoint):
    endpoint.mode = "slow"
    start = time.monotonic()
    text, origin = write_requirement(make_task(), _drafter(endpoint, timeout_s=0.2))
    assert origin == "template" and time.monotonic() - start < 0.7
    assert "## How it is checked" in text


def test_llm_unreachable_endpoint_falls_back(endpoint):
    task = make_task()
    drafter = LlmDrafter("http://127.0.0.1:9/v1", "m", timeout_s=0.5)
    with pytest.raises(RequirementError, match="LLM endpoint failed"):
        drafter.draft(task)
    assert write_requirement(replace(task, body=""), drafter)[1] == "template"


def test_new_kernel_shows_commented_parameters_and_docstring_not_body() -> None:
    from dataclasses import replace

    from curation.requirement import docstring, header

    src = '''@triton.jit
def _pad_rows_kernel(
    out_ptr,  # int64* [rows, topk]
    count_ptr,  # int32* [1]
    ROWS: tl.constexpr,
):
    """Fill out[count:, :] with -1."""
    r = tl.arange(0, ROWS)
    tl.store(out_ptr + r, -1, mask=r >= tl.load(count_ptr))
'''
    assert header(src) is not None and "# int64* [rows, topk]" in (header(src) or "")
    assert docstring(src) == "Fill out[count:, :] with -1."
    task = make_task()
    [first, *rest] = task.kernels
    added = replace(
        first,
        name="_pad_rows_kernel",
        change="added",
        before_src=None,
        after_src=src,
        signature_before=None,
        signature_after="def _pad_rows_kernel(out_ptr, count_ptr, ROWS)",
    )
    task = replace(task, kernels=(added, *rest))
    text = draft_requirement(task)
    assert "out_ptr,  # int64* [rows, topk]" in text
    assert "> Fill out[count:, :] with -1." in text
    assert "tl.store(out_ptr + r" not in text
    assert not leaks_gold(text, task)


def test_gitlab_merge_body_repeating_the_title_adds_nothing() -> None:
    from dataclasses import replace

    task = replace(
        make_task(),
        title="feat(MLA): Support packed sequences",
        body="feat(MLA): Support packed sequences\n\nSee merge request ADLR/megatron-lm!3220",
    )
    text = draft_requirement(task)
    assert "See merge request" not in text
    assert "From the pull request" not in text
