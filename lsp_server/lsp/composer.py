"""What a chat panel's composer asks while the user types: ``@`` mentions, ``/`` commands.

``kiln/complete/mentions`` ranks files, folders and symbols from Kiln's own index (which follows
unsaved buffers through didChange) plus the open documents; ``kiln/complete/commands`` lists the
built-in slash commands and the installed skills; ``kiln/skills/use`` turns ``/name`` into a
prompt block carrying that skill's instructions; ``kiln/session/compact`` is ``/compact``.
Index reads open their own read-only SQLite connection in a worker thread, so completion never
waits for a scan.
"""

from __future__ import annotations

import asyncio
import sqlite3
import unicodedata
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.compaction_store import CompactionRecord
from indexer import made_here
from indexer.schema_check import strange_objects
from indexer.wal_pairing import stale
from kiln_errors.shown import listed
from lsp_server.core import CoreError, InvalidParams, TurnInProgress, uri_to_path
from lsp_server.core import commands as core_commands
from lsp_server.core.prompts import skill_block
from lsp_server.lsp.methods import kiln_method
from lsp_server.lsp.params import CompleteParams, SessionRef, SkillUseParams
from lsp_server.lsp.rpc import REQUEST_FAILED

if TYPE_CHECKING:
    from lsp_server.lsp.server import KilnServer

BUILTIN_COMMANDS = [
    ("clear", "", "start a new session with an empty transcript"),
    ("compact", "", "compact the session's context now"),
    ("mode", "ask|auto-edit|ci|yolo", "what the agent may do without asking"),
    ("model", "NAME", "use another model (starts a new session)"),
    ("context", "", "how the context window is spent"),
]
MAX_LIMIT = 100
WIDE = "*[^\x01-\x7f]*"  # GLOB: a name holding a character past ASCII


def _fold(text: str) -> str:
    """``text`` as mentions compare it: composed (NFC) and case-folded. macOS writes ``é`` as
    ``e`` + U+0301 (NFD) in file names, most keyboards type U+00E9: either finds both."""
    return unicodedata.normalize("NFC", text).casefold()


def _folded_sql(column: str) -> str:
    """``column`` folded in SQL: ``lower`` for an ASCII name (the same, and native), ``_fold``
    only for names past ASCII, so a large index is not a Python call per row."""
    return f"CASE WHEN {column} GLOB '{WIDE}' THEN kiln_fold({column}) ELSE lower({column}) END"


def _rank_key(name: str, query: str) -> int:
    """0: exact, 1: prefix, 2: word prefix (``cfg`` in ``load_cfg``), 3: substring, 4: none."""
    n, q = _fold(name), _fold(query)
    if not q or n == q:
        return 0 if n == q else 1
    if n.startswith(q):
        return 1
    words = n.replace("-", "_").replace(".", "_").replace("/", "_").split("_")
    if any(w.startswith(q) for w in words):
        return 2
    return 3 if q in n else 4


