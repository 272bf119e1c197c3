"""The `kiln` command-line root.

Sub-commands are registered by name and imported only when used, so `kiln --help` stays fast
and importing this module has no side effects. Every failure becomes one line on stderr and an
exit code (``lsp_server.cli.failures``), never a traceback. A command's modules are imported
with the garbage collector paused, then frozen out of it (``kiln_errors.settled_imports``): at
the end of a `kiln run`, shutdown's collections scanned ~45,000 import-time objects again and
again (~0.1 s of CPU), and a `kiln lsp` or `kiln acp` start was mostly collections while pygls
or the ACP SDK made their classes.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from kiln_errors.settled_imports import settled_imports
from lsp_server.cli.tty_guard import escaped_terminal, workflow_log
from lsp_server.version import __version__

# name -> "module:attribute"; a plugin registers the same way (explicit, no reflection).
COMMANDS: dict[str, str] = {
    "index": "lsp_server.cli.index:index_cmd",
    "search": "lsp_server.cli.index:search_cmd",
    "run": "lsp_server.cli.run:run_cmd",
    "lsp": "lsp_server.cli.serve:lsp_cmd",
    "acp": "lsp_server.cli.serve:acp_cmd",
    "skills": "lsp_server.cli.skills:skills_group",
    "registry": "lsp_server.cli.registry:registry_group",
    "memory": "lsp_server.cli.memory:memory_group",
    "sessions": "lsp_server.cli.sessions:sessions_group",
    "context": "lsp_server.cli.context:context_group",
    "mcp": "lsp_server.cli.mcp:mcp_group",
}


def register_command(name: str, target: str) -> None:
    """Register a sub-command as ``module:attribute``; imported lazily on first use."""
    COMMANDS[name] = target


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:  # click's main would end it as a silent exit 1
            from lsp_server.cli.failures import ReaderLeft

            raise ReaderLeft() from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attr = target.partition(":")
        try:
            with settled_imports():
                module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(module_name.split(".")[0]):
                return _unavailable(cmd_name, f"not built yet ({exc.name})")
            raise
        cmd = getattr(module, attr)
        assert isinstance(cmd, click.Command)
        return cmd


def _unavailable(name: str, why: str) -> click.Command:
    @click.command(
        name=name, help=f"(unavailable: {why})", context_settings={"ignore_unknown_options": True}
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def cmd(args: tuple[str, ...]) -> None:
        raise click.UsageError(f"'kiln {name}' is unavailable: {why}")

    return cmd


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="kiln")
def cli() -> None:
    """Kiln: a coding agent that lives inside a language server."""


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: every failure becomes one line and an exit code (``failures``)."""
    from kiln_errors.home import pin_kiln_home
    from lsp_server.cli.failures import check_debug_setting, run_main
    from lsp_server.headless.failed_run import result_on_failure

    def invoke() -> int:
        check_debug_setting()
        pin_kiln_home()
        result = cli.main(args=argv, prog_name="kiln", standalone_mode=False)
        return result if isinstance(result, int) else 0

    args = sys.argv[1:] if argv is None else argv
    with escaped_terminal(args), workflow_log(args):
        return run_main(invoke, result_on_failure(args))
