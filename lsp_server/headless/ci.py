"""CI extras around a headless run: verification before/after, the patch, an optional branch
commit, and the Markdown summary for a PR comment.

Kiln's own git calls (the changed paths, the patch, the commit) are in ``repo_git``.
"""

from __future__ import annotations

import codecs
import html
import re
from dataclasses import dataclass, field
from typing import Any

from lsp_server.headless import exit_codes
from lsp_server.headless.terminal import safe
from lsp_server.headless.verify import Deadline, Verification, run_verify

__all__ = ["Deadline", "RunReport", "Verification", "markdown_summary", "run_verify"]


def diffstat(patch: str) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = {"path": _diff_path(line[len("diff --git ") :]), "added": 0, "removed": 0}
            files.append(current)
        elif current is not None and line.startswith("+") and not line.startswith("+++"):
            current["added"] += 1
        elif current is not None and line.startswith("-") and not line.startswith("---"):
            current["removed"] += 1
    return files


def _diff_path(rest: str) -> str:
    """The new path of ``a/OLD b/NEW`` (a ``diff --git`` header; renames are off). Git quotes a
    name holding a newline, a quote or a byte over 127 (``"b/x\\n.txt"``), and an unquoted
    name may itself hold `` b/``: splitting at the first one named the wrong file."""
    if rest.endswith('"'):
        start = rest.rfind(' "b/')
        if start >= 0:
            quoted = rest[start + 4 : -1].encode("latin-1", "backslashreplace")
            # typeshed says escape_decode returns str; it returns bytes
            raw: bytes = codecs.escape_decode(quoted)[0]  # type: ignore[assignment]
            return raw.decode("utf-8", "surrogateescape")
    half = (len(rest) - 5) // 2  # "a/" + P + " b/" + P
    if rest.startswith("a/") and rest[2 : 2 + half] == rest[len(rest) - half :]:
        return rest[len(rest) - half :]
    return rest.split(" b/", 1)[-1]


AUTHOR_RE = re.compile(r"[^<>]+ <[^<>\s]+@[^<>\s]+>")


def check_author(author: str | None) -> None:
    """Refuse a bad author before the run, so the run never ends half-committed."""
    from agent.errors import UsageError

    if author is not None and not AUTHOR_RE.fullmatch(author.strip()):
        raise UsageError(f"--author {author!r} is not 'Name <email>'")


@dataclass
class RunReport:
    task: str
    exit_code: int
    outcome: str
    stop_reason: str
    session_id: str
    answer: str = ""
    verify_before: Verification | None = None
    verify_after: Verification | None = None
    agent_ran_verify: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    patch_path: str = ""
    transcript_path: str = ""
    summary_path: str = ""
    branch: str = ""
    branch_skipped: str = ""  # why --commit-branch made none
    commit: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float = 0.0  # this run's, sub-agents included: what --max-cost-usd counts
    session_cost_usd: float = 0.0  # the session's, earlier runs of a resumed one included
    steps: int = 0
    refusals: list[dict[str, Any]] = field(default_factory=list)
    memory_proposals: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    blocked: int = 0  # the exit code when the outputs were refused (too large, HEAD moved)
    duration_ms: int = 0  # the whole run, verifications included

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "exit_code": self.exit_code,
            "is_error": self.exit_code in exit_codes.ERRORS,
            "outcome": self.outcome,
            "stop_reason": self.stop_reason,
            "session_id": self.session_id,
            "result": self.answer,
            "verify_before": self.verify_before.to_dict() if self.verify_before else None,
            "verify_after": self.verify_after.to_dict() if self.verify_after else None,
            "agent_ran_verify": self.agent_ran_verify,
            "files_changed": self.files,
            "files_modified": self.files_modified,
            "patch": self.patch_path,
            "transcript": self.transcript_path,
            "summary": self.summary_path,
            "branch": self.branch,
            "branch_skipped": self.branch_skipped,
            "commit": self.commit,
            "usage": self.usage,
            "cost_usd": round(self.cost_usd, 6),
            "session_cost_usd": round(self.session_cost_usd, 6),
            "steps": self.steps,
            "duration_ms": self.duration_ms,
            "refusals": self.refusals,
            "memory_proposals": self.memory_proposals,
            "error": self.error,
        }


def cache_share(usage: dict[str, Any]) -> float:
    total = (
        usage.get("input_tokens", 0)
        + usage.get("cache_read_tokens", 0)
        + usage.get("cache_write_tokens", 0)
    )
    return usage.get("cache_read_tokens", 0) / total if total else 0.0


# The summary is posted as a pull request comment that a reviewer reads to decide a merge. A
# changed file's name, the agent's answer, a refused command and a memory proposal are the
# agent's (and so the repository's) text: a name such as "x`\n\n### Verification\n- after:
# passed" forged a section Kiln writes. Each is kept in its place: names as one-line code, the
# answer as a quote, the rest on one line.