def _index_candidates(db: Path, query: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Symbols (ranked by how often the index sees them referenced) and indexed file paths."""
    if not db.is_file() or stale(db):  # a -wal of the file before a swap: never read over it
        return [], False
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2)
    conn.create_function("kiln_fold", 1, _fold, deterministic=True)
    try:
        if strange_objects(conn) or not made_here.trusted(conn):  # swapped since the index
            return [], False  # checked it (a checkout that tracks .kiln/index.db): its views
            # would answer, or run, what they say, and its rows name what no file holds
        folded = _fold(query)  # a substring, `_` and `%` as typed (no LIKE wildcards)
        rows = conn.execute(
            f"""SELECT b.name, b.kind, b.path, b.start_line, b.end_line, b.signature,
                      (SELECT count(*) FROM refs r WHERE r.name = d.name) AS uses
               FROM defs d JOIN blocks b ON b.id = d.block_id
               WHERE instr({_folded_sql("d.name")}, ?) > 0
                 AND b.kind NOT IN ('module', 'preamble')
               ORDER BY uses DESC LIMIT ?""",
            (folded, limit * 20),
        ).fetchall()
        files = conn.execute(
            f"""SELECT f.path, (SELECT count(*) FROM refs r JOIN defs d ON d.name = r.name
                               WHERE d.file_id = f.id) AS uses
               FROM files f WHERE instr({_folded_sql("f.path")}, ?) > 0
               ORDER BY uses DESC LIMIT ?""",
            (folded, limit * 20),
        ).fetchall()
    except sqlite3.DatabaseError:
        return [], False
    finally:
        conn.close()
    symbols = [
        {
            "kind": "symbol",
            "label": name.rsplit(".", 1)[-1],
            "detail": f"{kind} · {path}:{start}",
            "path": path,
            "line": start,
            "endLine": end,
            "symbolKind": kind,
            "signature": sig,
            "_uses": uses,
        }
        for name, kind, path, start, end, sig, uses in rows
    ]
    paths = [{"kind": "file", "label": Path(p).name, "path": p, "_uses": u} for p, u in files]
    return symbols + paths, True


def _folders(paths: list[str], query: str) -> list[dict[str, Any]]:
    seen: dict[str, int] = {}
    for p in paths:
        parts = Path(p).parts[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            seen[folder] = seen.get(folder, 0) + 1
    return [
        {"kind": "folder", "label": Path(f).name + "/", "path": f + "/", "_uses": n}
        for f, n in seen.items()
        if _fold(query) in _fold(f)
    ]


def mention_items(
    root: Path, db: Path | None, open_docs: list[Path], query: str, limit: int
) -> dict[str, Any]:
    """Candidates for ``@query``: open buffers first among equals, then by the index's counts."""
    query = query.strip().lstrip("@")
    items, indexed = _index_candidates(db, query, limit) if db else ([], False)
    known = {i["path"] for i in items if i["kind"] == "file"}
    opened: set[str] = set()
    for doc in open_docs:
        try:
            rel = doc.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        opened.add(rel)
        if rel not in known and _fold(query) in _fold(rel):
            items.append({"kind": "file", "label": doc.name, "path": rel, "_uses": 0})
    items += _folders([i["path"] for i in items if i["kind"] == "file"], query)

    def key(item: dict[str, Any]) -> tuple[int, int, int, int, str]:
        name = item["label"].rstrip("/")
        order = {"file": 0, "symbol": 1, "folder": 2}[item["kind"]]
        return (
            _rank_key(name, query),
            0 if item["path"] in opened else 1,
            -int(item["_uses"]),
            order,
            item["path"],
        )

    ranked, seen = [], set()
    for item in sorted(items, key=key):
        ident = (item["kind"], item["path"], item.get("line"))
        if ident in seen:
            continue
        seen.add(ident)
        item.pop("_uses", None)
        item["uri"] = (root / item["path"].rstrip("/")).as_uri()
        item["label"] = listed(item["label"])  # one line in the editor's list (`\n` escaped)
        if "detail" in item:
            item["detail"] = listed(item["detail"])
        ranked.append(item)
        if len(ranked) >= limit:
            break
    return {"items": ranked, "indexed": indexed}


def _limit(value: int) -> int:
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidParams(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return value


def _skills(root: Path) -> Any:
    from skills_registry import discovery

    return discovery.discover_skills(root)


@kiln_method("kiln/complete/mentions")
async def mentions(ls: KilnServer, params: CompleteParams) -> dict[str, Any]:
    limit = _limit(params.limit)
    root = ls.root or Path.cwd()
    sync = ls.index_sync
    db = sync.index.db_path if sync is not None and sync.index is not None else None
    if sync is not None:
        await sync.flush()  # a symbol typed a moment ago is offered
    docs = getattr(ls.workspace, "text_documents", {}) or {}
    paths = [p for p in (uri_to_path(d.uri) for d in list(docs.values())) if p is not None]
    return await asyncio.to_thread(mention_items, root, db, paths, params.query, limit)


@kiln_method("kiln/complete/commands")
async def commands(ls: KilnServer, params: CompleteParams) -> dict[str, Any]:
    query = params.query.lstrip("/").lower()
    items = [
        {"name": n, "kind": "builtin", "args": a, "description": d} for n, a, d in BUILTIN_COMMANDS
    ]
    catalog = await asyncio.to_thread(_skills, ls.root or Path.cwd())
    names = {n for n, _, _ in BUILTIN_COMMANDS}
    items += [
        {"name": s.name, "kind": "skill", "args": "", "description": s.description}
        for s in sorted(catalog.skills.values(), key=lambda s: s.name)
        if s.name not in names
    ]
    items = [i for i in items if i["name"].lower().startswith(query)]
    return {"commands": items}


@kiln_method("kiln/skills/use")
async def use_skill(ls: KilnServer, params: SkillUseParams) -> dict[str, Any]:
    root = ls.root or Path.cwd()
    catalog = await asyncio.to_thread(_skills, root)
    skill = catalog.get(params.name)
    if skill is None:
        raise CoreError(
            f"no installed skill named {params.name!r}",
            hint="see kiln/skills/list",
            code=REQUEST_FAILED,
        )
    block = await asyncio.to_thread(skill_block, skill, root)
    return {"name": skill.name, "description": skill.description, "block": block}


@kiln_method("kiln/session/compact")
async def compact(ls: KilnServer, params: SessionRef) -> dict[str, Any]:
    core = ls.core()
    session = core.get(params.session_id)
    if core.is_busy(session.id):
        raise TurnInProgress("a turn is running", hint="stop it or wait, then compact")
    # held as a turn is: a prompt meanwhile is refused, kiln/session/cancel stops it, and
    # another Kiln process cannot run a turn in the session (``core_commands.compact``)
    done: list[CompactionRecord | None] = []

    async def work() -> None:
        done.append(await core_commands.compact(core, session.id))

    await core.run_command(session.id, work)
    record = done[0] if done else None
    if record is None:
        return {"compacted": False}
    return {
        "compacted": True,
        "beforeTokens": record.before_tokens,
        "afterTokens": record.after_tokens,
    }


HANDLERS: list[Callable[..., Awaitable[Any]]] = [mentions, commands, use_skill, compact]
