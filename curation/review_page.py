"""HTML for the curator's review page: the index table and one task's page.

Reads: `tasks/<task_id>/` (task.json, requirement.md, curation.json), only through `TaskDir`,
and only to render it; the HTTP server in `curation.review` decides which directories to pass.
Writes: nothing; every function returns a string of HTML.
Refuses: to emit task text unescaped and links other than http(s). Task text comes from PRs and
is untrusted: every value goes through `esc`, the page's one script (`_JS`) writes data with
textContent and never builds HTML from it, and its `<script>` and `<style>` carry the nonce the
server's Content-Security-Policy names.
"""

from __future__ import annotations

import html
import logging
import re
from collections import Counter
from difflib import SequenceMatcher
from itertools import zip_longest
from pathlib import Path
from urllib.parse import quote, urlsplit

from curation.model import CurationStatus, FileContext, TargetKernel, Task
from curation.taskdir import TaskDir, TaskFile, task_dirs

logger = logging.getLogger(__name__)

_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_REPO = re.compile(r"^[\w.-]+/[\w.-]+$")


def esc(value: object) -> str:
    """`value` as text safe inside HTML elements and quoted attributes."""
    return html.escape(str(value), quote=True)


_CSS = """
:root{--fg:#1f2328;--muted:#59636e;--border:#d1d9e0;--soft:#f6f8fa}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
 max-width:1600px;margin:0 auto;padding:.8rem 1.5rem 4rem}
code,pre,textarea,table.sbs td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,
 "DejaVu Sans Mono",monospace;font-size:12.5px}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:1.35rem;margin:.5rem 0}h3{font-size:1rem;margin:1rem 0 .3rem}
h2{font-size:1.1rem;border-bottom:1px solid var(--border);padding-bottom:.2rem;margin-top:1.6rem}
nav{display:flex;gap:1.2rem;padding-bottom:.4rem;border-bottom:1px solid var(--border)}
nav .grow{flex:1}
table{border-collapse:collapse}
th,td{text-align:left;padding:.25rem .6rem;border-bottom:1px solid var(--border);
 vertical-align:top}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.4rem 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0}
.badge{display:inline-block;padding:0 .6rem;border-radius:1em;font-size:12px;font-weight:600;
 color:#fff;background:#6e7781}
.badge.approved{background:#1a7f37}.badge.rejected{background:#cf222e}
.badge.pending{background:#9a6700}
.tag{display:inline-block;padding:0 .5rem;margin-right:.3rem;border-radius:1em;font-size:12px;
 background:#ddf4ff;color:#0550ae}
pre{background:var(--soft);border:1px solid var(--border);border-radius:6px;
 padding:.5rem .8rem;overflow:auto;margin:.3rem 0}
pre.prose{white-space:pre-wrap;overflow-wrap:anywhere;max-height:26rem;
 font-family:inherit;font-size:13.5px}
table.sbs{width:100%;table-layout:fixed;border:1px solid var(--border)}
table.sbs col.ln{width:3.4em}
table.sbs th{background:var(--soft);border-bottom:1px solid var(--border)}
table.sbs td{border:0;padding:0 .5rem;white-space:pre-wrap;overflow-wrap:anywhere;
 line-height:1.4}
table.sbs td.old,table.sbs td.new{padding-left:calc(.5rem + 4ch);text-indent:-4ch}
table.sbs td.ln{color:var(--muted);text-align:right;background:var(--soft);user-select:none}
table.sbs td.new,table.sbs td.ln2{border-left:1px solid var(--border)}
td.del{background:#ffebe9}td.add{background:#dafbe1}td.gap{background:#f6f8fa}
.panel{border:1px solid var(--border);border-radius:8px;padding:.6rem 1rem .9rem;
 background:#fcfcfd}
textarea{width:100%;min-height:13rem;box-sizing:border-box;padding:.6rem;
 border:1px solid var(--border);border-radius:6px;resize:vertical}
.actions{display:flex;gap:.5rem;align-items:center;flex-wrap:wrap;margin-top:.5rem}
button{font:inherit;padding:.3rem .9rem;border-radius:6px;border:1px solid var(--border);
 background:var(--soft);cursor:pointer}
button#approve{background:#1f883d;border-color:#1a7f37;color:#fff}
button#reject{background:#cf222e;border-color:#a40e26;color:#fff}
input#reason{flex:1;min-width:16rem;padding:.3rem .5rem;font:inherit;
 border:1px solid var(--border);border-radius:6px}
#status{margin:.5rem 0 0}#error{color:#cf222e;font-weight:600;margin:.3rem 0 0}
.muted{color:var(--muted)}details{margin:.25rem 0}summary{cursor:pointer}
details.item{margin-left:1.2rem}ul{margin:.2rem 0;padding-left:1.4rem}
"""