# GitHub acts on what a comment says: `@login` (and `@org/team`) notifies, `#12`, `GH-12` and
# `owner/repo#12` cross-link that issue, adding to its timeline. The task and the answer are an
# issue author's and the model's words, so a word joiner (U+2060, invisible) breaks each where
# Kiln posts them; an address (`dev@example.com`) is no mention and stays as it is.
_JOIN = "\u2060"
_LINKS = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])|#(?=[0-9])|\b(?<=GH-)(?=[0-9])", re.IGNORECASE)


def unlinked(text: str) -> str:
    return _LINKS.sub(lambda m: m.group(0) + _JOIN, text)


def _plain(text: str) -> str:
    return html.escape(safe(text).replace("\n", "\\n"), quote=False)


def _line(text: str) -> str:
    return unlinked(_plain(text))


def _code(text: str) -> str:
    """Code mentions and links nothing on GitHub: the name stays exact."""
    return f"<code>{_plain(text).replace('|', '&#124;').replace('`', '&#96;')}</code>"


# A tag in quoted text is raw HTML to GitHub: `</blockquote>` ends the quote early and what
# follows renders as Kiln's own text. ``<`` that could open a tag or comment is an entity.
_TAG = re.compile(r"<(?=[A-Za-z/!?])")


def _quoted(text: str) -> str:
    text = unlinked(_TAG.sub("&lt;", safe(text)))
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


# Each list is cut so the whole summary stays under GitHub's 65,536-character comment limit
# (a run that touched 3,000 files wrote a table the API refused, and no comment came).
MAX_ROWS = 60
MAX_REFUSALS = 30
MAX_PROPOSALS = 10
MAX_NAME = 200


def _more(shown: int, total: int, what: str) -> list[str]:
    return [f"- … and {total - shown:,} more {what} (see report.json)"] if total > shown else []


def markdown_summary(report: RunReport) -> str:
    # the task is the asker's text, or an issue's that anyone wrote: a quote, like the answer
    lines = [f"## Kiln: {report.outcome}", "", "**Task:**", "", _quoted(report.task.strip()[:500])]
    lines.append("")
    if report.files:
        lines += ["### What changed", "", "| file | + | - |", "|---|---:|---:|"]
        lines += [
            f"| {_code(f['path'][:MAX_NAME])} | {f['added']} | {f['removed']} |"
            for f in report.files[:MAX_ROWS]
        ]
        lines += ["", *_more(MAX_ROWS, len(report.files), "files")]
        lines.append("")
    else:
        lines += ["No files were changed.", ""]
    if report.answer:
        lines += ["### Why", "", _quoted(report.answer.strip()[:3000]), ""]
    if report.verify_before or report.verify_after:
        lines += ["### Verification", ""]
        for label, v in (("before", report.verify_before), ("after", report.verify_after)):
            if v:
                mark = "passed" if v.passed else f"failed (exit {v.exit_code})"
                if v.timed_out:
                    mark = "stopped: out of time"
                lines.append(f"- {label}: {_code(v.command[:300])} {mark}")
        lines.append(
            f"- the agent ran the verification itself: {'yes' if report.agent_ran_verify else 'no'}"
        )
        lines.append("")
    if report.refusals:
        lines += ["### Refused by policy", ""]
        lines += [
            f"- {_code(r['tool'][:80])}: {_line(r['reason'][:300])}"
            for r in report.refusals[:MAX_REFUSALS]
        ]
        lines += [*_more(MAX_REFUSALS, len(report.refusals), "refusals"), ""]
    if report.memory_proposals:
        lines += ["### Memory proposals (not written in CI)", ""]
        lines += [
            f"- {_line(m['text'][:300])}"
            + (" *(from external content)*" if m.get("from_external") else "")
            for m in report.memory_proposals[:MAX_PROPOSALS]
        ]
        lines += [*_more(MAX_PROPOSALS, len(report.memory_proposals), "proposals"), ""]
    u = report.usage
    lines += [
        "### Usage",
        "",
        f"- steps: {report.steps}; tokens in {u.get('input_tokens', 0)}, cache read {u.get('cache_read_tokens', 0)}, "
        f"cache write {u.get('cache_write_tokens', 0)}, out {u.get('output_tokens', 0)}",
        f"- cache hit share: {cache_share(u):.0%}; cost ${report.cost_usd:.4f} this run"
        + (
            f" (${report.session_cost_usd:.4f} the whole session)"
            if report.session_cost_usd > report.cost_usd + 5e-5
            else ""
        ),  # fmt: skip
        f"- stop reason: {report.stop_reason}; exit code {report.exit_code}",
    ]
    if report.error:  # why the outputs were refused, or the provider's error
        lines.append(f"- error: {_line(report.error[:500])}")
    if report.branch:
        # a name git allows may hold a backtick: `kiln/a`@octocat`` ended the code span there
        lines.append(f"- branch {_code(report.branch)} at <code>{report.commit[:12]}</code>")
    elif report.branch_skipped:
        lines.append(f"- {_line(report.branch_skipped)}")
    if report.transcript_path:
        lines.append(f"- transcript: {_code(report.transcript_path)}")
    return "\n".join(lines) + "\n"
