"""The layout shows the architecture: subpackages by layer with no import cycle, no upward import,
no import of the test tree; a light top-level import; a plugin that loads only pytest; no test
module importing another."""

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specdec"
TEST_FOLDERS = ("properties", "stat_tests", "perf")
# Lower layers never import higher ones (imports inside functions are deliberate lazy imports).
LAYERS = [
    {"specdec._validation", "specdec._hf", "specdec._io", "specdec.protocols", "specdec.errors", "specdec.settings"},
    {"specdec.sampling", "specdec.warpers", "specdec.metrics", "specdec.sampling_settings"},
    {"specdec.laws", "specdec.stats"},
    {"specdec.verify"},
    {"specdec.schemes"},
    {"specdec.decoding", "specdec.strategies", "specdec.workload"},
    {"specdec.adapters"},
    {"specdec.conformance"},
    {"specdec.bench", "specdec.plots"},
    {"specdec.cli", "specdec.__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(path: Path, *, inside_functions: bool = False) -> set[str]:
    """Modules imported at module level (and, with ``inside_functions``, anywhere: the deliberate lazy
    imports inside functions too), relative imports resolved."""
    tree = ast.parse(path.read_text())
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in (ast.walk(tree) if inside_functions else tree.body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


@functools.lru_cache(maxsize=2)
def modules(inside_functions: bool = False) -> dict[str, set[str]]:
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        imports = top_level_imports(path, inside_functions=inside_functions)
        graph[module_name(path)] = {m for m in imports if m == "specdec" or m.startswith("specdec.")}
    return graph


def layer(name: str) -> int:
    for i, members in enumerate(LAYERS):
        if any(name == m or name.startswith(m + ".") for m in members):
            return i
    raise AssertionError(f"{name} belongs to no layer: add it to LAYERS")


def test_no_import_cycle_between_modules():
    """Imports inside functions count too (a lazy import can still close a circle)."""
    graph = modules(inside_functions=True)
    edges = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    state: dict[str, int] = {}

    def visit(node, path):
        if state.get(node) == 1:
            raise AssertionError("import cycle: " + " -> ".join(path + [node]))
        if state.get(node) == 2:
            return
        state[node] = 1
        for dep in sorted(edges[node]):
            if not (node.startswith(dep + ".") or dep == "specdec"):  # a package's own __init__ is not a cycle
                visit(dep, path + [node])
        state[node] = 2

    for node in sorted(edges):
        visit(node, [])


def test_lower_layers_never_import_higher_ones():
    """Imports inside functions count too: a lazy import is still a dependency."""
    graph = modules(inside_functions=True)
    for name, deps in graph.items():
        if name == "specdec":
            continue
        for dep in deps:
            if dep in graph and dep != "specdec":
                assert layer(dep) <= layer(name), f"{name} (layer {layer(name)}) imports {dep} (layer {layer(dep)})"


def test_the_library_never_imports_the_test_tree():
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in ("fixtures", "scripts") + TEST_FOLDERS, f"{path.name} imports {name}"


def test_no_test_module_imports_another():
    for folder in TEST_FOLDERS:
        for path in (ROOT / folder).glob("*.py"):
            for name in top_level_imports(path):
                head = name.split(".")
                assert not (head[0] in TEST_FOLDERS and len(head) > 1 and head[1].startswith("test_")), f"{path} imports {name}"


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "docs", check=True)
    return done.stdout.strip()


def test_import_specdec_is_light():
    out = _fresh(
        "import sys, time; t = time.perf_counter(); import specdec; e = time.perf_counter() - t; "
        "print(e, [m for m in ('torch', 'scipy', 'transformers', 'numpy') if m in sys.modules])"
    )
    seconds, loaded = out.split(" ", 1)
    assert loaded == "[]", f"import specdec loaded {loaded}"
    assert float(seconds) < 0.2


def test_the_plugin_loads_only_pytest():
    out = _fresh("import sys, pytest; import _specdec_pytestplugin; print([m for m in ('torch', 'specdec', 'scipy', 'numpy') if m in sys.modules])")
    assert out == "[]"


def test_every_public_name_resolves():
    import specdec

    for name in specdec.__all__:
        assert getattr(specdec, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        specdec.nope  # noqa: B018


SCHEME_PARTS = {"token", "block", "tree", "multidraft"}  # one scheme's parts may share a name: verify/tree.py, laws/tree.py
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 300, 80


def test_no_library_module_over_300_lines_and_no_function_over_80():
    long_modules, long_functions = [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{path.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"


def test_no_two_library_modules_share_a_name_outside_a_schemes_parts():
    homes: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            homes.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in homes.items() if len(paths) > 1 and name not in SCHEME_PARTS}
    assert not shared, f"module names used twice: {shared}"
