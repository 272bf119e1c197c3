"""The result `kiln run --output-format json|stream-json` prints when it ends by a failure rather
than by finishing its run (bad flags, a missing key, an ambiguous `--resume`, a bad root): a
pipeline that parses stdout gets the documented result object, with ``is_error``, the line
stderr says and the exit code, instead of nothing."""

from __future__ import annotations

from collections.abc import Callable

JSON_FORMATS = ("json", "stream-json")


def output_format(argv: list[str]) -> str:
    """The ``--output-format`` of a `kiln run` command line ("" for another command), read
    as click reads it: the last one given, before a ``--``."""
    command = next((a for a in argv if not a.startswith("-")), "")
    if command != "run":
        return ""
    chosen = "text"
    args = argv[argv.index("run") + 1 :]
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--output-format" and i + 1 < len(args):
            chosen = args[i + 1]
        elif arg.startswith("--output-format="):
            chosen = arg.partition("=")[2]
    return chosen


def result_on_failure(argv: list[str]) -> Callable[[str, int], None] | None:
    """What prints the result of a `kiln run` with JSON output that failed; None otherwise."""
    fmt = output_format(argv)
    if fmt not in JSON_FORMATS:
        return None

    def show(line: str, code: int) -> None:
        from lsp_server.headless import exit_codes
        from lsp_server.headless.ci import RunReport
        from lsp_server.headless.render import print_json

        reason = {exit_codes.USAGE: "not_started", exit_codes.CANCELLED: "cancelled"}
        report = RunReport(
            task="",
            exit_code=code,
            outcome=exit_codes.MEANING.get(code, exit_codes.MEANING[exit_codes.FAILED]),
            stop_reason=reason.get(code, "error"),
            session_id="",
            error=line.removeprefix("kiln: "),
        )
        if fmt == "json":
            print_json(report.to_dict())
        else:
            print_json({"type": "result", **report.to_dict()}, indent=None)

    return show
