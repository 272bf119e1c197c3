"""Ed25519 signatures over everything a client acts on.

Three messages, each with its own prefix so one can never pass for another:

- the **release**, ``id@version:sha256``, signed at publish (kept in lockfiles: it re-verifies
  an offline install);
- the **version document**, every field of it except ``signatures`` and the mutable
  ``status``/``statusReason``, as canonical JSON (file list, scripts, scan, tree hash...);
- the **skill metadata** (versions with status and sha256, dist-tags, deprecation) with a
  monotonic ``seq`` and an ``expires`` time, signed when served: TUF's snapshot and timestamp
  roles folded into one short-lived document per skill, so a mirror can neither roll a client
  back to older metadata nor freeze it on stale metadata for longer than the expiry.

A client that pinned the registry's public key can then prove what it reads is what the
registry said, even when it came from a cache or a mirror. The private key is generated on the
first ``serve`` and kept under the data folder with mode 0600.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

KEY_FILE = "keys/ed25519.key"
UNSIGNED_DOC_FIELDS = ("signatures", "status", "statusReason")
_DOC_PREFIX = b"kiln-version-document-v1\n"
_META_PREFIX = b"kiln-skill-metadata-v1\n"


def canonical(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same bytes on the server and in every client."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def document_message(doc: dict[str, Any]) -> bytes:
    return _DOC_PREFIX + canonical({k: v for k, v in doc.items() if k not in UNSIGNED_DOC_FIELDS})


def metadata_message(signed: dict[str, Any]) -> bytes:
    return _META_PREFIX + canonical(signed)


def release_message(skill_id: str, version: str, sha256: str) -> bytes:
    return f"{skill_id}@{version}:{sha256}".encode()


def key_id(public_key: bytes) -> str:
    return "ed25519:" + hashlib.sha256(public_key).hexdigest()[:16]


@dataclass(frozen=True)
class Signer:
    key: SigningKey

    @property
    def public_key_b64(self) -> str:
        return base64.b64encode(bytes(self.key.verify_key)).decode()

    @property
    def key_id(self) -> str:
        return key_id(bytes(self.key.verify_key))

    def sign(self, skill_id: str, version: str, sha256: str) -> str:
        return self.sign_bytes(release_message(skill_id, version, sha256))

    def sign_bytes(self, message: bytes) -> str:
        return base64.b64encode(self.key.sign(message).signature).decode()

    def sign_document(self, doc: dict[str, Any]) -> str:
        return self.sign_bytes(document_message(doc))

    def sign_metadata(self, signed: dict[str, Any]) -> dict[str, Any]:
        """The envelope clients verify: ``{signed, signatures: [{keyId, signature}]}``."""
        return {
            "signed": signed,
            "signatures": [
                {"keyId": self.key_id, "signature": self.sign_bytes(metadata_message(signed))}
            ],
        }


def load_or_create_signer(data_dir: Path) -> Signer:
    """Load the registry key under ``data_dir``, creating it (0600, atomically) on first use."""
    return load_or_create_key_file(Path(data_dir) / KEY_FILE)


def load_or_create_key_file(path: Path) -> Signer:
    """Load a key file (base64 of the 32-byte seed), creating it mode 0600 when missing."""
    return load_key_file(path) or create_key_file(path)[0]


def load_key_file(path: Path) -> Signer | None:
    """The key in ``path``, or None when there is no such file."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    return signer_from_text(text, str(path))


def create_key_file(path: Path) -> tuple[Signer, bool]:
    """A new key in ``path`` (mode 0600) and True, or the key already there and False.

    Created with a hard link from a private temp name, so when several instances start at once
    exactly one key wins and every instance loads that one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = SigningKey.generate()
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64encode(bytes(key)) + b"\n")
    try:
        os.link(tmp, path)  # fails if another process won the race; then use theirs
    except FileExistsError:
        return signer_from_text(
            path.read_text(encoding="ascii", errors="replace"), str(path)
        ), False
    finally:
        tmp.unlink()
    return Signer(key), True


def signer_from_text(text: str, source: str) -> Signer:
    """A signer from base64 key text; a malformed key is a ValueError naming ``source``."""
    try:
        seed = base64.b64decode(text.strip(), validate=True)
        return Signer(SigningKey(seed))
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"{source} is not an ed25519 signing key (base64 of 32 bytes): {exc}"
        ) from None


def verify_bytes(public_key_b64: str, message: bytes, signature_b64: str) -> bool:
    try:
        verify_key = VerifyKey(base64.b64decode(public_key_b64, validate=True))
        verify_key.verify(message, base64.b64decode(signature_b64, validate=True))
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True


def verify_release(
    public_key_b64: str, skill_id: str, version: str, sha256: str, signature_b64: str
) -> bool:
    return verify_bytes(public_key_b64, release_message(skill_id, version, sha256), signature_b64)
