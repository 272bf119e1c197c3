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
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
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
    r"\b(printenv|env)\s*\||os\.environ\b|process\.env\b|base64\s.*\|\s*(curl|nc)|"
    r"(ANTHROPIC|OPENAI|AWS|GITHUB)_[A-Z_]*(KEY|TOKEN|SECRET)",
)
_SECRET_FILE = re.compile(
    r"(^|/)(\.env(\.[\w-]+)?|id_rsa|id_ecdsa|id_ed25519|[^/]+\.pem|[^/]+\.p12|\.npmrc|\.pypirc|\.netrc|credentials\.json)$"
)
_BROAD_TOOLS = re.compile(
    r"^(\*|Bash|Bash\(\*\)|Bash\(\s*\*?\s*:\s*\*\s*\)|Shell|Execute|Write)$", re.I
)


def secret_files(paths: Iterable[str]) -> list[str]:
    """The paths that look like credential or key files (``.env``, ``id_rsa``, ``*.pem``…)."""
    return sorted(p for p in paths if _SECRET_FILE.search(p))


def _finding(rule: str, severity: str, path: str, line: int, message: str) -> dict[str, Any]:
    return {"rule": rule, "severity": severity, "path": path, "line": line, "message": message}


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
        if path.endswith((".md", ".markdown", ".txt", ".html")) and (
            m := _HTML_COMMENT.search(text)
        ):
            findings.append(
                _finding(
                    "hidden-text",
                    "medium",
                    path,
                    _line_of(text, m.start()),
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
        if m := _EXFIL.search(text):
            findings.append(
                _finding(
                    "exfiltration",
                    "high",
                    path,
                    _line_of(text, m.start()),
                    f"reads secrets or credentials: {m.group(0)[:60]!r}",
                )
            )
    tools = frontmatter.get("allowed-tools")
    entries = tools.split() if isinstance(tools, str) else tools if isinstance(tools, list) else []
    for tool in entries:
        if isinstance(tool, str) and _BROAD_TOOLS.match(tool.strip()):
            findings.append(
                _finding(
                    "broad-tools",
                    "high",
                    "SKILL.md",
                    0,
                    f"allowed-tools grants {tool!r} without restriction",
                )
            )
    risky = any(f["severity"] in ("high", "medium") for f in findings)
    return {
        "verdict": "review" if risky or scripts else "clean",
        "findings": findings,
        "scripts": scripts,
    }
