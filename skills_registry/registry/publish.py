"""Turn an uploaded archive into an immutable, signed release document — or say everything wrong.

Validation collects every problem it can before failing (a 422 lists them all), so an author
fixes a skill in one round trip. Only structural archive problems stop early: once an archive is
unsafe nothing inside it can be trusted enough to check further.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from typing import Any

from skills_registry import json_limits
from skills_registry.archive import (
    SKIP_NAMES,
    ArchiveContents,
    read_archive,
    sha256_hex,
    tree_hash,
)
from skills_registry.errors import SkillInvalid
from skills_registry.registry.errors import ArchiveError, ValidationFailed
from skills_registry.registry.id_rules import NAME_RE, NAMESPACE_RE
from skills_registry.registry.scan import is_script, scan_files
from skills_registry.registry.semver import is_version
from skills_registry.registry.signing import Signer
from skills_registry.registry.storage import now_iso
from skills_registry.spec import (
    MAX_SKILL_BYTES,
    name_problems,
    parse_frontmatter,
    validate_frontmatter,
    version_mismatch,
)

# Registry names are ASCII even where the Agent Skills spec allows any Unicode letter: they are
# URL path segments and folder names on every client, and look-alike letters (Cyrillic 'а' for
# Latin 'a') would let one skill pass for another.
ASCII_NAME_RULE = "registry names are ASCII: lowercase a-z, digits and inner '-', max 64"
MAX_TOOL_SCHEMAS = 64
# What one upload can make the registry store and serve on every read of its version document
# (and a client read under its 16 MB cap): without these a 31 KB archive of tool schemas or a
# repeated `allowed-tools` made a document of 30-60 MB, each read of it holding the server.
MAX_TOOL_SCHEMA_BYTES = 64 * 1024  # a tool's schema reaches the model's context when found
MAX_FRONTMATTER_BYTES = 64 * 1024  # a few short fields; parsing YAML costs ~20 s a megabyte
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


def check_id(skill_id: str) -> tuple[str, str]:
    namespace, _, name = skill_id.partition("/")
    problems = []
    if not NAMESPACE_RE.match(namespace):
        problems.append(f"invalid namespace {namespace!r} (lowercase letters, digits, inner '-')")
    if not NAME_RE.match(name):
        if not name.isascii() and not name_problems(name):
            problems.append(
                f"skill name {name!r} is valid under the Agent Skills spec, but {ASCII_NAME_RULE} "
                "(look-alike Unicode letters could impersonate another skill); rename the skill"
            )
        else:
            problems.append(f"invalid skill name {name!r} ({ASCII_NAME_RULE})")
    if problems:
        raise ValidationFailed(problems)
    return namespace, name


def _tool_schemas(contents: ArchiveContents, errors: list[str]) -> list[dict[str, Any]]:
    tools = []
    for path in sorted(p for p in contents.files if re.fullmatch(r"tools/[^/]+\.json", p)):
        if len(contents.files[path]) > MAX_TOOL_SCHEMA_BYTES:
            errors.append(
                f"{path}: {len(contents.files[path])} bytes; a tool schema is at most "
                f"{MAX_TOOL_SCHEMA_BYTES} (it reaches the model's context when the tool is found)"
            )
            continue
        try:
            schema = json_limits.loads(contents.files[path].decode("utf-8"), nul=False)
        except (UnicodeDecodeError, ValueError) as exc:
            errors.append(f"{path}: not valid JSON ({exc})")
            continue
        if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
            errors.append(f"{path}: a tool schema is a JSON object with a string 'name'")
            continue
        errors.extend(f"{path}: {problem}" for problem in _runnable(schema, contents.files))
        tools.append({"path": path, **schema})
    names = [t["name"] for t in tools]
    errors.extend(
        f"two tool schemas are named {n!r} (one would replace the other)"
        for n in sorted({n for n in names if names.count(n) > 1})
    )
    if len(tools) > MAX_TOOL_SCHEMAS:
        errors.append(f"{len(tools)} tool schemas; the limit is {MAX_TOOL_SCHEMAS}")
    return tools


def _runnable(schema: dict[str, Any], files: Mapping[str, bytes]) -> list[str]:
    """What Kiln needs to run a sidecar tool (``skills_registry.deferred``), checked here so a
    declaration no client can load is refused at publish, not skipped on every machine."""
    problems = [
        f"'{key}' must be a non-empty string"
        for key in ("description", "command")
        if not isinstance(schema.get(key), str) or not schema[key].strip()
    ]
    if "input_schema" in schema and not isinstance(schema["input_schema"], dict):
        problems.append("'input_schema' must be a JSON object")
    command = schema.get("command")
    if isinstance(command, str) and command.strip():
        target = posixpath.normpath(command)
        if target.startswith(("../", "/")) or target == "..":
            problems.append(f"command {command!r} resolves outside the skill folder")
        elif target not in files:
            problems.append(f"command {command!r} is not a file of the skill")
    return problems


def build_release(skill_id: str, version: str, archive: bytes, signer: Signer) -> dict[str, Any]:
    """Validate, hash, scan and sign one upload; the returned document is what clients see."""
    namespace, name = check_id(skill_id)
    errors: list[str] = []
    if not is_version(version):
        errors.append(f"invalid version {version!r}: use exact SemVer such as 1.2.3")
    try:
        contents = read_archive(archive)
    except ArchiveError as exc:
        raise ValidationFailed([*errors, str(exc)]) from None
    for path in sorted(contents.files):
        junk = next((part for part in path.split("/") if part in SKIP_NAMES), None)
        if junk is not None:
            errors.append(
                f"{path}: {junk!r} is build output or install state and is never part of a "
                "skill; publish with `kiln skills publish PATH`, which leaves it out"
            )
            break
    skill_md = contents.files.get("SKILL.md", b"")
    if len(skill_md) > MAX_SKILL_BYTES:
        errors.append(
            f"SKILL.md is {len(skill_md)} bytes; the limit is {MAX_SKILL_BYTES} "
            "(agents refuse to load larger ones; move detail into referenced files)"
        )
        skill_md = b""
    if contents.top != name:
        errors.append(f"archive top folder is {contents.top!r}; expected {name!r} (the skill name)")
    frontmatter: dict[str, Any] = {}
    if "SKILL.md" not in contents.files:
        errors.append("missing SKILL.md in the top folder")
    elif skill_md:
        try:
            frontmatter, _body = parse_frontmatter(
                contents.files["SKILL.md"].decode("utf-8-sig"), MAX_FRONTMATTER_BYTES
            )
            errors.extend(validate_frontmatter(frontmatter, name))
            if (bad := json_limits.unstorable_text(frontmatter)) is not None:
                errors.append(
                    f"SKILL.md frontmatter text {bad!r} holds a lone surrogate or NUL, "
                    "which is not allowed"
                )
            if (mismatch := version_mismatch(frontmatter, version)) is not None:
                errors.append(f"{mismatch} (the version published)")
        except UnicodeDecodeError:
            errors.append("SKILL.md is not valid UTF-8")
        except SkillInvalid as exc:
            errors.append(str(exc))
    tools = _tool_schemas(contents, errors)
    if errors:
        raise ValidationFailed(errors)
    frontmatter = json.loads(json.dumps(frontmatter, default=str))
    sha = sha256_hex(archive)
    files = [
        {
            "path": p,
            "size": len(d),
            "sha256": sha256_hex(d),
            "executable": p in contents.executables,
            "script": is_script(p, d, p in contents.executables),
        }
        for p, d in sorted(contents.files.items())
    ]
    doc: dict[str, Any] = {
        "id": skill_id,
        "namespace": namespace,
        "name": name,
        "version": version,
        "description": str(frontmatter.get("description", "")),
        "frontmatter": frontmatter,
        "files": files,
        "unpackedSize": contents.size,
        "archiveSha256": sha,
        "archiveSize": len(archive),
        "treeHash": tree_hash(contents.files),
        "signatures": [
            {
                "keyId": signer.key_id,
                "algorithm": "ed25519",
                "signature": signer.sign(skill_id, version, sha),
            }
        ],
        "scan": scan_files(contents.files, frontmatter, contents.executables),
        "tools": tools,
        "publishedAt": now_iso(),
    }
    size = len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_DOCUMENT_BYTES:
        raise ValidationFailed(
            [
                f"the version document would be {size} bytes; the limit is {MAX_DOCUMENT_BYTES} "
                "(file names, frontmatter, tool schemas and scan findings together)"
            ]
        )
    doc["signatures"][0]["document"] = signer.sign_document(doc)
    return doc
