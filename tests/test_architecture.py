"""The stage packages import downwards only: no cycle, no lower stage importing a higher one.

CONTRIBUTING.md gives the order io → locations → model → inference → synthesis → risk →
utility → pipeline → release → api → cli; ``config`` sits above ``locations`` (its keys are
checked with the location policy) and below ``model``; ``masking`` beside it; ``studies``
between ``release`` and ``api``; the private root modules and ``compute`` at the bottom. Every
import in ``src/synthgeo`` counts, at module level and inside a function (a lazy import still
ties the two packages); the package root's lazy re-exports (``synthgeo/__init__.py``) are the
only exception (issue 22).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import synthgeo

SRC = Path(synthgeo.__file__).resolve().parent

#: Rank of each top-level package or module of synthgeo: an import must go to a lower rank.
RANK = {
    "_errors": 0, "_seed": 0, "_progress": 0, "_versions": 0, "_allocator": 0, "_repr": 0,
    "_warn": 0, "_gc": 0, "_spill": 0,
    "compute": 0,
    "io": 1, "register": 1.5, "locations": 2, "config": 3, "masking": 3, "model": 4,
    "inference": 5, "synthesis": 6, "risk": 7, "utility": 8, "pipeline": 9, "release": 10,
    "studies": 11, "verification": 11,
    "api": 12, "cli": 13, "testing": 13, "__main__": 14,
}


def _unit(path: Path) -> str | None:
    """The top-level package or module `path` belongs to (None for the package root)."""
    rel = path.relative_to(SRC)
    if len(rel.parts) == 1:
        return None if rel.stem == "__init__" else rel.stem
    return rel.parts[0]


def _imports() -> dict[tuple[str, str], list[str]]:
    """``(importer, imported) -> ["file:line", ...]`` over every import statement."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        src = _unit(path)
        if src is None:  # the root's lazy re-exports
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom):  # relative: resolve against the package
                names = [".".join(path.relative_to(SRC.parent).parts[:-node.level])
                         + (f".{node.module}" if node.module else "")]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] != "synthgeo" or len(parts) < 2 or parts[1] == src:
                    continue
                where = f"{path.relative_to(SRC.parent).as_posix()}:{node.lineno}"
                edges[(src, parts[1])].append(where)
    return edges


def _cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan)."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_every_unit_has_a_rank():
    units = {_unit(p) for p in SRC.rglob("*.py")} - {None}
    assert units <= set(RANK), f"give {sorted(units - set(RANK))} a rank in RANK"


def test_no_import_cycle_between_stage_packages():
    edges = _imports()
    cycles = _cycles(edges)
    detail = {" ↔ ".join(c): [w for (a, b), ws in edges.items() if a in c and b in c
                              for w in ws[:2]] for c in cycles}
    assert not cycles, f"import cycles between stage packages: {detail}"


def test_no_stage_imports_a_higher_one():
    upward = {f"{a} → {b}": ws for (a, b), ws in _imports().items()
              if RANK.get(a, 99) <= RANK.get(b, 99)}
    assert not upward, f"a lower stage imports a higher (or same-rank) one: {upward}"
