"""The agentskills.io SKILL.md format, checked strictly.

``validate_skill_dir`` is what authors and the registry run before publishing: it lists every
problem at once, in words precise enough to fix without reading the spec. Run-time loading is
lenient and lives in ``skill.py``; both share ``parse_frontmatter`` so they never disagree about
what the file says.

Name rule, following the reference validator (skills-ref): the name is NFKC-normalised, then
must be 1-64 characters of unicode letters or digits and single hyphens, with no uppercase,
no leading or trailing hyphen, and equal to the (NFKC-normalised) folder name.
"""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skills_registry.errors import SkillInvalid

if TYPE_CHECKING:
    import yaml

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
# A SKILL.md is instructions for a model; anything this large is a mistake or an attack.
MAX_SKILL_BYTES = 1024 * 1024
ALLOWED_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
# Frontmatter is a handful of fields; deeper nesting only serves to crash a recursive parser.
MAX_FRONTMATTER_DEPTH = 16


@functools.cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """Safe YAML that refuses duplicate keys (PyYAML silently keeps the last one). Made, and
    PyYAML imported, on the first frontmatter read: ~20 ms a `kiln run` in a workspace without
    a skill need not pay."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                )
            seen.add(key_node.value)
        return loader.construct_mapping(node, deep=deep)

    StrictLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
        construct_mapping,  # type: ignore[arg-type]
    )
    return StrictLoader


def read_skill_text(skill_md: Path) -> str:
    """Read SKILL.md as UTF-8 with a size cap; raise ``SkillInvalid`` with the reason."""
    try:
        size = skill_md.stat().st_size
    except OSError as exc:
        raise SkillInvalid(f"cannot read {skill_md}: {exc.strerror or exc}") from None
    if size > MAX_SKILL_BYTES:
        raise SkillInvalid(f"{SKILL_FILE} is {size} bytes; the limit is {MAX_SKILL_BYTES}")
    try:
        return skill_md.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillInvalid(f"{SKILL_FILE} is not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise SkillInvalid(f"cannot read {skill_md}: {exc.strerror or exc}") from None


def parse_frontmatter(text: str, max_bytes: int | None = None) -> tuple[dict[str, Any], str]:
    """Split SKILL.md text into (frontmatter mapping, Markdown body).

    Raises ``SkillInvalid`` when there is no ``---`` fenced block at the very top, when the YAML
    does not parse, or when it is not a mapping: without a mapping nothing else can be checked;
    and, given ``max_bytes``, when the YAML is longer, before it is parsed.
    """
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        raise SkillInvalid(
            f"{SKILL_FILE} must start with a '---' line opening the YAML frontmatter"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise SkillInvalid("frontmatter is not closed: add a '---' line after the YAML fields")
    raw = "".join(lines[1:end])
    if max_bytes is not None and len(raw.encode("utf-8", "surrogatepass")) > max_bytes:
        raise SkillInvalid(
            f"the frontmatter is {len(raw.encode('utf-8', 'surrogatepass'))} bytes; the limit is "
            f"{max_bytes} (it is a few short fields: move detail into the body)"
        )
    import yaml

    try:
        _check_shape(raw)
        data = yaml.load(raw, Loader=_strict_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise SkillInvalid(f"frontmatter is not valid YAML: {_yaml_reason(exc)}") from None
    except RecursionError:  # belt and braces: _check_shape should have refused it
        raise SkillInvalid(
            f"frontmatter nests too deeply; the limit is {MAX_FRONTMATTER_DEPTH} levels"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillInvalid(
            f"frontmatter must be a YAML mapping of fields, got {type(data).__name__}"
        )
    body = "".join(lines[end + 1 :])
    return data, body


def _check_shape(raw: str) -> None:
    """Refuse deep nesting and aliases from the event stream, before anything recurses.

    PyYAML's parser is iterative but its composer and constructor recurse per level (~300
    levels crash them), and aliases let a few lines expand into gigabytes once serialised.
    """
    import yaml

    depth = 0
    for event in yaml.parse(raw, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise SkillInvalid("frontmatter uses a YAML alias (*name); write the value out instead")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_FRONTMATTER_DEPTH:
                mark = event.start_mark
                line = f" (line {mark.line + 2})" if mark is not None else ""
                raise SkillInvalid(
                    f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels{line}; "
                    "frontmatter is a few flat fields"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """One line: the problem and its line in SKILL.md (frontmatter starts on line 2)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 2}, column {mark.column + 1})"
    return str(problem)


def normalize_name(name: str) -> str:
    return unicodedata.normalize("NFKC", name)