# The page's only script. It writes data with textContent, never innerHTML, so nothing a PR
# says can become markup; the task id travels as a data attribute, not inside the script.
_JS = """
const box = document.getElementById('curation');
const taskId = box.dataset.task;
const text = document.getElementById('requirement');
const reason = document.getElementById('reason');
const badge = document.getElementById('status-badge');
const note = document.getElementById('status-note');
const error = document.getElementById('error');
let saved = text.value;
function show(s) {
  badge.textContent = s.status;
  badge.className = 'badge ' + s.status;
  const bits = [];
  if (s.reason) bits.push('reason: ' + s.reason);
  if (s.requirement_edited) bits.push('requirement edited');
  if (s.updated_at) bits.push('saved ' + s.updated_at);
  note.textContent = bits.join(' \\u00b7 ');
}
async function post(kind, payload) {
  error.textContent = '';
  let data;
  try {
    const r = await fetch('/api/task/' + encodeURIComponent(taskId) + '/' + kind, {
      method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(payload)});
    data = await r.json();
  } catch (e) { data = {ok: false, error: String(e)}; }
  if (!data.ok) { error.textContent = data.error || 'request failed'; return false; }
  show(data);
  return true;
}
async function saveText() {
  if (await post('requirement', {text: text.value})) saved = text.value;
}
document.getElementById('save').onclick = saveText;
document.getElementById('approve').onclick = async () => {
  // Approving approves what the curator sees: unsaved edits are saved first.
  if (text.value !== saved) { await saveText(); if (text.value !== saved) return; }
  await post('decision', {status: 'approved', reason: reason.value});
};
document.getElementById('reject').onclick = () => {
  if (!reason.value.trim()) { error.textContent = 'A rejection needs a reason.'; return; }
  post('decision', {status: 'rejected', reason: reason.value});
};
document.getElementById('pending').onclick = () =>
  post('decision', {status: 'pending', reason: reason.value});
window.addEventListener('beforeunload', (e) => {
  if (text.value !== saved) e.preventDefault();
});
"""


def render_page(title: str, body: str, nonce: str, script: bool = False) -> str:
    """A whole HTML document; its style (and script, if asked) carry `nonce` for the CSP."""
    js = f'<script nonce="{nonce}">{_JS}</script>' if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{esc(title)}</title><style nonce="{nonce}">{_CSS}</style></head>'
        f"<body>{body}{js}</body></html>"
    )


def _ext(url: str | None, inner: str) -> str:
    """An external link around already-escaped `inner`; bare unless the URL is http(s)."""
    if not url or urlsplit(url).scheme not in ("http", "https"):
        return inner  # e.g. a `javascript:` URL smuggled into a PR record
    return f'<a href="{esc(url)}" target="_blank" rel="noopener noreferrer">{inner}</a>'


def _commit(task: Task, sha: str) -> str:
    url = None
    if _REPO.match(task.repo) and _SHA.match(sha):
        url = f"https://github.com/{task.repo}/commit/{sha}"
    return _ext(url, f"<code>{esc(sha)}</code>")


def _badge(status: str) -> str:
    return f'<span class="badge {esc(status)}">{esc(status)}</span>'


def _task_link(task_id: str) -> str:
    return f'<a href="/task/{esc(quote(task_id, safe=""))}">{esc(task_id)}</a>'


def _items(values: tuple[str, ...], empty: str = "none") -> str:
    if not values:
        return f'<span class="muted">{esc(empty)}</span>'
    return "<ul>" + "".join(f"<li><code>{esc(v)}</code></li>" for v in values) + "</ul>"


def _status_of(td: TaskDir, task: Task) -> str:
    # curation.json is the curator's own record; task.json only mirrors it.
    return str(td.load_curation().status if td.has(TaskFile.CURATION) else task.curation_status)


