"""The layout, checked on the source (docs/architecture.md draws it):

- every module lives in a declared wing: a folder (its own modules, not its subfolders'), or one of the
  few modules that rank apart from their folder's other modules; no wing is a catch-all;
- every import (module level or inside a function) points down the wing order, and two sibling wings
  (offline and llm; channels and mcp; the channel adapters) never import each other;
- no set of modules imports itself round in a circle;
- folders stay at about 15 modules and modules under about 400 lines.

    cli -> api (app -> routes -> base) -> channels | mcp -> answer -> offline | llm -> core
        -> knowledge, grounding -> tools (recommend -> speed | money -> memory | specs -> schemas -> catalog -> base)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tools", "knowledge", "bot")

#: wing -> its place: a path of (rank, label) steps. Two wings are compared at the first step where they
#: differ: a lower rank may be imported, a higher one may not, and the same rank under another label is a
#: sibling, which may not be imported either.
WINGS: dict[str, tuple[tuple[int, str], ...]] = {
    "tools": ((0, "tools"), (0, "base")),  # errors, units, memo, yaml_data, registry (names tools by string)
    "tools.catalog": ((0, "tools"), (1, "catalog")),
    "tools.schemas": ((0, "tools"), (2, "schemas")),
    "tools.memory": ((0, "tools"), (3, "memory")),
    "tools.specs": ((0, "tools"), (3, "specs")),  # the module of gpu_specs and compare_gpus
    "tools.speed": ((0, "tools"), (4, "speed")),
    "tools.money": ((0, "tools"), (4, "money")),
    "tools.recommend": ((0, "tools"), (5, "recommend")),
    "tools.diagnose": ((0, "tools"), (6, "diagnose")),  # reads the memory and speed calculators
    "tools.plan": ((0, "tools"), (6, "plan")),
    "knowledge": ((1, "knowledge"),),
    "bot.grounding": ((1, "grounding"),),
    "bot.core": ((2, "core"),),
    "bot.offline.understand": ((3, "offline"), (0, "understand")),
    "bot.offline.understand.request": ((3, "offline"), (0, "understand")),
    "bot.offline.understand.paste": ((3, "offline"), (0, "understand")),  # pasted logs, commands, configs
    "bot.offline.understand.cards": ((3, "offline"), (0, "understand")),  # what is said about the cards beyond names
    "bot.offline.say": ((3, "offline"), (1, "say")),
    "bot.offline.compose": ((3, "offline"), (2, "compose")),
    "bot.offline.compose.systems": ((3, "offline"), (2, "compose")),  # capacity, machines, rent or buy as used
    "bot.offline.compose.sizes": ((3, "offline"), (2, "compose")),  # the same answer for other model sizes
    "bot.offline.compose.measured": ((3, "offline"), (2, "compose")),  # a gap measured between two cards
    "bot.offline": ((3, "offline"), (3, "planner")),
    "bot.llm": ((3, "llm"),),
    "bot.answer": ((4, "answer"),),
    "bot.channels": ((5, "channels"), (0, "delivery")),
    "bot.channels.slack": ((5, "channels"), (1, "slack")),
    "bot.channels.wecom": ((5, "channels"), (1, "wecom")),
    "bot.channels.widget": ((5, "channels"), (1, "widget")),
    "bot.mcp": ((5, "mcp"),),
    "bot.api": ((6, "api"), (0, "base")),
    "bot.api.routes": ((6, "api"), (1, "routes")),
    "bot.api.app": ((6, "api"), (2, "app")),  # the factory and lifespan: mounts every route
    "bot.cli": ((7, "cli"),),
    "bot.cli.sales": ((7, "cli"),),  # the sales team's commands: its price book
    "bot": ((8, "package"),),  # bot/__init__.py alone: the lazy `from bot import Advisor`
}
#: folders that hold their __init__ and nothing else (so that they cannot become a catch-all)
ONLY_INIT = ("bot",)
MAX_MODULES_PER_FOLDER = 15
MAX_LINES_PER_MODULE = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def folder_of(name: str, path: Path) -> str:
    """The package a module belongs to: itself for a package's __init__, else its parent package."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def wing(name: str, path: Path | None = None) -> str | None:
    """The module's wing: the module itself where it ranks apart, else its folder, if either is declared."""
    if name in WINGS:
        return name
    folder = folder_of(name, path) if path is not None else name.rpartition(".")[0]
    return folder if folder in WINGS else None


