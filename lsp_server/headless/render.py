"""Renderers for `kiln run`: a rich terminal view, one JSON event per line, or nothing (json)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from agent.types import Event


class TextRenderer:
    """Assistant text to stdout as it streams; tool calls and status to stderr."""

    def __init__(self) -> None:
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)  # no hard wraps in CI logs
        self.at_line_start = True

    def __call__(self, event: Event) -> None:
        kind, data = event.kind, event.data
        if kind == "text_delta":
            sys.stdout.write(data["text"])
            sys.stdout.flush()
            self.at_line_start = data["text"].endswith("\n")
            return
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True
        if kind == "tool_call":
            self.err.print(f"[cyan]▶ {data['title']}[/cyan]", markup=True)
        elif kind == "tool_call_update":
            mark = "[red]✗[/red]" if data["is_error"] else "[green]✓[/green]"
            first = [
                x
                for x in (data.get("output") or "").strip().splitlines()
                if not x.startswith(("<external_content", "</external_content"))
            ]
            line = first[0][:120] if first else ""
            if data["is_error"]:
                line = next((x for x in first if x.startswith("message:")), line)[:160]
            self.err.print(
                f"  {mark} {data['name']} ({data['duration_ms']} ms) {line}", markup=True
            )
        elif kind == "refusal":
            self.err.print(
                f"[yellow]⛔ refused {data['tool']}: {data['reason']}[/yellow]", markup=True
            )
        elif kind == "plan":
            for item in data["entries"]:
                box = {"completed": "☑", "in_progress": "▣"}.get(item["status"], "☐")
                self.err.print(f"  {box} {item['content']}", markup=False)
        elif kind in ("status", "compaction"):
            self.err.print(f"[dim]{data.get('text') or data.get('summary', '')}[/dim]", markup=True)
        elif kind == "error":
            self.err.print(f"[red]error: {data['message']}[/red]", markup=True)


class StreamJsonRenderer:
    """One JSON object per line on stdout, for log viewers and pipelines."""

    def __call__(self, event: Event) -> None:
        if event.kind == "text_delta" and not event.data.get("text"):
            return
        sys.stdout.write(
            json.dumps({"type": event.kind, **event.to_dict()}, ensure_ascii=False) + "\n"
        )
        sys.stdout.flush()


def print_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
