"""Local registry state under ``$KILN_HOME``: settings, publish tokens, pinned keys, the cache.

``credentials.json`` holds publish tokens (mode 0600); ``trusted_keys.json`` holds registry keys
pinned out of band with ``kiln skills trust`` or, for an interactive install only, on first use
(a changed key is refused); ``cache/blobs/<sha256>`` holds verified archives, ``cache/meta``
version documents and ``cache/signed`` the last accepted signed metadata per signing key and
skill. The HTTP calls that fill it are ``skills_registry.client``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from pathlib import Path
from stat import S_ISREG
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kiln_errors import home
from skills_registry import config_file
from skills_registry.registry.errors import NoRegistry, TrustError, UsageError, WriteFailed
from skills_registry.registry.semver import is_version


def kiln_home() -> Path:
    return home.kiln_home()


CACHE_MAX_BYTES = 64 << 20  # a cached version document or signed metadata: far beyond real ones


def _read_json(path: Path, max_bytes: int = config_file.MAX_BYTES) -> dict[str, Any]:
    """A JSON object Kiln keeps under ``$KILN_HOME`` (``{}`` when absent); a FIFO, a huge file or
    bad JSON there is one ``UsageError``, never a hang."""
    try:
        data = config_file.load_json(path, max_bytes)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}", hint="fix or delete the file") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object")
    return data


def _write_json(path: Path, data: dict[str, Any], mode: int = 0o644) -> None:
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    write_atomically(path, text.encode("utf-8"), mode)


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Temp file and rename, so a crash never leaves half a file; a write the file system
    refuses (a full disk, a read-only folder) is one ``WriteFailed`` line, the file as it was.
    The stale temps of killed writes beside it are swept first (``sweep_temps``)."""
    sweep_temps(path.parent, None if _kiln_own(path.parent) else path.name)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise WriteFailed(f"cannot write {path}: {exc.strerror or exc}") from None


STALE_TEMP_SECONDS = 3600  # older than any write still running
_TEMP_NAME = re.compile(r"\..+\.[0-9]+\.[0-9a-f]{8}\.tmp", re.S)


def sweep_temps(folder: Path, name: str | None = None) -> None:
    """Remove the temp files of writes killed before their rename (``.NAME.PID.xxxxxxxx.tmp``,
    as ``write_atomically`` names them) once an hour old: nothing else ever removed them, and a
    credentials file's temp holds a token. With ``name``, only that file's temps (a project's
    folder, where ``git add .`` would commit one); without, every such temp in ``folder`` (one
    of Kiln's own under ``$KILN_HOME``, where a cached archive's temp is never written again)."""
    pattern = _TEMP_NAME
    if name is not None:
        pattern = re.compile(rf"\.{re.escape(name)}\.[0-9]+\.[0-9a-f]{{8}}\.tmp", re.S)
    try:
        entries = [e for e in os.scandir(folder) if pattern.fullmatch(e.name)]
    except OSError:
        return
    now = time.time()
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)  # a regular file: never a link followed
            if S_ISREG(info.st_mode) and now - info.st_mtime > STALE_TEMP_SECONDS:
                os.unlink(entry.path)


def _kiln_own(folder: Path) -> bool:
    """``folder`` lies under ``$KILN_HOME``, which holds Kiln's files only."""
    try:
        return folder.resolve().is_relative_to(kiln_home().resolve())
    except (OSError, RuntimeError, ValueError):
        return False


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """One spelling per registry: pins, tokens and caches are keyed by it. Scheme and host are
    case-insensitive and a default port is no port (RFC 3986); before, ``http://LocalHost:8750``
    found no pin for ``http://localhost:8750`` and trusted any key on "first use"."""
    text = url.strip()
    if (bad := next((c for c in text if not c.isprintable()), None)) is not None:
        # urlsplit drops a tab or a line break (http://exa\nmple.com named example.com) and
        # httpx raised InvalidURL, an internal error, on any other control character
        raise UsageError(
            f"registry URL {text.rstrip('/')!r} holds the control character {bad!r}",
            hint="pass the registry's http:// or https:// URL as plain text",
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = None, None
    scheme = parts.scheme.lower() if parts else ""
    if parts is None or scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise UsageError(
            f"registry URL {text.rstrip('/')!r} must start with http:// or https:// "
            "and name a host (and a port from 1 to 65535)"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (userinfo + "@" if userinfo else "") + host
    netloc += "" if port in (None, _DEFAULT_PORTS[scheme]) else f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, parts.fragment))


def _entry(data: dict[str, Any], registry: str) -> Any:
    """``data[normalize_url(registry)]``, or an entry saved under an older spelling of it."""
    key = normalize_url(registry)
    if key in data:
        return data[key]
    for saved, entry in data.items():
        with contextlib.suppress(UsageError):
            if normalize_url(saved) == key:
                return entry
    return None


def default_registry(explicit: str | None = None) -> str:
    """``--registry``, else ``KILN_REGISTRY``, else ``registry`` in ``$KILN_HOME/settings.json``."""
    url = (
        explicit
        or os.environ.get("KILN_REGISTRY")
        or _read_json(kiln_home() / "settings.json").get("registry")
    )
    if not url:
        raise NoRegistry(
            "no registry configured",
            hint="pass --registry URL, set KILN_REGISTRY, or add 'registry' to $KILN_HOME/settings.json",
        )
    return normalize_url(str(url))


def save_token(registry: str, token: str) -> Path:
    path = kiln_home() / "credentials.json"
    data = _read_json(path)
    data[normalize_url(registry)] = {"token": token}
    _write_json(path, data, mode=0o600)
    return path


def load_token(registry: str) -> str | None:
    entry = _entry(_read_json(kiln_home() / "credentials.json"), registry)
    return entry.get("token") if isinstance(entry, dict) else None


