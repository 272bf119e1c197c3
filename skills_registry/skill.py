"""One skill loaded for use: lenient where the strict validator is not.

At run time a slightly-off skill (a long description, a name that differs from its folder, an
unknown field) is still useful, so ``load_skill`` keeps it and records warnings; it refuses only
what cannot work: no SKILL.md, no parseable frontmatter, or no description to show the model.
It also renders level 2 of progressive disclosure: the body wrapped as a skill block, with the
list of bundled files the agent may read next (level 3).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape, unescape
from pathlib import Path
from typing import Any

from kiln_errors.shown import cut
from skills_registry import json_limits
from skills_registry.errors import SkillInvalid
from skills_registry.lookalike import letter_shapes, unseen_in
from skills_registry.mcp_config import printable
from skills_registry.spec import (
    SKILL_FILE,
    allowed_tools_problems,
    metadata_problems,
    name_problems,
    normalize_name,
    parse_frontmatter,
    read_skill_text,
    validate_frontmatter,
)

# A registry install marks its skills without touching SKILL.md (which is hashed): the
# installer's ``.kiln-install.json`` (see ``archive.MARKER_FILE``), an ``.kiln-origin.json``
# whose "origin" is not local, or a ``kiln-origin`` metadata key whose value is not "local".
INSTALL_MARKER = ".kiln-install.json"
ORIGIN_MARKER = ".kiln-origin.json"
ORIGIN_METADATA_KEY = "kiln-origin"
MAX_LISTED_FILES = 200
MAX_FILE_DEPTH = 4
_SKIP_DIRS = {"__pycache__", "node_modules", ".git", ".venv", "venv"}


def parse_allowed_tools(value: Any) -> list[str]:
    """Split ``allowed-tools`` into entries; spaces (and commas: ``Read, Write``) inside
    parentheses stay inside an entry.

    ``"Bash(git add:*) Read"`` is two tools, not three: Claude-style patterns carry arguments.
    The review and the install's grant read the list with this too, so a granted entry is
    the entry the agent sees.
    """
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    if not isinstance(value, str):
        return []
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        if (char.isspace() or char == ",") and depth == 0:
            if current:
                entries.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        entries.append("".join(current))
    return entries


# The wrapper's closing tag in any spelling a model would still read as one: any case, spaces, a
# hyphen or a space for the underscore, a fullwidth or small "<", a backslash around the "/", any
# run of characters no one sees (zero-width, bidi, control, combining: ``lookalike.unseen_in``)
# inside the name, after it or around the "/". It is matched in the letters' shapes
# (``lookalike.letter_shapes``), where look-alike letters are Latin ones.
# Characters that read as "<" and as "/" (Unicode's confusables of each, UTS #39): a plain "<"
# with a division or fraction slash (``<∕external_content>``), a modifier arrowhead or an angle
# bracket for the "<" (``˂/…``, ``‹/…``, ``〈/…``).
_OPENS = "<\uff1c\ufe64\u02c2\u02f1\u1438\u16b2\u2039\u2329\u276e\u27e8\u3008"
_SLASHES = "/\uff0f\u2044\u2215\u2571\u27cb\u29f8\u2cc6\u2f03\u3033\u31d3\u4e3f\u1735"


@lru_cache(maxsize=256)
def closing_tag(unseen: str = "") -> re.Pattern[str]:
    """The closing tag's pattern for a text holding the characters ``unseen`` that no one sees.
    Each run of them is skipped whole, apart from the few visible characters (punctuation,
    spaces) allowed between two letters, so a match takes linear time."""
    skip = f"[{re.escape(unseen)}]*" if unseen else ""
    hidden = re.escape(unseen)

    def spelled(word: str) -> str:
        return (skip + rf"(?:[^\w>{hidden}]{skip}){{0,3}}").join(word)

    around = rf"[\s\\{hidden}]*"  # spaces, a backslash (``<\/…``, as JSON writes it)
    return re.compile(
        rf"[{_OPENS}]({around}[{_SLASHES}]{around}{spelled('external')}"
        rf"{skip}(?:[^a-z0-9>{hidden}]{skip}){{0,8}}{spelled('content')})",
        re.IGNORECASE,
    )


# What a model decodes as it reads: HTML character references (named, decimal, hex, with or
# without ";"), JSON, JavaScript and Python escapes, URL encoding. ``&lt;/external_content&gt;``
# or ``\u003c/external_content>`` (how Go's JSON writes the tag) reads as the tag itself.
_ENCODED = re.compile(
    r"&(?:#[xX][0-9a-fA-F]{1,8}|#[0-9]{1,10}|[a-zA-Z][a-zA-Z0-9]{1,31});?"
    r"|\\(?:u\{[0-9a-fA-F]{1,8}\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|/)"
    r"|%[0-9a-fA-F]{2}"
)
_DECODINGS = 3  # "&amp;lt;", "%253C": encoded again, decoded again
# What the "<" of a closing tag becomes: not "<" in any of the encodings above ("&lt;" is one).
INERT_OPEN = "["
Span = tuple[int, int]
Token = tuple[int, int, int, int]  # decoded start and end, then start and end as written


def defused(text: str) -> str:
    """``text`` with the "<" of every closing tag of the wrapper written as ``[``, also one
    spelled in letters that read as Latin ones (``</ｅｘｔｅｒｎａｌ_content>``, a Cyrillic ``е``),
    with characters no one sees inside (``</external\\u200b_content>``, ``<\\x1b/…``) or
    encoded (``&lt;/external_content&gt;``, ``\\u003c/…``, ``%3C/…``): the tag is found in the
    decoded letters' shapes and its "<", as written, replaced; the rest of the text is kept."""
    views: list[tuple[str, list[Token]]] = [(text, [])]
    while len(views) <= _DECODINGS and _ENCODED.search(views[-1][0]):
        decoded, tokens = _decode(views[-1][0])
        if not tokens:
            break
        views.append((decoded, tokens))
    shapes = letter_shapes(views[-1][0])
    spans: list[Span] = []
    for match in closing_tag(unseen_in(shapes)).finditer(shapes):
        span = (match.start(), match.start() + 1)
        for _, tokens in reversed(views[1:]):  # back through each decoding to the text
            span = (_origin(tokens, span[0])[0], _origin(tokens, span[1] - 1)[1])
        if not spans or span[0] >= spans[-1][1]:
            spans.append(span)
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], INERT_OPEN]
        last = end
    return "".join(pieces) + text[last:]


