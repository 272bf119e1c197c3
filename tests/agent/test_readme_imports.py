"""agent/README.md's "Who imports whom" is the import graph the code has (a doc sentence the code
does not hold is a defect), and its file table names every module of agent/."""

from __future__ import annotations

from tests.agent.test_architecture import ROOT, import_graph

README = ROOT / "agent" / "README.md"


def documented_graph() -> dict[str, set[str]]:
    text = README.read_text(encoding="utf-8")
    block = text[text.index("## Who imports whom") :].split("```")[1]
    graph: dict[str, set[str]] = {}
    names: list[str] = []
    for line in block.strip("\n").splitlines():
        if "->" in line:
            left, line = line.split("->", 1)
            names = [n.strip() for n in left.split(",")]
            for name in names:
                graph[name] = set()
        if "(nothing" in line:
            continue
        for name in names:
            graph[name] |= {d.strip() for d in line.split(",") if d.strip()}
    return graph


def test_readme_import_graph_matches_the_code() -> None:
    actual = import_graph("agent")
    for name, deps in documented_graph().items():
        real = {d.removeprefix("agent.") for d in actual[f"agent.{name}"]}
        assert deps == real, f"{name}: README lists {sorted(deps)}, code imports {sorted(real)}"


def test_readme_names_every_module() -> None:
    text = README.read_text(encoding="utf-8")
    modules = [p.name for p in sorted((ROOT / "agent").glob("*.py")) if p.name != "__init__.py"]
    assert [m for m in modules if f"`{m}`" not in text] == []
