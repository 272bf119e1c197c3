"""``cmake -E SUBCOMMAND …`` as the plain command it does: ``cmake -E rm -rf src`` is
``rm -rf src``, ``cmake -E copy x config/new.yml`` is ``cp``, ``cmake -E env …``, ``chdir DIR``
and ``time`` run the command after them. Before, the check read none of it, and ``cmake -E env
rm -rf src`` ran ``rm`` past a ``Bash(rm *)`` deny rule in ``ci``, ``cmake -E copy`` wrote past
a ``Write(…)`` one. ``cmake -P SCRIPT`` runs a script the check does not read, as ``python`` does.
"""

from __future__ import annotations

# Each subcommand that acts on files, as the coreutils command doing the same.
_AS = {
    "copy": ["cp"], "copy_if_different": ["cp"], "copy_directory": ["cp", "-r"],
    "copy_directory_if_different": ["cp", "-r"], "rename": ["mv"], "touch": ["touch"],
    "touch_nocreate": ["touch", "-c"], "make_directory": ["mkdir", "-p"], "remove": ["rm"],
    "rm": ["rm"], "remove_directory": ["rm", "-r"], "create_symlink": ["ln", "-s"],
    "create_hardlink": ["ln"], "tar": ["tar"], "env": ["env"], "time": [], "cat": ["cat"],
}  # fmt: skip


def cmake_command(args: tuple[str, ...] | list[str]) -> list[str] | None:
    """The command ``cmake ARGS`` amounts to, for ``-E`` and a subcommand above; else None."""
    if len(args) < 2 or args[0] != "-E":
        return None
    sub, rest = args[1], list(args[2:])
    if sub == "chdir":  # `cmake -E chdir DIR CMD…`: CMD runs in DIR
        return ["env", "-C", *rest] if len(rest) > 1 else None
    if sub not in _AS:
        return None
    return [*_AS[sub], *rest] or None