def name_problems(name: Any, folder: str | None = None) -> list[str]:
    """Every way ``name`` breaks the spec's naming rule (and the folder match, if given)."""
    if not isinstance(name, str):
        return [f"'name' must be a string, got {_kind(name)}"]
    if not name.strip():
        return ["'name' must not be empty"]
    norm = normalize_name(name)
    problems: list[str] = []
    if name != name.strip():
        problems.append(f"'name' {name!r} has leading or trailing whitespace")
        norm = norm.strip()
    if len(norm) > MAX_NAME:
        problems.append(f"'name' is {len(norm)} characters; the limit is {MAX_NAME}")
    if norm != norm.lower():
        problems.append(f"'name' {norm!r} must be lowercase")
    bad = sorted({c for c in norm if not (c.isalnum() or c == "-")})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        problems.append(
            f"'name' {norm!r} contains {shown}; only letters, digits and hyphens are allowed"
        )
    if norm.startswith("-") or norm.endswith("-"):
        problems.append(f"'name' {norm!r} must not start or end with a hyphen")
    if "--" in norm:
        problems.append(f"'name' {norm!r} must not contain consecutive hyphens")
    if folder is not None and normalize_name(folder) != norm:
        problems.append(f"'name' {norm!r} must equal the folder name {folder!r}")
    return problems


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {
        dict: "a mapping",
        list: "a list",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _text_field(data: dict[str, Any], field: str, limit: int | None, required: bool) -> list[str]:
    if field not in data:
        return [f"missing required field '{field}'"] if required else []
    value = data[field]
    if not isinstance(value, str):
        return [f"'{field}' must be a string, got {_kind(value)}"]
    if not value.strip():
        return [f"'{field}' must not be empty"]
    if limit is not None and len(value) > limit:
        return [f"'{field}' is {len(value)} characters; the limit is {limit}"]
    return []


def version_mismatch(frontmatter: dict[str, Any], version: str) -> str | None:
    """Why SKILL.md's ``metadata.version``, when given, is not ``version`` (the published or
    signed one), or None: agents and listings show the file's, installs follow the signed one."""
    meta = frontmatter.get("metadata")
    stated = meta.get("version") if isinstance(meta, dict) else None
    if stated is None or str(stated).strip() == version:
        return None
    return f"SKILL.md metadata.version is {str(stated)[:40]!r}, not {version[:40]!r}"


def metadata_problems(value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"'metadata' must be a mapping of string keys to string values, got {_kind(value)}"]
    problems = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(f"'metadata' key {key!r} must be a string")
        elif not isinstance(item, str):
            problems.append(
                f"'metadata.{key}' must be a string, got {_kind(item)} (quote it in YAML)"
            )
    return problems


def allowed_tools_problems(value: Any) -> list[str]:
    """The spec's canonical form is a space-separated string; it also accepts a string list."""
    if isinstance(value, str):
        return []
    if isinstance(value, list):
        if all(isinstance(item, str) and item.strip() for item in value):
            return []
        return ["'allowed-tools' list items must be non-empty strings"]
    return [f"'allowed-tools' must be a space-separated string, got {_kind(value)}"]


def validate_frontmatter(data: dict[str, Any], folder: str | None = None) -> list[str]:
    """Problems with already-parsed frontmatter; ``folder`` enables the name/folder check."""
    problems: list[str] = []
    extra = sorted(str(k) for k in data if k not in ALLOWED_FIELDS)
    for key in extra:
        hint = " (put custom fields under 'metadata')"
        problems.append(f"unexpected field '{key}'; allowed: {', '.join(ALLOWED_FIELDS)}{hint}")
    if "name" not in data:
        problems.append("missing required field 'name'")
    else:
        problems.extend(name_problems(data["name"], folder))
    problems.extend(_text_field(data, "description", MAX_DESCRIPTION, required=True))
    if "license" in data:
        problems.extend(_text_field(data, "license", None, required=False))
    problems.extend(_text_field(data, "compatibility", MAX_COMPATIBILITY, required=False))
    if "metadata" in data:
        problems.extend(metadata_problems(data["metadata"]))
    if "allowed-tools" in data:
        problems.extend(allowed_tools_problems(data["allowed-tools"]))
    return problems


def validate_skill_dir(path: Path | str) -> list[str]:
    """Check a skill folder against the spec; every problem found, ``[]`` when valid."""
    folder = Path(path)
    if not folder.exists():
        return ["path does not exist"]
    if not folder.is_dir():
        return [f"not a folder (a skill is a folder containing {SKILL_FILE})"]
    skill_md = folder / SKILL_FILE
    if not skill_md.is_file():
        return [f"missing {SKILL_FILE}"]
    try:
        data, _body = parse_frontmatter(read_skill_text(skill_md))
    except SkillInvalid as exc:
        return [str(exc)]
    return validate_frontmatter(data, folder.resolve().name)
