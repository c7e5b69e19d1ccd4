"""The layout's one-way rule, checked on the source: every import (module level or inside a function)
points down the wing order, and no set of modules imports itself round in a circle.

    cli -> api -> channels | mcp -> advisor -> (offline | llm) -> core -> (knowledge, grounding) -> tools
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tools", "knowledge", "bot")

# (prefix, rank, wing): the longest matching prefix wins; a module may import only ranks <= its own,
# and two different wings of the same rank (offline and llm; channels and mcp) may not import each other.
WINGS = [
    ("tools", 0, "tools"),
    ("knowledge", 1, "knowledge"),
    ("bot.grounding", 1, "grounding"),
    ("bot.core.trace", 2, "core"),
    ("bot.core.language", 2, "core"),
    ("bot.core.settings", 2, "core"),
    ("bot.core.planner", 2, "core"),
    ("bot.core.toolbox", 2, "core"),
    ("bot.core.store", 2, "core"),
    ("bot.core.redis_client", 2, "core"),
    ("bot.offline", 3, "offline"),
    ("bot.llm", 3, "llm"),
    ("bot.answer.advisor", 4, "advisor"),
    ("bot.answer.gate", 4, "advisor"),
    ("bot", 4, "advisor"),  # the package's own __init__ (lazy `from bot import Advisor`)
    ("bot.channels", 5, "channels"),
    ("bot.mcp.server", 5, "mcp"),
    ("bot.api", 6, "api"),
    ("bot.cli", 7, "cli"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def wing(name: str) -> tuple[int, str] | None:
    best = None
    for prefix, rank, label in WINGS:
        if (name == prefix or name.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, rank, label)
    return (best[1], best[2]) if best else None


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules imported anywhere in the file (resolved to the longest known module name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] in PACKAGES and target != name:
                found.add(target)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def test_every_module_has_a_wing(graph):
    assert [m for m in graph if wing(m) is None] == []


def test_imports_point_down_the_wing_order(graph):
    upward = []
    for mod, targets in graph.items():
        rank, label = wing(mod)
        for target in targets:
            t_rank, t_label = wing(target)
            if t_rank > rank or (t_rank == rank and t_label != label and "core" not in (label, t_label)):
                upward.append(f"{mod} ({label}) imports {target} ({t_label})")
    assert upward == []


def test_tools_stand_alone(graph):
    assert [f"{m} -> {t}" for m, ts in graph.items() if m.startswith("tools") for t in ts
            if not t.startswith("tools")] == []


def test_no_import_circles(graph):
    """Tarjan's strongly connected components: any component of two or more modules is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def test_the_checker_sees_an_upward_import(tmp_path):
    """The walker itself: a lazy import inside a function is found and resolved to its module."""
    src = tmp_path / "x.py"
    src.write_text("def f():\n    from bot.api.app import create_app\n    return create_app\n", encoding="utf-8")
    assert imports_of("bot.offline.x", src, {"bot.api.app", "bot.api"}) == {"bot.api.app"}
    assert wing("bot.api.app") == (6, "api") and wing("bot.offline.rules") == (3, "offline")


def test_public_entry_points():
    from bot import Advisor
    from knowledge import Passage, search

    assert Advisor.__name__ == "Advisor" and callable(Advisor.from_settings)
    assert callable(search) and not hasattr(search, "__path__") and "query" in search.__code__.co_varnames
    assert Passage.__name__ == "Passage"
