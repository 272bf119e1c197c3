"""The kernel's keyrings hold secrets too (a Kerberos ticket in a ``KEYRING:`` credential cache,
a token stored with ``keyctl``), and they belong to a user namespace. Run by root, as in a CI
container, bubblewrap made no user namespace, and a sandboxed command read the keys of root's
user keyring (``keyctl search @u user NAME``, then ``keyctl read``). Through the real
`kiln run --mode ci` (commands run unasked): the command no longer finds the key (docs/security.md
section 4). Run unprivileged, bubblewrap always made a user namespace, so this held already."""

from __future__ import annotations

import ctypes
import platform
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

pytestmark = [
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 system call numbers"),
]

# x86_64 numbers: add_key, keyctl; KEYCTL_SEARCH, KEYCTL_READ, KEYCTL_REVOKE; @u
ADD_KEY, KEYCTL, SEARCH, READ, REVOKE, USER_KEYRING = 248, 250, 10, 11, 3, -4
READER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
key = libc.syscall({keyctl}, {search}, ctypes.c_long({ring}), b"user", b"{name}", 0)
buf = ctypes.create_string_buffer(200)
n = libc.syscall({keyctl}, {read}, ctypes.c_long(key), buf, 200) if key > 0 else -1
print("key", key, "read", buf.raw[: max(n, 0)].decode())
"""


@pytest.fixture
def user_key() -> Iterator[tuple[str, str]]:
    """A key in this user's keyring: (description, secret), revoked afterwards."""
    libc = ctypes.CDLL(None, use_errno=True)
    name, value = f"kiln-probe-{secrets.token_hex(4)}", f"keyring-canary-{secrets.token_hex(8)}"
    data = value.encode()
    ring = ctypes.c_long(USER_KEYRING)
    key = libc.syscall(ADD_KEY, b"user", name.encode(), data, len(data), ring)
    if key <= 0:
        pytest.skip("no kernel keyring here (add_key refused)")
    yield name, value
    libc.syscall(KEYCTL, REVOKE, ctypes.c_long(key))


def test_a_command_cannot_read_the_users_kernel_keyring(
    tmp_path: Path, kiln_home: Path, user_key: tuple[str, str]
) -> None:
    name, value = user_key
    root = tmp_path / "proj"
    root.mkdir()
    reader = READER.format(keyctl=KEYCTL, search=SEARCH, read=READ, ring=USER_KEYRING, name=name)
    (root / "reader.py").write_text(reader)
    proc, results = one_command(
        root,
        "python3 reader.py",
        home=tmp_path,
        kiln_home=kiln_home,
        script=tmp_path / "script.json",
    )
    assert "key -1 read" in results, results  # the command ran, and found no key
    assert value not in results + proc.stdout + proc.stderr