def _decode(text: str) -> tuple[str, list[Token]]:
    """``text`` with each encoded character decoded, and per decoded one (decoded start, decoded
    end, start, end): where in ``text`` each character of the result came from."""
    tokens: list[Token] = []
    pieces: list[str] = []
    last = shift = 0
    for m in _ENCODED.finditer(text):
        char = _decoded_char(m.group(0))
        if char is None:
            continue
        pieces += [text[last : m.start()], char]
        at = m.start() + shift
        tokens.append((at, at + 1, m.start(), m.end()))
        shift += 1 - (m.end() - m.start())
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces), tokens


def _decoded_char(token: str) -> str | None:
    """The one character ``token`` encodes, or None (an unknown entity, a code point past
    Unicode)."""
    if token[0] == "&":
        char = unescape(token)
        return char if len(char) == 1 else None
    if token[0] == "%":
        return chr(int(token[1:], 16))
    if token == "\\/":
        return "/"
    code = int(token[2:].strip("{}"), 16)
    return chr(code) if code <= 0x10FFFF else None


def _origin(tokens: list[Token], at: int) -> Span:
    """Where the decoded character at ``at`` came from: its token, or the character itself."""
    i = bisect_right(tokens, at, key=lambda t: t[0]) - 1
    if i < 0:
        return at, at + 1
    start, end, origin, origin_end = tokens[i]
    if at < end:
        return origin, origin_end
    at += origin_end - end
    return at, at + 1


