"""Edit -> blocks CPU time on Vue and Svelte components: ``rechunk.chunk_edit`` (the script
re-parsed incrementally from the last tree, the component chunked whole) against
``chunk_file`` (a full parse) of the same text, the two alternating per edit in one process.

Each edit adds a comment line (valid anywhere in a script) after a random line of the
component's script part, as typed; both arms' blocks are checked equal.

    python -m bench.component_edits /tmp/src/primevue/package/calendar/Calendar.vue [--edits 100]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from indexer.chunker import chunk_file  # noqa: E402
from indexer.incremental import TreeCache  # noqa: E402
from indexer.languages import COMPONENT_LANGUAGES, language_for  # noqa: E402
from indexer.rechunk import chunk_edit  # noqa: E402


def _shape(blocks: list) -> list[tuple]:
    return [(b.kind, b.name, b.start_line, b.end_line, b.text, sorted(b.refs)) for b in blocks]


def measure(path: Path, edits: int, seed: int) -> dict[str, float]:
    """p50 / p95 milliseconds of both arms over ``edits`` edits of ``path``."""
    text = path.read_text("utf-8", errors="replace")
    rel = path.name
    trees = TreeCache()
    chunk_edit(trees, rel, text.encode())
    rnd = random.Random(seed)
    incremental: list[float] = []
    full: list[float] = []
    for i in range(edits):
        lo, hi = text.find("<script"), text.rfind("</script>")
        at = text.find("\n", rnd.randrange(lo, hi)) + 1
        text = text[:at] + f"  // note {i}\n" + text[at:]
        data = text.encode()
        started = time.process_time()
        blocks, _ = chunk_edit(trees, rel, data)
        incremental.append(time.process_time() - started)
        started = time.process_time()
        reference = chunk_file(rel, data)
        full.append(time.process_time() - started)
        assert _shape(blocks) == _shape(reference), (rel, i)

    def q(xs: list[float], f: float) -> float:
        return sorted(xs)[min(int(len(xs) * f), len(xs) - 1)] * 1000

    return {
        "bytes": len(text.encode()),
        "edit_p50": q(incremental, 0.5),
        "edit_p95": q(incremental, 0.95),
        "full_p50": q(full, 0.5),
        "full_p95": q(full, 0.95),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help=".vue or .svelte files")
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for path in args.files:  # every argument checked before any work
        if language_for(path.name) not in COMPONENT_LANGUAGES or not path.is_file():
            print(f"error: {path}: want an existing .vue or .svelte file")
            return 2
        if "<script" not in path.read_text("utf-8", errors="replace"):
            print(f"error: {path}: no <script> block to edit")
            return 2
    print("| component | bytes | edit p50 / p95 ms | full chunk p50 / p95 ms |")
    print("|---|---|---|---|")
    for path in args.files:
        m = measure(path, args.edits, args.seed)
        print(
            f"| {path.name} | {m['bytes']} | {m['edit_p50']:.1f} / {m['edit_p95']:.1f} "
            f"| {m['full_p50']:.1f} / {m['full_p95']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
