"""How the library's modules may depend on each other: imports only go down the layers, no import
cycles, no module imports another's private names; and how big a module or function may grow."""

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


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the mimirlib modules it imports (anywhere in it, function-level imports included)."""
    modules = {module_name(p, package.parent): p for p in package.rglob("*.py")}
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


# The layers, bottom to top: a module may import its own layer and the layers below it, never one
# above (data flows one way: the book machinery reads experiments, which compose the core).
LAYERS = (
    ("base", ("mimirlib", "mimirlib.paths", "mimirlib.fsutil", "mimirlib.progress", "mimirlib.profiles")),
    ("core", ("mimirlib.core",)),  # benchmarks, models, signals and engines, attacks, scoring, metrics, n-grams
    ("samplers", ("mimirlib.samplers",)),  # masked LM, perturbations, neighbours, paraphrases, ranges
    ("lab", ("mimirlib.lab",)),  # the embedded lab: corpus, training, the Lab read API
    ("display", ("mimirlib.display",)),  # tables, figures, the paper's own tables
    ("audit", ("mimirlib.audit",)),  # the audit of any model on any texts
    ("verdicts", ("mimirlib.verdicts",)),  # named, tested rules
    ("experiments", ("mimirlib.experiments",)),  # one module per chapter
    ("runner", ("mimirlib.runner",)),  # papermill: parameters, variants, execution
    ("book", ("mimirlib.book",)),  # HTML build, scorecard, costs
    ("teach", ("mimirlib.teach",)),  # exercises, handouts, classroom pack
)
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 85  # "about 80": a docstring and a signature's wrapping may add a few


def layer_of(module: str) -> int | None:
    """Index in LAYERS of the longest prefix naming ``module`` (``None``: no layer claims it)."""
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), i
    return found


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer, as 'importer (layer) imports imported (layer)'."""
    out = []
    for importer, deps in sorted(graph.items()):
        for dep in sorted(deps):
            a, b = layer_of(importer), layer_of(dep)
            if a is not None and b is not None and b > a:
                out.append(f"{importer} ({LAYERS[a][0]}) imports {dep} ({LAYERS[b][0]})")
    return out


def test_every_module_is_in_a_layer():
    assert [m for m in import_graph() if layer_of(m) is None] == []


def test_imports_only_go_down_the_layers():
    """A module that needs something from a higher layer means that piece lives too high: move it down."""
    assert upward_imports(import_graph()) == []


def test_the_layer_check_fails_on_an_upward_import(tmp_path):
    pkg = tmp_path / "mimirlib"
    for sub in ("core", "experiments"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "experiments" / "main_results.py").write_text("from mimirlib.core import metrics\n")
    (pkg / "core" / "metrics.py").write_text("def auc():\n    from mimirlib.experiments import main_results\n")
    assert upward_imports(import_graph(pkg)) == [
        "mimirlib.core.metrics (core) imports mimirlib.experiments.main_results (experiments)"
    ]


def test_the_top_level_holds_subpackages_and_a_handful_of_modules():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert modules == ["__init__", "fsutil", "paths", "progress"]


def long_definitions(package: Path = PACKAGE) -> tuple[list[str], list[str]]:
    """(modules over MAX_MODULE_LINES, functions over MAX_FUNCTION_LINES), each 'path: n lines'."""
    modules, functions = [], []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(package.parent)
        if text.count("\n") > MAX_MODULE_LINES:
            modules.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    functions.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    return modules, functions


def test_no_module_or_function_is_too_long_to_read_in_one_sitting():
    modules, functions = long_definitions()
    assert modules == [] and functions == [], "split along a seam: " + "; ".join(modules + functions)


def test_the_length_check_counts_lines(tmp_path):
    pkg = tmp_path / "mimirlib"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(f"def f():\n{body}\n" + "\n" * MAX_MODULE_LINES)
    (pkg / "short.py").write_text("def g():\n    return 1\n")
    modules, functions = long_definitions(pkg)
    assert [m.split(":")[0] for m in modules] == ["mimirlib/long.py"]
    assert functions == [f"mimirlib/long.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
