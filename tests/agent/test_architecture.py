"""The shape of the code: no import cycle in agent/ (type-only imports included), and no
module reading another object's private names in agent/ or lsp_server/."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def import_graph(package: str = "agent") -> dict[str, set[str]]:
    """module -> modules of ``package`` it imports anywhere (top level, in functions, or under
    ``if TYPE_CHECKING``). ``from agent import x`` counts as importing ``agent.x``."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                # ``from pkg import submodule`` imports the submodule, not pkg's own names
                subs = [f"{base}.{a.name}" for a in node.names]
                targets = [s for s in subs if s in modules]
                if len(targets) < len(subs):
                    targets.append(base)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_agent_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph("agent"))
    assert cycle is None, "import cycle in agent/: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_type_checking_imports_count(tmp_path: Path) -> None:
    """A cycle hidden under ``if TYPE_CHECKING`` is still a cycle."""
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent.y import Y\n"
    tree = ast.parse(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "agent.y"]
    assert found  # ast.walk reaches into the if-block, which import_graph relies on


NAMEDTUPLE_API = {"_", "_asdict", "_replace", "_fields", "_make"}  # public despite the underscore
STDLIB_API = {("os", "_exit")}  # documented functions whose names start with an underscore


def private_reads(package: str) -> list[str]:
    """``obj._name`` where ``obj`` is not ``self``/``cls`` (dunders and ``_``-only names aside).

    A module may use its own private module-level helpers; what is refused is reaching into
    another object's private state (``session._index``) or another module's private names
    (``module._helper``)."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__") or attr in NAMEDTUPLE_API:
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Name) and (owner.id, attr) in STDLIB_API:
                continue
            if (
                isinstance(owner, ast.Call)
                and isinstance(owner.func, ast.Name)
                and owner.func.id == "super"
            ):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found.append(f"{where}: {ast.unparse(node)}")
    return found


def test_no_private_reads_across_objects() -> None:
    found = private_reads("agent") + private_reads("lsp_server")
    assert not found, "private names read from outside their object:\n" + "\n".join(found)


PACKAGES = ("kiln_errors", "indexer", "skills_registry", "agent", "lsp_server")
MAY_IMPORT = {  # imports flow one way: kiln_errors <- indexer, skills_registry <- agent <- lsp_server
    "kiln_errors": set(),
    "indexer": {"kiln_errors"},
    "skills_registry": {"kiln_errors"},
    "agent": {"kiln_errors", "indexer", "skills_registry"},
    "lsp_server": {"kiln_errors", "indexer", "skills_registry", "agent"},
}


def project_imports(package: str) -> set[str]:
    """The other project packages that ``package`` imports anywhere (type-only included)."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            found |= {n.split(".")[0] for n in names} & (set(PACKAGES) - {package})
    return found


def test_imports_flow_one_way() -> None:
    for package in PACKAGES:
        extra = project_imports(package) - MAY_IMPORT[package]
        assert not extra, f"{package} imports {sorted(extra)}"


HOST_LIBRARIES = {"pygls", "lsprotocol", "acp"}  # LSP and ACP belong to the host, lsp_server


def library_imports(package: str) -> set[str]:
    """Top-level names of everything ``package`` imports with an absolute import."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_only_the_host_speaks_lsp_or_acp() -> None:
    """``agent`` never knows an editor exists: the protocol libraries are imported by
    ``lsp_server`` alone (and it does import them, so the check looks at real names)."""
    assert library_imports("lsp_server") >= HOST_LIBRARIES
    for package in ("kiln_errors", "indexer", "skills_registry", "agent"):
        found = library_imports(package) & HOST_LIBRARIES
        assert not found, f"{package} imports {sorted(found)}"


def test_errors_share_one_base_class() -> None:
    from agent.errors import KilnError as AgentBase
    from indexer.errors import IndexerError
    from kiln_errors import KilnError
    from skills_registry.errors import SkillsError
    from skills_registry.registry.errors import RegistryError

    assert AgentBase is KilnError
    assert all(issubclass(c, KilnError) for c in (IndexerError, SkillsError, RegistryError))


def test_no_import_error_guard_around_project_modules() -> None:
    """A broken import of our own code must fail loudly, not switch a feature off."""
    found = []
    for package in (*PACKAGES, "bench", "tests"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Try):
                    continue
                caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
                if not caught & {"ImportError", "ModuleNotFoundError"}:
                    continue
                imported = project_imports_in(node.body)
                if imported:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(imported)}")
    assert not found, "except ImportError around project modules:\n" + "\n".join(found)


def project_imports_in(body: list[ast.stmt]) -> set[str]:
    names = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names & set(PACKAGES)


MAX_MODULE_LINES = 399  # STYLE.md: one concern per module, no module over ~400 lines


def test_no_module_reaches_400_lines() -> None:
    """A module that grows past this has a second concern to split out (as the registry
    client's answer reading went to ``skills_registry.client_answers``)."""
    long = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "split these modules:\n" + "\n".join(long)
