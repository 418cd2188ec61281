"""The layers of ``actors`` and their one import direction, followed transitively.

Every module of ``actors`` and ``messages`` is parsed with ``ast``; its imports become edges of
a graph (``parse_imports``). An edge *runs* when the module or one of its functions imports
(function-local imports included: they run when called); an edge under ``if TYPE_CHECKING:``
is *typing only* (it never runs, but it is still a dependency of the design). Only explicit
imports are followed: ``import actors.core.timetable`` also runs ``actors/__init__.py``, as
every submodule does, and that is Python's doing, not the module's.

The checks (``docs/architecture.md`` draws them):

- **the layer rule**: a module reaches, through any chain of imports, only its own layer and
  those its layer may import (``MAY_IMPORT``); the rule itself points one way;
- **the pure core** (``actors/core/``, the pure modules elsewhere and ``messages``) reaches no
  thread, clock, actor, event loop or database module, through any chain of imports that runs;
  it reads a clock nowhere and never reads the state of a token or a claim;
- **messages** reach nothing of ``actors``;
- **no import cycle** between modules.

What breaks a rule today is listed (``KNOWN_UPWARD_ARROWS``, ``KNOWN_CYCLES``), each with the
issue-23 step that removes it; a listed exception that no longer happens fails too, so the
lists only shrink.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("actors", "messages")


@dataclass(frozen=True)
class ModuleImports:
    """What one module imports: module names, ours in full, others by their top-level name."""

    runs: frozenset[str]
    """Imported at module level or inside a function: run when the module (or function) is."""
    typing: frozenset[str] = frozenset()
    """Imported under ``if TYPE_CHECKING:`` only: never run."""


Graph = Mapping[str, ModuleImports]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def parse_imports(source: str, name: str, *, is_package: bool, modules: Iterable[str]) -> ModuleImports:
    """The imports of module ``name`` (with ``source``), resolved against the known ``modules``."""
    known = set(modules)
    runs: set[str] = set()
    typing: set[str] = set()

    def targets(node: ast.Import | ast.ImportFrom) -> set[str]:
        if isinstance(node, ast.Import):
            return {alias.name for alias in node.names}
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            imported = ".".join([*base, node.module] if node.module else base)
        else:
            imported = node.module or ""
        # ``from package import module`` imports the module, not what the package defines
        submodules = {f"{imported}.{alias.name}" for alias in node.names} & known
        if len(submodules) == len(node.names):
            return submodules
        return {imported} | submodules

    def visit(node: ast.AST, into: set[str]) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                visit(child, typing)
            for child in node.orelse:
                visit(child, into)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            into.update(t if t.split(".")[0] in PACKAGES else t.split(".")[0] for t in targets(node))
            return
        for child in ast.iter_child_nodes(node):
            visit(child, into)

    visit(ast.parse(source), runs)
    return ModuleImports(frozenset(runs - {"__future__"}), frozenset(typing - runs))


def load_graph() -> dict[str, ModuleImports]:
    paths = {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}
    return {
        name: parse_imports(path.read_text(), name, is_package=path.name == "__init__.py", modules=paths)
        for name, path in paths.items()
    }


GRAPH = load_graph()


def chain_to(
    graph: Graph,
    start: str,
    goal: Callable[[str], bool],
    *,
    typing: bool = False,
    skip: Callable[[str, str], bool] = lambda importer, imported: False,
) -> list[str] | None:
    """The shortest chain of imports from ``start`` to a module ``goal`` accepts, or ``None``.

    Follows the edges that run (and the typing-only ones too if ``typing``), never an edge
    ``skip`` accepts. External modules end a chain (their own imports are not ours to check).
    """
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        if module != start and goal(module):
            path = [module]
            while (previous := came_from[path[-1]]) is not None:
                path.append(previous)
            return path[::-1]
        imports = graph.get(module)
        if imports is None:
            continue
        for imported in sorted(imports.runs | (imports.typing if typing else frozenset())):
            if imported not in came_from and not skip(module, imported):
                came_from[imported] = module
                queue.append(imported)
    return None


def import_cycles(graph: Graph, *, typing: bool = False) -> list[frozenset[str]]:
    """Every set of modules that import each other in a circle (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def edges(module: str) -> list[str]:
        imports = graph[module]
        return sorted(m for m in imports.runs | (imports.typing if typing else frozenset()) if m in graph)

    def connect(module: str) -> None:  # recursive: the graph is a few hundred modules deep at most
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in edges(module):
            if imported not in index:
                connect(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            part = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.add(member)
                if member == module:
                    break
            if len(part) > 1 or module in edges(module):
                found.append(frozenset(part))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return found


# --- the layers ------------------------------------------------------------------------------

TOP = "top"
"""The public face (``actors/__init__.py``), the entry points, the demo and the command line."""


def layer_of(module: str) -> str:
    """The layer a module of ``actors`` or ``messages`` belongs to: its folder, mostly."""
    parts = module.split(".")
    if parts[0] == "messages":
        return "messages"
    if module in ("actors.errors", "actors.references"):
        return "base"
    if len(parts) > 1 and parts[1] in ("sync", "core", "runtime", "process", "shared", "api", "store"):
        return parts[1]
    return TOP  # actors, actors.__main__, actors.demo, actors.cli.*


MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "messages": frozenset(),
    "base": frozenset(),
    "sync": frozenset({"base", "messages"}),
    "core": frozenset({"sync", "base", "messages"}),  # of sync/ directly: CORE_MAY_IMPORT_FROM_SYNC
    "store": frozenset({"base", "messages"}),
    "process": frozenset({"base", "messages"}),
    "runtime": frozenset({"core", "sync", "process", "store", "base", "messages"}),
    "shared": frozenset({"runtime", "core", "sync", "process", "store", "base", "messages"}),
    "api": frozenset({"shared", "runtime", "core", "sync", "process", "store", "base", "messages"}),
    TOP: frozenset({"api", "shared", "runtime", "core", "sync", "process", "store", "base", "messages"}),
}
"""The layers each layer may reach (directly or not) besides its own: all of them below it."""

CORE_MAY_IMPORT_FROM_SYNC = frozenset({"actors.sync.token", "actors.sync.claim"})
"""What the pure core imports of ``actors.sync`` itself: the shared state it makes moves on (never
reads), a task's token and a run's claim. What they import in turn is theirs (the token waits)."""

KNOWN_UPWARD_ARROWS: Mapping[tuple[str, str], str] = {}
"""Imports that point up a layer today, each with the issue-23 work that will remove it."""

KNOWN_CYCLES: Mapping[frozenset[str], str] = {}
"""Import cycles through edges that run: the set of modules, and why it is not broken yet."""

KNOWN_TYPING_CYCLES: Mapping[frozenset[str], str] = {}
"""Cycles that exist only through ``TYPE_CHECKING`` imports (never run, but still a circle)."""

FACADE = frozenset(
    {
        "actors.api.facade",
        "actors.api.plumbing",
        "actors.api.submitting",
        "actors.api.scheduling",
        "actors.api.messaging",
        "actors.api.queries",
        "actors.api.observing",
        "actors.api.local_tasks",
    }
)
"""``Scheduler`` (``facade.py``), the parts it inherits its methods from, and ``LocalTasks``, the
part it is composed with (its directory of the tasks its own scheduler actor holds)."""
FACADE_FRIENDS = (
    "actors.api.port",
    "actors.api.directory",
    "actors.api.handles",
    "actors.api.stepping",
    "actors.api.shared_tasks",
    "actors.api.shared_handles",
)
"""What the facade builds and hands its friend surface (``actors/api/port.py``) to: they name
``SchedulerPort``, never ``Scheduler``."""


def allowed(importer: str, imported: str) -> bool:
    """Whether ``importer`` may reach ``imported`` under the layer rule."""
    if imported.split(".", maxsplit=1)[0] not in PACKAGES:
        return True
    mine, theirs = layer_of(importer), layer_of(imported)
    return theirs == mine or theirs in MAY_IMPORT[mine]


def core_imports_from_sync(graph: Graph) -> list[str]:
    """Every import of ``actors.sync`` by the core other than ``CORE_MAY_IMPORT_FROM_SYNC``."""
    return [
        f"{module} -> {imported}"
        for module, imports in sorted(graph.items())
        if layer_of(module) == "core"
        for imported in sorted(imports.runs | imports.typing)
        if imported.split(".")[0] in PACKAGES
        and layer_of(imported) == "sync"
        and imported not in CORE_MAY_IMPORT_FROM_SYNC
    ]


def upward_arrows(graph: Graph, known: Iterable[tuple[str, str]] = ()) -> list[str]:
    """Every module that reaches a module its layer may not import, with the chain that does it.

    A known arrow is not followed: what lies behind it is checked from its own modules.
    """
    skipped = set(known)
    found = []
    for module in sorted(graph):
        chain = chain_to(
            graph,
            module,
            lambda reached, module=module: not allowed(module, reached),
            typing=True,
            skip=lambda importer, imported: (importer, imported) in skipped,
        )
        if chain is not None:
            found.append(" -> ".join(chain))
    return found


# --- the pure modules ------------------------------------------------------------------------

PURE_ELSEWHERE = (
    "actors.shared.plan",
    "actors.shared.view",
    "actors.cli.jobkeys",
    "actors.cli.reconcile",
    "actors.cli.rows",
    "actors.store.trigger_json",
)
"""Pure modules outside ``actors/core/``: the shared node's plan and its view of a row; the
command line's reading of a job's keys, its plan of what to change and its rows; the one
reader of a stored trigger."""

PURE_OWN_IMPORTS = ("actors.cli.jobfile",)
"""Modules whose own imports are pure but which reach more: the job file checks a PostgreSQL URL
through ``actors.cli.stores``, which imports psycopg (function-local: only for such a URL)."""

PURE_MODULES = sorted({m for m in GRAPH if layer_of(m) in ("core", "messages")} | set(PURE_ELSEWHERE))

FORBIDDEN = frozenset(
    {
        "threading",
        "_thread",
        "time",
        "asyncio",
        "concurrent",
        "multiprocessing",
        "subprocess",
        "pykka",
        "sqlite3",
        "psycopg",
        "psycopg_pool",
    }
)
"""What the pure modules never reach: threads, clocks, event loops, actors, databases."""

PURE_MAY_REACH: Mapping[str, str] = {
    "actors.sync.token": "holds the lock of a task's run state: the core makes moves on it",
    "actors.errors": (
        "imports concurrent.futures for CancelledError, the builtin base of RunCancelled (so a"
        " caller's `except CancelledError` catches it); it starts and reads nothing"
    ),
}
"""Modules the pure ones may import though they reach ``FORBIDDEN`` themselves; not followed."""


def impure_chain(graph: Graph, module: str, may_reach: Iterable[str] = PURE_MAY_REACH) -> list[str] | None:
    """The chain of imports that run by which ``module`` reaches a forbidden one, or ``None``."""
    stops = set(may_reach)
    return chain_to(
        graph,
        module,
        lambda reached: reached.split(".")[0] in FORBIDDEN,
        skip=lambda importer, imported: imported in stops,
    )


def module_path(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


CLOCK_READS = {"now", "utcnow", "today", "monotonic", "perf_counter", "time_ns", "monotonic_ns"}

SHARED_STATE_READS = {
    "token_state",
    "_token",
    "_ops",
    "held",
    "_outcome",
    "_free",
    "taken",
    "outcome",
    "wait_ended",
    "stop",
    "run_ended",
}
"""What shows the state of a token or a claim. The pure core may only make moves on them
(``try_start``, ``end_run``, ``revoke``, ``take``, ``finish``, ``request_stop``, ``stop_reasons``,
``abandon_run``, ``hold``, ``release_hold``, ``claim_manual``, ``drop_claim``) and act on each
move's result: a read would be a decision made on state
another thread may be changing."""
OWN_STATE = {
    "actors.sync.claim": {"_free", "stop", "run_ended"},
    "actors.core.task_record": {"_token", "_outcome"},
}
"""A module may touch the state it implements: the claim's move is written on ``_free``, and a
new ``TaskRecord`` sets up its own token (before anyone else can see the record)."""

SHARED_STATE_CHECKED = sorted({*PURE_MODULES, *PURE_OWN_IMPORTS, "actors.sync.claim"})
"""The pure modules and the claim (pure itself: its move is a bytearray's)."""


def reads(node: ast.AST, forbidden: frozenset[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in forbidden
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
        and any(isinstance(arg, ast.Constant) and arg.value in forbidden for arg in node.args)
    )


def shared_state_reads(source: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """Every access to a forbidden name, in file order: ``x.name``, ``getattr(x, "name")`` and the like."""
    forbidden = frozenset(SHARED_STATE_READS - allowed)
    found = sorted(
        (node.lineno, node.col_offset, ast.unparse(node))
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.expr) and reads(node, forbidden)
    )
    return [f"line {line}: {code}" for line, _, code in found]


def clock_reads(source: str) -> list[str]:
    return [
        ast.unparse(node.func)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCK_READS
    ]


# --- the tests -------------------------------------------------------------------------------


def test_every_module_is_found_and_has_a_layer() -> None:
    layers = {layer_of(m) for m in GRAPH}
    assert layers == set(MAY_IMPORT)
    assert {m for m in GRAPH if layer_of(m) == "core"} >= {"actors.core.timetable", "actors.core.parked"}
    assert all(module in GRAPH for module in (*PURE_ELSEWHERE, *PURE_MAY_REACH, *CORE_MAY_IMPORT_FROM_SYNC))
    direct = sorted(p.name for p in (ROOT / "actors").glob("*.py"))
    assert direct == ["__init__.py", "__main__.py", "demo.py", "errors.py", "references.py"]


@pytest.mark.parametrize("layer", ["sync", "core", "runtime", "process", "shared", "api"])
def test_each_layer_folder_states_its_rule_and_exports_nothing(layer: str) -> None:
    tree = ast.parse((ROOT / "actors" / layer / "__init__.py").read_text())
    docstring = ast.get_docstring(tree) or ""
    assert "Rule:" in docstring
    assert "tests/unit/test_layers.py" in docstring
    assert len(tree.body) == 1, f"actors/{layer}/__init__.py holds more than its docstring"


def test_the_layer_rule_points_one_way() -> None:
    for layer, below in MAY_IMPORT.items():
        assert layer not in below
        for lower in below:
            assert layer not in MAY_IMPORT[lower], f"{layer} and {lower} may import each other"
            assert MAY_IMPORT[lower] <= below, f"{layer} reaches below {lower} what it may not import"


def test_no_module_reaches_up_a_layer() -> None:
    found = upward_arrows(GRAPH, known=KNOWN_UPWARD_ARROWS)
    assert not found, "imports against the layer rule (docs/architecture.md):\n" + "\n".join(found)


def test_each_known_upward_arrow_is_still_there() -> None:
    for importer, imported in sorted(KNOWN_UPWARD_ARROWS):  # none left today: the list only shrinks
        assert not allowed(importer, imported)
        assert imported in GRAPH[importer].runs | GRAPH[importer].typing, f"{importer} -> {imported} gone"


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_reach_no_thread_clock_actor_or_database(module: str) -> None:
    chain = impure_chain(GRAPH, module)
    assert chain is None, "a pure module reaches " + " -> ".join(chain or [])


@pytest.mark.parametrize("module", PURE_OWN_IMPORTS)
def test_modules_pure_in_their_own_imports_import_no_thread_clock_actor_or_database(module: str) -> None:
    bad = {m for m in GRAPH[module].runs if m.split(".")[0] in FORBIDDEN}
    assert not bad, f"{module} imports {bad}"


def test_the_core_imports_of_sync_only_the_token_and_the_claim() -> None:
    assert core_imports_from_sync(GRAPH) == []


@pytest.mark.parametrize("module", [*PURE_MODULES, *PURE_OWN_IMPORTS])
def test_pure_modules_read_no_clock(module: str) -> None:
    calls = clock_reads(module_path(module).read_text())
    assert not calls, f"{module} reads a clock: {calls}"


@pytest.mark.parametrize("module", SHARED_STATE_CHECKED)
def test_pure_modules_never_read_the_state_of_a_token_or_a_claim(module: str) -> None:
    found = shared_state_reads(module_path(module).read_text(), frozenset(OWN_STATE.get(module, ())))
    assert not found, f"{module} reads the state of a token or a claim: {found}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer_of(m) == "messages"))
def test_messages_reach_nothing_of_actors(module: str) -> None:
    chain = chain_to(GRAPH, module, lambda reached: reached.split(".")[0] == "actors", typing=True)
    assert chain is None, " -> ".join(chain or [])


def test_no_import_cycle_through_imports_that_run() -> None:
    assert set(import_cycles(GRAPH)) == set(KNOWN_CYCLES)


def test_no_import_cycle_through_type_checking_imports() -> None:
    running = set(import_cycles(GRAPH))
    typing_only = set(import_cycles(GRAPH, typing=True)) - running
    assert typing_only == set(KNOWN_TYPING_CYCLES)


@pytest.mark.parametrize("module", FACADE_FRIENDS)
def test_the_friends_of_the_facade_reach_nothing_of_it(module: str) -> None:
    chain = chain_to(GRAPH, module, lambda reached: reached in FACADE, typing=True)
    assert chain is None, "a friend of the facade imports it: " + " -> ".join(chain or [])


# --- the checker catches what it is for ------------------------------------------------------


def synthetic(**imports: str) -> dict[str, ModuleImports]:
    """A graph from ``name="imported imported ..."``; a ``?`` marks a typing-only import."""
    graph = {}
    for name, targets in imports.items():
        words = targets.split()
        graph[name.replace("__", ".")] = ModuleImports(
            frozenset(w for w in words if not w.startswith("?")),
            frozenset(w[1:] for w in words if w.startswith("?")),
        )
    return graph


def test_the_checker_catches_a_transitive_impurity() -> None:
    graph = synthetic(
        actors__core__a="actors.core.b math",
        actors__core__b="actors.sync.waiting",  # not a state the core may make moves on
        actors__sync__waiting="threading",
        actors__core__c="actors.sync.token",
        actors__sync__token="actors.sync.waiting",
    )
    assert impure_chain(graph, "actors.core.a") == [
        "actors.core.a",
        "actors.core.b",
        "actors.sync.waiting",
        "threading",
    ]
    assert impure_chain(graph, "actors.core.c") is None  # through the token, as allowed
    assert impure_chain(graph, "actors.core.c", may_reach=()) is not None


def test_the_checker_catches_a_transitive_arrow_up_a_layer() -> None:
    graph = synthetic(
        actors__core__a="actors.core.b",
        actors__core__b="actors.errors",
        actors__errors="?actors.runtime.scheduler",  # typing only: still a dependency
        actors__runtime__scheduler="actors.shared.node",
        actors__shared__node="actors.core.a",
    )
    assert upward_arrows(graph, known=[("actors.runtime.scheduler", "actors.shared.node")]) == [
        "actors.core.a -> actors.core.b -> actors.errors -> actors.runtime.scheduler",
        "actors.core.b -> actors.errors -> actors.runtime.scheduler",
        "actors.errors -> actors.runtime.scheduler",
    ]
    assert "actors.runtime.scheduler -> actors.shared.node" in upward_arrows(graph)


def test_the_checker_catches_the_core_importing_more_of_sync() -> None:
    graph = synthetic(
        actors__core__a="actors.sync.claim actors.sync.token",
        actors__core__b="?actors.sync.outbox",
        actors__sync__token="actors.sync.waiting",
    )
    assert core_imports_from_sync(graph) == ["actors.core.b -> actors.sync.outbox"]


def test_the_checker_finds_cycles_and_tells_typing_only_ones_apart() -> None:
    graph = synthetic(
        actors__api__a="actors.api.b",
        actors__api__b="actors.api.c",
        actors__api__c="actors.api.a",
        actors__api__d="actors.api.e",
        actors__api__e="?actors.api.d",
        actors__api__f="actors.api.f",
    )
    expected = {frozenset({"actors.api.a", "actors.api.b", "actors.api.c"}), frozenset({"actors.api.f"})}
    assert set(import_cycles(graph)) == expected
    assert set(import_cycles(graph, typing=True)) == expected | {frozenset({"actors.api.d", "actors.api.e"})}


def test_the_parser_sees_local_typing_and_relative_imports() -> None:
    source = (
        "from __future__ import annotations\n"
        "import threading\n"
        "from typing import TYPE_CHECKING\n"
        "from actors.core import timetable\n"
        "from .retry import Retry\n"
        "if TYPE_CHECKING:\n"
        "    from actors.api.facade import Scheduler\n"
        "def later():\n"
        "    import concurrent.futures\n"
        "    from actors.sync.clock import FakeClock\n"
    )
    imports = parse_imports(
        source,
        "actors.core.cron",
        is_package=False,
        modules=["actors.core", "actors.core.timetable", "actors.core.retry", "actors.api.facade"],
    )
    assert imports.runs == {
        "threading",
        "typing",
        "actors.core.timetable",
        "actors.core.retry",
        "concurrent",
        "actors.sync.clock",
    }
    assert imports.typing == {"actors.api.facade"}


def test_the_old_checks_still_catch_clock_and_shared_state_reads() -> None:
    assert clock_reads("import datetime\nx = datetime.datetime.now()\n") == ["datetime.datetime.now"]
    source = (
        "def decide(task, claim):\n"
        "    if task.token_state is RUNNING:\n"  # a read of the token
        "        return claim._free\n"  # a read of the claim
        "    state = getattr(task, 'outcome')\n"  # the same, spelt differently
        "    task.revoke()\n"
        "    return task.take() and claim.take() and task.try_start(True)\n"  # moves: fine
    )
    assert shared_state_reads(source) == [
        "line 2: task.token_state",
        "line 3: claim._free",
        "line 4: getattr(task, 'outcome')",
    ]
    assert shared_state_reads("def end(task, outcome):\n    task.end_run()\n    task.finish(outcome)\n") == []