def render_index(root: Path, nonce: str) -> str:
    """The table of all tasks with their status, and counts per status."""
    rows, counts = [], Counter[str]()
    for td in task_dirs(root):
        try:
            task = td.load_task()
        except Exception as exc:  # one broken task.json must not hide the others
            logger.warning("task %s: unreadable task.json: %s", td.id, exc)
            counts["unreadable"] += 1
            rows.append(
                f'<tr><td>{esc(td.id)}</td><td colspan="7">unreadable: {esc(exc)}</td></tr>'
            )
            continue
        status = _status_of(td, task)
        counts[status] += 1
        dedup = task.dedup
        cluster = _task_link(dedup.cluster) if dedup and dedup.cluster != td.id else ""
        pr = f"#{task.pr_number}" if task.pr_number is not None else task.pr_id
        rows.append(
            f"<tr><td>{_task_link(td.id)}</td><td>{esc(task.title)}</td>"
            f"<td>{esc(task.framework)}</td>"
            f"<td>{_ext(task.pr_url, esc(pr))}</td><td>{esc(task.task_type.type)}</td>"
            f"<td>{task.difficulty.level}</td><td>{_badge(status)}</td><td>{cluster}</td></tr>"
        )
    order = [*map(str, CurationStatus), "unreadable"]
    summary = " · ".join(f"{_badge(s)} {counts[s]}" for s in order if counts[s])
    body = (
        f"<h1>Tasks to review</h1><p>{sum(counts.values())} tasks in <code>{esc(root)}</code>"
        f"{' — ' + summary if summary else ''}</p>"
        "<table><thead><tr><th>task</th><th>title</th><th>framework</th><th>PR</th><th>type</th>"
        "<th>difficulty</th><th>status</th><th>dedup cluster</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return render_page("Tasks to review", body, nonce)


def side_by_side(kernel: TargetKernel) -> str:
    """The old and new kernel in two aligned columns, changed lines highlighted."""
    old = (kernel.before_src or "").splitlines()
    new = (kernel.after_src or "").splitlines()
    o0 = kernel.span_before[0] if kernel.span_before else 1
    n0 = kernel.span_after[0] if kernel.span_after else 1
    rows = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        for i, j in zip_longest(range(i1, i2), range(j1, j2)):
            o_cls = "gap" if i is None else ("" if tag == "equal" else "del")
            n_cls = "gap" if j is None else ("" if tag == "equal" else "add")
            rows.append(
                f'<tr><td class="ln">{"" if i is None else o0 + i}</td>'
                f'<td class="old {o_cls}">{"" if i is None else esc(old[i])}</td>'
                f'<td class="ln ln2">{"" if j is None else n0 + j}</td>'
                f'<td class="new {n_cls}">{"" if j is None else esc(new[j])}</td></tr>'
            )
    old_head = "none: the kernel is new" if kernel.before_src is None else kernel.old_file
    new_head = "none: the kernel is deleted" if kernel.after_src is None else kernel.file
    return (
        '<table class="sbs"><colgroup><col class="ln"><col><col class="ln"><col></colgroup>'
        f"<thead><tr><th></th><th>OLD (base): {esc(old_head or kernel.file)}</th>"
        f"<th></th><th>NEW (gold): {esc(new_head)}</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _kernel_section(n: int, k: TargetKernel) -> str:
    facts = [
        ("file", f"<code>{esc(k.file)}</code>"),
        ("change", f"<b>{esc(k.change)}</b> ({esc(k.kind)}, {esc(k.role)})"),
    ]
    if k.old_file and k.old_file != k.file:
        facts.append(("old file", f"<code>{esc(k.old_file)}</code>"))
    if k.wrappers:
        facts.append(("wrappers", ", ".join(f"<code>{esc(w)}</code>" for w in k.wrappers)))
    if k.autotune_configs_before != k.autotune_configs_after:
        facts.append(("autotune", "configs changed"))
    dl = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return (
        f'<section class="kernel" id="kernel-{n}"><h3>{esc(k.name)}</h3>'
        f'<dl class="meta">{dl}</dl>{side_by_side(k)}</section>'
    )


def _context_section(context: dict[str, FileContext]) -> str:
    if not context:
        return '<p class="muted">no context</p>'
    out = []
    for path, fc in context.items():
        items = []
        for item in (*fc.functions, *fc.classes):
            items.append(
                f'<details class="item"><summary><code>{esc(item.name)}</code> '
                f'<span class="muted">{esc(item.kind)}, lines {item.start_line}-'
                f"{item.end_line}: {esc(item.why)}</span></summary>"
                f"<pre>{esc(item.source)}</pre></details>"
            )
        imports = f"<pre>{esc(chr(10).join(fc.imports))}</pre>" if fc.imports else ""
        out.append(
            f"<details><summary><code>{esc(path)}</code> <span class='muted'>"
            f"{len(fc.functions)} functions, {len(fc.classes)} classes, "
            f"{len(fc.imports)} imports</span></summary>{imports}{''.join(items)}</details>"
        )
    return "".join(out)


def render_task(td: TaskDir, ids: list[str], nonce: str) -> str:
    """One task's review page: PR, kernels side by side, context, tests, and the editor."""
    task = td.load_task()
    rec = td.load_curation()
    status = _status_of(td, task)
    at = ids.index(td.id) if td.id in ids else -1
    prev = _task_link(ids[at - 1]) if at > 0 else '<span class="muted">first</span>'
    nxt = _task_link(ids[at + 1]) if 0 <= at < len(ids) - 1 else '<span class="muted">last</span>'
    pr = f"#{task.pr_number}" if task.pr_number is not None else task.pr_id
    labels = "".join(f'<span class="tag">{esc(x)}</span>' for x in task.labels) or "none"
    meta = [
        ("task", f"<code>{esc(task.task_id)}</code> ({esc(task.framework)}, {esc(task.repo)})"),
        ("pull request", _ext(task.pr_url, esc(task.pr_url or pr))),
        ("merged at", esc(task.merged_at)),
        ("labels", labels),
        (
            "base commit",
            _commit(task, task.base_commit) + (f" ({esc(task.base_tag)})" if task.base_tag else ""),
        ),
        ("merge commit", _commit(task, task.merge_commit)),
    ]
    if d := task.dedup:
        near = _task_link(d.nearest) if d.nearest else "none"
        sim = f"{d.similarity:.2f} by {esc(d.method)}"
        meta.append(("dedup", f"cluster {_task_link(d.cluster)}, nearest {near} ({sim})"))
    note = [f"reason: {rec.reason}"] if rec.reason else []
    note += ["requirement edited"] if rec.requirement_edited else []
    note += [f"saved {rec.updated_at}"] if rec.updated_at else []
    t = task.tests
    outcomes = "".join(
        f"<h3>{name}</h3>{_items(v)}"
        for name, v in (("fail_to_pass", t.fail_to_pass), ("pass_to_pass", t.pass_to_pass))
        if v
    )
    features = "".join(
        f"<tr><td>{esc(k)}</td><td>{v:g}</td></tr>"
        for k, v in sorted(task.difficulty.features.items())
    )
    files = "".join(
        f"<tr><td><code>{esc(f.path)}</code></td><td>{esc(f.status)}</td>"
        f"<td>+{f.additions if f.additions is not None else '?'} "
        f"-{f.deletions if f.deletions is not None else '?'}</td>"
        f"<td>{'test' if f.is_test else ''}</td></tr>"
        for f in task.files_changed
    )
    body = f"""
<nav><a href="/">all tasks</a><span>prev: {prev}</span><span>next: {nxt}</span>
<span class="grow"></span><span class="muted">{at + 1} of {len(ids)}</span></nav>
<h1>{esc(task.title)}</h1>
<dl class="meta">{"".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in meta)}</dl>
<h2>Requirement and decision</h2>
<div class="panel" id="curation" data-task="{esc(td.id)}">
<p class="muted">Origin: {esc(task.requirement_origin)}. The model sees this text, not the PR.</p>
<textarea id="requirement" spellcheck="true">\n{esc(td.read_requirement())}</textarea>
<div class="actions"><button id="save" type="button">Save requirement</button>
<input id="reason" type="text" placeholder="reason (required to reject)">
<button id="approve" type="button">Approve</button><button id="reject" type="button">Reject</button>
<button id="pending" type="button">Back to pending</button></div>
<p id="status">Status: <span id="status-badge" class="badge {esc(status)}">{esc(status)}</span>
<span id="status-note" class="muted">{esc(" · ".join(note))}</span></p>
<p id="error" role="alert"></p></div>
<h2>Target kernels ({len(task.kernels)})</h2>
{"".join(_kernel_section(n, k) for n, k in enumerate(task.kernels))}
<h2>Pull request description</h2>
<pre class="prose" id="pr-body">{esc(task.body) or '<span class="muted">(empty)</span>'}</pre>
<h2>Task type: {esc(task.task_type.type)}</h2>{_items(task.task_type.evidence, "no evidence")}
<h2>Difficulty: {task.difficulty.level} / 5
 <span class="muted">(score {task.difficulty.score:g})</span></h2>
<table><tbody>{features}</tbody></table>
<h2>Tests</h2><dl class="meta"><dt>command</dt><dd><code>{esc(t.command)}</code></dd></dl>
<h3>changed in the PR</h3>{_items(t.changed_in_pr)}
<h3>selected existing</h3>{_items(t.selected_existing)}{outcomes}
<h2>Engineering context</h2>{_context_section(task.context)}
<h2>Files changed ({len(task.files_changed)})</h2><table><tbody>{files}</tbody></table>
"""
    return render_page(f"{task.task_id}: {task.title}", body, nonce, script=True)