def key_entry(public_key_b64: object) -> dict[str, str] | None:
    """``{keyId, publicKey}`` for a base64 ed25519 public key, its id computed from the key
    itself (never taken from whoever sent it), or None when it is not one."""
    from skills_registry.registry.signing import key_id

    if not isinstance(public_key_b64, str):
        return None
    try:
        raw = base64.b64decode(public_key_b64.strip(), validate=True)
    except ValueError:
        return None
    if len(raw) != 32:
        return None
    return {"keyId": key_id(raw), "publicKey": base64.b64encode(raw).decode()}


def served_keys(registry: str, keys: object) -> list[dict[str, str]]:
    """The signing keys a registry's ``/.well-known/kiln-registry.json`` lists, each with the id
    of its own bytes: a served ``keyId`` could name the operator's key beside another key."""
    found = []
    for offered in keys if isinstance(keys, list) else []:
        entry = key_entry(offered.get("publicKey")) if isinstance(offered, dict) else None
        if entry is None:
            raise TrustError(
                f"registry {registry} serves a signing key that is not a base64 ed25519 public key",
                hint="report it to the registry operator",
            )
        found.append(entry)
    return found


class TrustStore:
    """Registry signing keys pinned on first use (TOFU), one per registry URL."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or kiln_home() / "trusted_keys.json"

    def pinned(self, registry: str) -> dict[str, str] | None:
        """The pinned key (its id computed from it), or None; a pin of another shape (an edited
        file) is refused, never read as "no pin", which an interactive install would replace
        with whatever key is served."""
        entry = _entry(_read_json(self.path), registry)
        if entry is None:
            return None
        key = key_entry(entry.get("publicKey")) if isinstance(entry, dict) else None
        if key is None:
            raise UsageError(
                f"{self.path}: the pin for {normalize_url(registry)} is not a key pinned by "
                "`kiln skills trust`",
                hint=f"pin the operator's key again: kiln skills trust {registry} --key KEY",
            )
        return key

    def pin(self, registry: str, public_key_b64: str) -> dict[str, str]:
        """Pin ``public_key_b64`` for ``registry`` (out of band; replaces an earlier pin)."""
        entry = key_entry(public_key_b64)
        if entry is None:
            raise UsageError(
                "the key must be a base64 ed25519 public key (32 bytes)",
                hint="copy 'publicKey' from the registry's /.well-known/kiln-registry.json",
            )
        data = _read_json(self.path)
        data[normalize_url(registry)] = entry
        _write_json(self.path, data, mode=0o600)
        return entry

    def check(self, registry: str, keys: object, *, first_use: bool = True) -> dict[str, str]:
        """The pinned key if the registry still offers it; pin on first sight if allowed."""
        served = served_keys(registry, keys)
        if not served:
            raise TrustError(f"registry {registry} publishes no signing key")
        pinned = self.pinned(registry)
        if pinned is None:
            if not first_use:
                raise unpinned(registry)
            return self.pin(registry, served[0]["publicKey"])
        if all(k["publicKey"] != pinned["publicKey"] for k in served):
            raise TrustError(
                f"registry {registry} now signs with key {served[0]['keyId']}, "
                f"but {pinned['keyId']} was pinned"
            )
        return pinned


def unpinned(registry: str) -> TrustError:
    return TrustError(
        f"no key is pinned for registry {registry}; frozen and CI installs never trust a key "
        "on first use",
        hint=f"pin it out of band: kiln skills trust {registry} --key KEY "
        f"(the operator's key; also served at {registry}/.well-known/kiln-registry.json)",
    )


class Cache:
    """Verified archives by sha256 and version documents by registry/id/version."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or kiln_home() / "cache"

    def blob_path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise UsageError(f"invalid sha256 {sha256!r}")
        return self.root / "blobs" / sha256

    def get_blob(self, sha256: str) -> bytes | None:
        path = self.blob_path(sha256)
        if not path.exists():
            return None
        data = path.read_bytes()
        return (
            data if hashlib.sha256(data).hexdigest() == sha256 else None
        )  # a corrupt entry is a miss

    def put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        write_atomically(self.blob_path(sha), data)
        return sha

    def _meta_dir(self, registry: str, skill_id: str) -> Path:
        key = hashlib.sha256(normalize_url(registry).encode()).hexdigest()[:16]
        return self.root / "meta" / key / skill_id

    def put_doc(self, registry: str, doc: dict[str, Any]) -> None:
        version = str(doc["version"])
        if not is_version(version) or version != version.strip():  # a file name: no '../'
            raise UsageError(f"invalid version {version[:60]!r} in a version document")
        _write_json(self._meta_dir(registry, doc["id"]) / f"{version}.json", doc)

    def docs(self, registry: str, skill_id: str) -> dict[str, dict[str, Any]]:
        folder = self._meta_dir(registry, skill_id)
        if not folder.is_dir():
            return {}
        return {
            p.stem: _read_json(p, CACHE_MAX_BYTES)
            for p in folder.glob("*.json")
            if p.stem[:1].isdigit()
        }

    def _signed_path(self, key_id: str, skill_id: str) -> Path:
        """By signing key, not URL: a mirror of the same registry shares the rollback floor."""
        key = hashlib.sha256(key_id.encode()).hexdigest()[:16]
        return self.root / "signed" / key / f"{skill_id}.json"

    def put_metadata(self, key_id: str, skill_id: str, envelope: dict[str, Any]) -> None:
        _write_json(self._signed_path(key_id, skill_id), envelope)

    def metadata(self, key_id: str, skill_id: str) -> dict[str, Any] | None:
        return _read_json(self._signed_path(key_id, skill_id), CACHE_MAX_BYTES) or None
