"""How the library's modules may depend on each other: no import cycles, and no module imports
another's private names."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mimirlib"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_module(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute name of the module ``from <module> import ...`` reads, relative imports resolved."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_imports(package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """(importer, imported module, private name) for every ``_name`` one mimirlib module imports
    from another, at top level or inside a function; ``import mimirlib._x`` counts too."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        importer = module_name(path, package.parent)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = imported_module(node, importer, path.name == "__init__.py")
                if not (source == "mimirlib" or source.startswith("mimirlib.")) or source == importer:
                    continue
                for alias in node.names:
                    private_module = any(p.startswith("_") and p != "__init__" for p in source.split("."))
                    if alias.name.startswith("_") or private_module:
                        found.add((importer, source, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "mimirlib" and any(p.startswith("_") for p in parts[1:]):
                        found.add((importer, alias.name, alias.name))
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the mimirlib modules it imports (anywhere in it, function-level imports included)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                source = imported_module(node, name, path.name == "__init__.py")
                for alias in node.names:  # `from . import hub` imports the module mimirlib.hub
                    deps.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a loop (Tarjan's algorithm)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles_between_modules():
    """Data flows one way (data -> hub -> benchmark, not back): a cycle, even through an import
    inside a function, means two modules share a piece that belongs in one of them."""
    assert import_cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_loop():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_sees_relative_private_imports(tmp_path):
    tree = ast.parse("from .neighbors import _x, y\nfrom ..data import _z\n")
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported_module(nodes[0], "mimirlib.perturb", False) == "mimirlib.neighbors"
    assert imported_module(nodes[1], "mimirlib.lab.build", False) == "mimirlib.data"
    assert imported_module(nodes[0], "mimirlib.verdicts", True) == "mimirlib.verdicts.neighbors"
    pkg = tmp_path / "mimirlib"
    (pkg / "mlm").mkdir(parents=True)
    (pkg / "neighbors.py").write_text("def _own():\n    pass\n")
    (pkg / "perturb.py").write_text(
        "from .neighbors import _own, generate\n\n\ndef f():\n"
        "    from mimirlib.mlm.words import _fill\n    import mimirlib._hidden\n"
    )
    (pkg / "mlm" / "__init__.py").write_text("from .words import fill\n")
    (pkg / "mlm" / "words.py").write_text("from ._private import x\n")
    assert private_imports(pkg) == {
        ("mimirlib.perturb", "mimirlib.neighbors", "_own"),
        ("mimirlib.perturb", "mimirlib.mlm.words", "_fill"),
        ("mimirlib.perturb", "mimirlib._hidden", "mimirlib._hidden"),
        ("mimirlib.mlm.words", "mimirlib.mlm._private", "x"),
    }


def test_no_module_imports_private_names_of_another():
    """A ``_name`` is private to its module: a name another module needs is public where it lives
    (the masked-LM engine in mimirlib/mlm/ exports what neighbors, perturb and ranges share)."""
    found = sorted(private_imports())
    assert found == [], "import a public name instead (or make it public where it lives): " + "; ".join(
        f"{a} imports {n} from {b}" for a, b, n in found
    )
