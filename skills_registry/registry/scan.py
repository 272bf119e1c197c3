"""A static scan of a skill at publish time: what a reviewer should look at before installing.

It does not decide; it points. Findings cover bundled scripts, files that look like secrets, network and exfiltration
patterns, text hidden from a human reader (zero-width and bidi characters, HTML comments),
prompt-injection phrases, and ``allowed-tools`` broad enough to run anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

SCRIPT_SUFFIXES = {
    ".py",
    ".sh",
    ".bash",
    ".zsh",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".rb",
    ".pl",
    ".ps1",
    ".bat",
    ".cmd",
    ".php",
    ".lua",
}
_HIDDEN_CHARS = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_INJECTION = re.compile(
    r"\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|preceding)\s+"
    r"(instructions|prompts?|rules|directions)|\byou\s+are\s+now\s+(in\s+)?(developer|dan|jailbreak)",
    re.I,
)
_NETWORK = re.compile(
    r"\b(curl|wget|nc|ncat|netcat|Invoke-WebRequest|Invoke-RestMethod)\s|"
    r"\b(requests|httpx|urllib\.request|urllib3|aiohttp|socket)\.|\bfetch\(|XMLHttpRequest|"
    r"https?://(?!(?:www\.)?(?:example\.com|localhost|127\.0\.0\.1))[\w.-]+",
)
_EXFIL = re.compile(
    r"~/\.ssh|\.ssh/id_|\.aws/credentials|\.netrc|\.git-credentials|/etc/passwd|"
    r"\b(printenv|env)\s*\||os\.environ\b|process\.env\b"
)
# Two more exfiltration patterns, each found by a scan that reads the text once (``_piped``,
# ``_key_name``): as regular expressions (``base64\s.*\|\s*(curl|nc)`` and
# ``(ANTHROPIC|…)_[A-Z_]*(KEY|…)``) every start re-read the rest of its line or word, so
# ``base64 `` or ``AWS_`` repeated through a file took time growing with the square of its size
# (hours for a few megabytes, holding the registry's interpreter) at publish and at install.
_BASE64 = re.compile(r"base64\s")
_PIPE_TO_NET = re.compile(r"\|\s*(curl|nc)")
_KEY_PREFIX = re.compile(r"(ANTHROPIC|OPENAI|AWS|GITHUB)_")
_KEY_WORD = re.compile(r"[A-Z_]*")
_KEY_SUFFIXES = ("KEY", "TOKEN", "SECRET")
_SECRET_FILE = re.compile(
    r"(^|/)(\.env(\.[\w-]+)?|id_rsa|id_ecdsa|id_ed25519|[^/]+\.pem|[^/]+\.p12|\.npmrc|\.pypirc|\.netrc|credentials\.json)$"
)
_BROAD_TOOLS = frozenset(["*", "bash", "bash(*)", "shell", "execute", "write"])


def _broad_grant(tool: str) -> str | None:
    """The grant ``tool`` names when it runs anything (``Bash``, ``*``, ``Bash(*:*)`` with any
    spaces inside the parentheses), case folded; None for a restricted one (``Bash(git:*)``).
    Compared as text: the regular expression it replaces took time growing with the square of
    the spaces inside the parentheses (half an hour for a megabyte-long list item)."""
    grant = tool.strip().casefold()
    if grant in _BROAD_TOOLS:
        return grant
    if grant.startswith("bash(") and grant.endswith(")"):
        inside = "".join(grant[5:-1].split())
        return "bash(*:*)" if inside in ("*:*", ":*") else None
    return None


def secret_files(paths: Iterable[str]) -> list[str]:
    """The paths that look like credential or key files (``.env``, ``id_rsa``, ``*.pem``…)."""
    return sorted(p for p in paths if _SECRET_FILE.search(p))


def _finding(rule: str, severity: str, path: str, line: int, message: str) -> dict[str, Any]:
    return {"rule": rule, "severity": severity, "path": path, "line": line, "message": message}


def _html_comment(text: str) -> int | None:
    """Where the first complete ``<!-- … -->`` starts: found with two ``find`` calls, where
    ``<!--.*?-->`` tried every ``<!--`` against the rest of the text (quadratic)."""
    start = text.find("<!--")
    return start if start >= 0 and text.find("-->", start + 4) >= 0 else None


def _piped(text: str) -> tuple[int, str] | None:
    """``base64 … | curl`` (or ``| nc``), the pipe on the line ``base64`` ends on: where it
    starts and its text. A line whose first ``base64`` has no such pipe after it has none after
    a later one either, so the rest of that line is skipped."""
    pos = 0
    while (found := _BASE64.search(text, pos)) is not None:
        end = text.find("\n", found.end())
        end = len(text) if end < 0 else end
        bar = text.find("|", found.end(), end)
        while bar >= 0:
            if (pipe := _PIPE_TO_NET.match(text, bar)) is not None:
                return found.start(), text[found.start() : pipe.end()]
            bar = text.find("|", bar + 1, end)
        pos = end + 1
    return None


def _key_name(text: str) -> tuple[int, str] | None:
    """A variable named like a provider's secret (``AWS_SECRET_ACCESS_KEY``): a prefix, then
    capitals and ``_`` up to ``KEY``, ``TOKEN`` or ``SECRET``. A later prefix in the same word
    has less of it left, so one that fails skips the word."""
    pos = 0
    while (found := _KEY_PREFIX.search(text, pos)) is not None:
        end = _KEY_WORD.match(text, found.end()).end()  # type: ignore[union-attr]
        tail = text[found.end() : end]
        ends = [tail.rfind(suffix) + len(suffix) for suffix in _KEY_SUFFIXES if suffix in tail]
        if ends:
            return found.start(), text[found.start() : found.end() + max(ends)]
        pos = max(end, found.end())
    return None


def _exfiltration(text: str) -> tuple[int, str] | None:
    """The first exfiltration pattern in ``text``: where it starts and its text."""
    matches = [(m.start(), m.group(0)) for m in [_EXFIL.search(text)] if m is not None]
    matches += [found for found in (_piped(text), _key_name(text)) if found is not None]
    return min(matches, key=lambda found: found[0]) if matches else None


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def is_script(path: str, data: bytes, executable: bool = False) -> bool:
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return executable or suffix in SCRIPT_SUFFIXES or data.startswith(b"#!")


def scan_files(
    files: Mapping[str, bytes], frontmatter: Mapping[str, Any], executables: set[str] | None = None
) -> dict[str, Any]:
    """Return ``{"verdict": "clean"|"review", "findings": [...], "scripts": [...]}``."""
    executables = executables or set()
    findings: list[dict[str, Any]] = []
    scripts: list[str] = []
    for path in sorted(files):
        data = files[path]
        if _SECRET_FILE.search(path):
            findings.append(
                _finding(
                    "secret-file",
                    "high",
                    path,
                    0,
                    "looks like a credential or key file; was it published by mistake?",
                )
            )
        script = is_script(path, data, path in executables)
        if script:
            scripts.append(path)
            findings.append(
                _finding("script", "warning", path, 0, "bundled script: runs code on your machine")
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary assets are listed with their sizes, not scanned
        if (m := _HIDDEN_CHARS.search(text)) and not (m.start() == 0 and m.group() == "\ufeff"):
            findings.append(
                _finding(
                    "hidden-text",
                    "high",
                    path,
                    _line_of(text, m.start()),
                    f"invisible character U+{ord(m.group()):04X} can hide instructions",
                )
            )
        comment = (
            _html_comment(text) if path.endswith((".md", ".markdown", ".txt", ".html")) else None
        )
        if comment is not None:
            findings.append(
                _finding(
                    "hidden-text",
                    "medium",
                    path,
                    _line_of(text, comment),
                    "HTML comment is invisible when rendered but read by the model",
                )
            )
        if m := _INJECTION.search(text):
            findings.append(
                _finding(
                    "prompt-injection",
                    "high",
                    path,
                    _line_of(text, m.start()),
                    f"instruction-override phrase: {m.group(0)[:60]!r}",
                )
            )
        if script and (m := _NETWORK.search(text)):
            findings.append(
                _finding(
                    "network",
                    "medium",
                    path,
                    _line_of(text, m.start()),
                    f"network access: {m.group(0).strip()[:60]!r}",
                )
            )
        if exfil := _exfiltration(text):
            findings.append(
                _finding(
                    "exfiltration",
                    "high",
                    path,
                    _line_of(text, exfil[0]),
                    f"reads secrets or credentials: {exfil[1][:60]!r}",
                )
            )
    tools = frontmatter.get("allowed-tools")
    entries = tools.split() if isinstance(tools, str) else tools if isinstance(tools, list) else []
    seen: set[str] = set()  # one finding per grant: `* * * …` repeated is one `*`, not 450,000
    for tool in entries:
        grant = _broad_grant(tool) if isinstance(tool, str) else None
        if grant is None or grant in seen:
            continue
        seen.add(grant)
        findings.append(
            _finding(
                "broad-tools",
                "high",
                "SKILL.md",
                0,
                f"allowed-tools grants {tool.strip()[:60]!r} without restriction",
            )
        )
    risky = any(f["severity"] in ("high", "medium") for f in findings)
    return {
        "verdict": "review" if risky or scripts else "clean",
        "findings": findings,
        "scripts": scripts,
    }
