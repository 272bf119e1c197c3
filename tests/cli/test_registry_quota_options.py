"""The quota options are one definition, shared by every `kiln registry` command that takes
them: the same flag, variable, default, bounds and help wherever it appears (before, `serve`
and `migrate` each spelled them out, and a bound or a variable could drift between the two;
`usage` reads them to say how close a namespace is).
"""

from __future__ import annotations

import click

from lsp_server.cli.registry import registry_group

QUOTA_FLAGS = ("--namespace-bytes", "--versions-per-skill", "--publishes-per-hour")


def _described(command: click.Command) -> dict[str, tuple[object, ...]]:
    return {
        param.opts[0]: (param.envvar, param.default, repr(param.type), param.help)
        for param in command.params
        if isinstance(param, click.Option) and param.opts[0] in QUOTA_FLAGS
    }


def test_serve_migrate_and_usage_share_each_quota_option() -> None:
    serve = _described(registry_group.commands["serve"])
    migrate = _described(registry_group.commands["migrate"])
    assert set(serve) == set(QUOTA_FLAGS)
    assert _described(registry_group.commands["usage"]) == serve
    assert set(migrate) == {"--namespace-bytes", "--versions-per-skill"}  # no rate in a copy
    for flag in migrate:
        assert migrate[flag] == serve[flag], flag
