"""The house rules of bench/ that a reader cannot see at a glance:

- no import cycles among its modules, counting imports inside functions
  (a lazy import hides a cycle, it does not remove it);
- no module but bench/arches.py asks which arch it is on: no comparison
  with an arch's name and no table keyed by one (every host-side arch fact
  lives in arches.Arch).

The walker is tried on a small package with a cycle, so it can fail."""

import ast
from pathlib import Path

from bench import arches
from bench.paths import REPO

BENCH = REPO / "bench"


def _modules(root: Path) -> dict[str, Path]:
    mods = {}
    for p in root.rglob("*.py"):
        rel = p.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name.removesuffix(".__init__")] = p
    return mods


def _imports(name: str, path: Path, mods: dict) -> set[str]:
    """The package's modules that `name` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - (node.level - 1)]
                head = ".".join(base + ([node.module] if node.module else []))
            else:
                head = node.module
            targets = [head] + [f"{head}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def find_cycles(root: Path) -> list[list[str]]:
    """Every import cycle among the modules under root (Tarjan's SCCs)."""
    mods = _modules(root)
    edges = {m: _imports(m, p, mods) for m, p in mods.items()}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                cycles.append(sorted(comp))
    for m in sorted(edges):
        if m not in index:
            visit(m)
    return cycles


def test_bench_has_no_import_cycles():
    cycles = find_cycles(BENCH)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_walker_finds_a_lazy_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .room import b\n")
    (pkg / "room" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("from . import a\n")
    assert find_cycles(pkg) == [["pkg.a", "pkg.room.b"]]


def test_only_arches_knows_the_arch_names():
    names = set(arches.ARCHES)
    found = []
    for path in BENCH.rglob("*.py"):
        if path == BENCH / "arches.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
            elif isinstance(node, ast.Dict):
                parts = node.keys
            else:
                continue
            for n in parts:
                if isinstance(n, ast.Constant) and n.value in names:
                    found.append(f"{path.relative_to(REPO)}:{n.lineno}: {n.value!r}")
    assert not found, "arch facts outside bench/arches.py:\n  " + "\n  ".join(found)