def direction(src: str, dst: str) -> str:
    """'down' (allowed), 'up' or 'sibling' (both refused) for an import from wing `src` to wing `dst`."""
    if src == dst:
        return "down"
    for (r1, l1), (r2, l2) in zip(WINGS[src], WINGS[dst]):
        if (r1, l1) == (r2, l2):
            continue
        if r1 == r2:
            return "sibling"
        return "down" if r2 < r1 else "up"
    return "down"


def unplaced(mods: dict[str, Path]) -> list[str]:
    """Modules outside every wing, and modules in a folder that must hold only its __init__."""
    out = [m for m, p in mods.items() if wing(m, p) is None]
    out += [m for m, p in mods.items() if p.name != "__init__.py" and folder_of(m, p) in ONLY_INIT]
    return sorted(out)


def wrong_way(graph: dict[str, set[str]], mods: dict[str, Path]) -> list[str]:
    """Every import that points up the wing order or into a sibling wing."""
    bad = []
    for mod, targets in graph.items():
        src = wing(mod, mods[mod])
        for target in targets:
            dst = wing(target, mods[target])
            if src and dst and direction(src, dst) != "down":
                bad.append(f"{mod} ({src}) imports {target} ({dst}): {direction(src, dst)}")
    return sorted(bad)


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
def mods() -> dict[str, Path]:
    return modules()


@pytest.fixture(scope="module")
def graph(mods) -> dict[str, set[str]]:
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def test_every_module_has_a_wing(mods):
    assert unplaced(mods) == []


def test_every_wing_is_a_package_or_a_module():
    mods = modules()
    assert [w for w in WINGS if w not in mods] == []


def test_imports_point_down_the_wing_order(graph, mods):
    assert wrong_way(graph, mods) == []


def test_folders_and_modules_stay_small(mods):
    folders: dict[str, list[str]] = {}
    for name, path in mods.items():
        if path.name != "__init__.py":
            folders.setdefault(folder_of(name, path), []).append(name)
    assert {f: len(ms) for f, ms in folders.items() if len(ms) > MAX_MODULES_PER_FOLDER} == {}
    long = {
        m: n for m, p in mods.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES_PER_MODULE
    }
    assert long == {}


def test_tools_stand_alone(graph):
    assert [
        f"{m} -> {t}" for m, ts in graph.items() if m.startswith("tools") for t in ts if not t.startswith("tools")
    ] == []


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
    assert wing("bot.api.app") == "bot.api.app" and wing("bot.offline.rules") == "bot.offline"


def test_the_layout_test_fails_on_a_planted_upward_import(tmp_path, mods):
    """A test of the test: plant a calculator that imports the API, and a composer that imports the LLM
    agent; both are refused, and the real graph with them added is no longer clean."""
    planted = tmp_path / "planted.py"
    planted.write_text("from bot.api.app import create_app\n", encoding="utf-8")
    sibling = tmp_path / "sibling.py"
    sibling.write_text("def f():\n    from bot.llm.agent import AgentPlanner\n", encoding="utf-8")
    known = set(mods)
    fake = {**mods, "tools.memory.planted": planted, "bot.offline.compose.sibling": sibling}
    graph = {n: imports_of(n, p, known) for n, p in fake.items()}
    assert wrong_way(graph, fake) == [
        "bot.offline.compose.sibling (bot.offline.compose) imports bot.llm.agent (bot.llm): sibling",
        "tools.memory.planted (tools.memory) imports bot.api.app (bot.api.app): up",
    ]
    assert direction("tools.memory", "tools.speed") == "up" and direction("tools.speed", "tools.memory") == "down"
    assert direction("tools.speed", "tools.money") == "sibling"
    assert direction("bot.offline.compose", "bot.offline.say") == "down"
    assert direction("bot.offline.say", "bot.offline.compose") == "up"


def test_the_layout_test_fails_on_a_module_outside_every_wing(tmp_path, mods):
    stray = tmp_path / "stray.py"
    stray.write_text("", encoding="utf-8")
    assert unplaced({**mods, "bot.newwing.stray": stray, "tools.schemas.extra.deep": stray, "bot.loose": stray}) == [
        "bot.loose",
        "bot.newwing.stray",
        "tools.schemas.extra.deep",
    ]


def test_public_entry_points():
    from bot import Advisor
    from knowledge import Passage, search

    assert Advisor.__name__ == "Advisor" and callable(Advisor.from_settings)
    assert callable(search) and not hasattr(search, "__path__") and "query" in search.__code__.co_varnames
    assert Passage.__name__ == "Passage"
