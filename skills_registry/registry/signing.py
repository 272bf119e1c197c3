"""Ed25519 release signatures: the registry signs ``id@version:sha256`` at publish.

A client that pinned the registry's public key can then prove an archive is the one the
registry accepted, even when it came from a cache or a mirror. The private key is generated
on the first ``serve`` and kept under the data folder with mode 0600.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

KEY_FILE = "keys/ed25519.key"


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
        signed = self.key.sign(release_message(skill_id, version, sha256))
        return base64.b64encode(signed.signature).decode()


def load_or_create_signer(data_dir: Path) -> Signer:
    """Load the registry key, creating it (0600, atomically) on first use."""
    path = Path(data_dir) / KEY_FILE
    if path.exists():
        return Signer(SigningKey(base64.b64decode(path.read_bytes().strip())))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = SigningKey.generate()
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64encode(bytes(key)) + b"\n")
    try:
        os.link(tmp, path)  # fails if another process won the race; then use theirs
    except FileExistsError:
        tmp.unlink()
        return load_or_create_signer(data_dir)
    tmp.unlink()
    return Signer(key)


def verify_release(
    public_key_b64: str, skill_id: str, version: str, sha256: str, signature_b64: str
) -> bool:
    try:
        verify_key = VerifyKey(base64.b64decode(public_key_b64, validate=True))
        verify_key.verify(
            release_message(skill_id, version, sha256),
            base64.b64decode(signature_b64, validate=True),
        )
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True
