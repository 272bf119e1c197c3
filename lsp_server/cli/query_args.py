"""A click command whose free-text argument may start with ``-``.

Changelog-style subjects ("- allow lists in config") are queries, not options: an argument is
taken as an option only when it *is* one of the command's options (``-k``, ``--json``,
``--root=PATH``, ``-k5``); anything else that starts with ``-`` is moved behind ``--`` so click
reads it as the positional argument. ``--`` itself keeps its usual meaning.
"""

from __future__ import annotations

import click


class QueryCommand(click.Command):
    """A command with one free-text positional argument that may begin with a dash."""

    # Only a dashed argument holding whitespace ("- fix the date test") is taken as the text;
    # any other unknown "-x" stays an option, so click refuses it (for `kiln run`, where a
    # mistyped option must not become the agent's task).
    spaced_text_only = False

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._reorder(ctx, list(args)))

    def _reorder(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value: dict[str, click.Option | None] = dict.fromkeys(ctx.help_option_names)
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                flag = param.is_flag or param.count
                for name in [*param.opts, *param.secondary_opts]:
                    takes_value[name] = None if flag else param
        options: list[str] = []
        positional: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                positional.extend(args[i + 1 :])
                break
            kind = _option_kind(ctx, arg, takes_value)
            if kind == "value":
                if i + 1 == len(args):
                    raise click.BadOptionUsage(arg, f"Option '{arg}' requires an argument.", ctx)
                options.extend(args[i : i + 2])
                i += 2
                continue
            if kind is not None or (
                self.spaced_text_only and arg.startswith("-") and len(arg.split()) < 2
            ):
                options.append(arg)
            else:
                positional.append(arg)
            i += 1
        return [*options, "--", *positional] if positional else options


def _option_kind(
    ctx: click.Context, arg: str, takes_value: dict[str, click.Option | None]
) -> str | None:
    """ "value" for an option that consumes the next argument, "self" for one that stands
    alone (a flag, ``--opt=value``, ``-k5``), None for anything that is not an option."""
    if arg in takes_value:
        return "value" if takes_value[arg] is not None else "self"
    if arg.startswith("--") and "=" in arg:
        return "self" if takes_value.get(arg.split("=", 1)[0]) is not None else None
    option = takes_value.get(arg[:2]) if arg[:1] == "-" and arg[1:2] != "-" else None
    if option is not None:
        try:  # -k5 is the option -k with 5; "-kind of bug" is a query
            option.type.convert(arg[2:], option, ctx)
        except click.BadParameter:
            return None
        return "self"
    return None