@dataclass
class Skill:
    name: str
    description: str
    path: Path
    body: str
    frontmatter: dict[str, Any]
    allowed_tools: list[str] = field(default_factory=list)
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    third_party: bool = False
    # Where discovery found it: "project", "user" or "" when loaded directly.
    scope: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def skill_md(self) -> Path:
        return self.path / SKILL_FILE

    def files(self) -> list[str]:
        """Bundled files (POSIX paths relative to the skill), SKILL.md and hidden files excluded.

        Bounded in depth and count so a huge asset folder cannot flood the context; symlinks
        are listed only when they stay inside the skill folder.
        """
        root = self.path.resolve()
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            depth = len(here.relative_to(root).parts)
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not d.startswith(".") and d not in _SKIP_DIRS and depth < MAX_FILE_DEPTH
            )
            for filename in sorted(filenames):
                if filename.startswith(".") or (depth == 0 and filename == SKILL_FILE):
                    continue
                full = here / filename
                if full.is_symlink() and not full.resolve().is_relative_to(root):
                    continue
                found.append(full.relative_to(root).as_posix())
                if len(found) >= MAX_LISTED_FILES:
                    return found
        return found

    def resolve_file(self, relative: str) -> Path:
        """A bundled file by relative path; refuses anything resolving outside the skill."""
        root = self.path.resolve()
        target = (root / relative).resolve()
        if not target.is_relative_to(root) or target == root:
            raise SkillInvalid(
                f"{cut(relative)!r} is outside skill '{self.name}'",
                hint="paths are relative to the skill folder, e.g. references/guide.md",
            )
        if not target.is_file():
            raise SkillInvalid(f"skill '{self.name}' has no file {cut(relative)!r}")
        return target

    def render(self, root: Path | None = None) -> str:
        """Level 2: the body as a ``<skill>`` block, third-party bodies marked as external.

        ``path`` is shown relative to ``root`` (the workspace) when the skill lives inside it,
        so the agent's file tools can open the listed files directly.
        """
        files = self.files()
        shown = self.path
        if root is not None and self.path.is_relative_to(Path(root).resolve()):
            shown = self.path.relative_to(Path(root).resolve())
        # A folder name may hold a line break (a hand-made or copied folder; discovery skips
        # them, `load_skill` does not): spelled out, it cannot start a forged header line.
        attrs = (
            f'name="{escape(printable(self.name))}" path="{escape(printable(shown.as_posix()))}"'
        )
        if self.third_party:
            attrs += ' third_party="true"'
        listing = "<skill_files>\n" + "\n".join(files) + "\n</skill_files>\n" if files else ""
        body = self.body.strip("\n")
        if self.third_party:
            # The publisher's text, file names included (a name may hold a new line and any
            # words); a closing tag inside must not end the wrapper early.
            inner = defused(listing + body)
            return (
                f'<skill {attrs}>\n<external_content source="skill:{self.name}">\n{inner}\n'
                "</external_content>\n</skill>"
            )
        return f"<skill {attrs}>\n{listing}{body}\n</skill>"


def _is_marked_third_party(folder: Path, metadata: dict[str, str]) -> bool:
    origin = metadata.get(ORIGIN_METADATA_KEY)
    if origin is not None and origin.strip().lower() not in ("", "local", "project"):
        return True
    if (folder / INSTALL_MARKER).is_file():
        return True
    marker = folder / ORIGIN_MARKER
    if not marker.is_file():
        return False
    try:
        data = json_limits.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable marker: err on the side of treating it as external
    return not (isinstance(data, dict) and data.get("origin") in ("local", "project"))


def load_skill(path: Path | str, *, third_party: bool = False, scope: str = "") -> Skill:
    """Load a skill folder (or its SKILL.md) leniently; raise ``SkillInvalid`` if unusable."""
    folder = Path(path)
    if folder.name == SKILL_FILE and folder.is_file():
        folder = folder.parent
    skill_md = folder / SKILL_FILE
    if not skill_md.is_file():
        raise SkillInvalid(f"no {SKILL_FILE} in {folder}")
    data, body = parse_frontmatter(read_skill_text(skill_md))
    warnings = validate_frontmatter(data, folder.resolve().name)

    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillInvalid(
            f"{skill_md}: 'description' is missing or empty; the model could not choose it"
        )
    name_value = data.get("name")
    if isinstance(name_value, str) and not name_problems(name_value):
        name = normalize_name(name_value)
    else:
        name = normalize_name(folder.resolve().name)  # the folder is the next best identity
        if name_problems(name):
            raise SkillInvalid(f"{skill_md}: no usable name in the frontmatter or the folder name")

    metadata_raw = data.get("metadata")
    metadata: dict[str, str] = {}
    if isinstance(metadata_raw, dict):
        # Lenient: stringify scalar values ("1.0" typed as a number is common); drop the rest.
        metadata = {
            str(k): str(v)
            for k, v in metadata_raw.items()
            if isinstance(v, str | int | float | bool)
        }
    elif metadata_raw is not None:
        warnings.extend(m for m in metadata_problems(metadata_raw) if m not in warnings)

    tools_raw = data.get("allowed-tools")
    allowed = parse_allowed_tools(tools_raw) if not allowed_tools_problems(tools_raw) else []
    license_value = data.get("license")
    compatibility = data.get("compatibility")
    return Skill(
        name=name,
        description=" ".join(description.split()),
        path=folder.resolve(),
        body=body,
        frontmatter=data,
        allowed_tools=allowed,
        license=license_value if isinstance(license_value, str) else None,
        compatibility=compatibility if isinstance(compatibility, str) else None,
        metadata=metadata,
        third_party=third_party or _is_marked_third_party(folder, metadata),
        scope=scope,
        warnings=warnings,
    )
