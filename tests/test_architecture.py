"""How the library's modules may depend on each other: no import cycles, and no module imports
another's private names."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mimirlib"

# The masked-LM engine spread over three modules (issue 14): these go when mimirlib/mlm/ exists.
KNOWN = {
    ("mimirlib.perturb", "mimirlib.neighbors", "_as_text_list"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_is_punctuation"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_masked_logits"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_progress_factory"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_sample"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_vocab_info"),
    ("mimirlib.perturb", "mimirlib.neighbors", "_window_limit"),
    ("mimirlib.ranges", "mimirlib.neighbors", "_as_text_list"),
    ("mimirlib.ranges", "mimirlib.neighbors", "_progress_factory"),
    ("mimirlib.ranges", "mimirlib.perturb", "_fill_batch"),
    ("mimirlib.ranges", "mimirlib.perturb", "_masked_lm_setup"),
    ("mimirlib.ranges", "mimirlib.perturb", "_rng"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
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


def private_imports() -> set[tuple[str, str, str]]:
    """(importer, imported module, private name) for every ``_name`` one mimirlib module imports
    from another, at top level or inside a function; ``import mimirlib._x`` counts too."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = module_name(path)
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


def test_the_checker_sees_relative_private_imports():
    tree = ast.parse("from .neighbors import _x, y\nfrom ..data import _z\n")
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported_module(nodes[0], "mimirlib.perturb", False) == "mimirlib.neighbors"
    assert imported_module(nodes[1], "mimirlib.lab.build", False) == "mimirlib.data"
    assert imported_module(nodes[0], "mimirlib.verdicts", True) == "mimirlib.verdicts.neighbors"
    assert ("mimirlib.perturb", "mimirlib.neighbors", "_as_text_list") in private_imports()


def test_no_new_private_imports_between_modules():
    """Nothing beyond the known masked-LM debt: a new private import fails here at once."""
    new = sorted(private_imports() - KNOWN)
    assert new == [], "import a public name instead (or make it public where it lives): " + "; ".join(
        f"{a} imports {n} from {b}" for a, b, n in new)


@pytest.mark.xfail(strict=True, reason="issue 14's masked-LM package is not built yet: perturb imports "
                   "_as_text_list, _is_punctuation, _masked_logits, _progress_factory, _sample, "
                   "_vocab_info, _window_limit from neighbors; ranges imports _as_text_list, _progress_factory "
                   "from neighbors and _fill_batch, _masked_lm_setup, _rng from perturb")
def test_no_module_imports_private_names_of_another():
    found = sorted(private_imports())
    assert found == [], "; ".join(f"{a} imports {n} from {b}" for a, b, n in found)
