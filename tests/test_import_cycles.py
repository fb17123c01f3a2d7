"""No import cycle in any package of the project (issue #36 item 9), nor across packages.

The import graph is read from the source with :mod:`ast`, never by importing: one node per module
of ``planners/``, ``scheduling/`` and ``experiments/`` (a package is its ``__init__``; the compiled
extensions named in ``setup.py`` are nodes too, with no edges), one edge ``a -> b`` per import
statement of ``a`` that names ``b``, at module level or inside a function (a deferred import that
closes a circle is still a circle: it only moves the failure to the first call). An import names
the most specific project module it mentions:

* ``import a.b.c`` -> ``a.b.c`` (or the longest prefix that is a module);
* ``from a.b import c`` -> ``a.b.c`` when that is a module (``from package import submodule``),
  else ``a.b`` (a name defined in, or re-exported by, ``a/b.py`` or ``a/b/__init__.py``);
* ``from . import x``, ``from .x import y``, ``from ..x import y``: the same, relative to the
  importing module's package (for an ``__init__``, the package itself).

The implicit import of parent packages (``import a.b`` runs ``a/__init__.py`` first) is not an
edge: a package's ``__init__`` that imports its registry, whose strategies look names up in a
catalogue the ``__init__`` binds (:mod:`planners.catalogue`, :mod:`scheduling.schedulers.catalogue`),
has no cycle in the statements. Imports run by ``importlib.import_module`` or inside the source
text of a child process are not statements of the module and are not read.

The graph algorithm is networkx's (strongly connected components; :func:`networkx.find_cycle`
names one cycle of each).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("planners", "scheduling", "experiments")


def _extension_modules(setup_py: Path) -> set[str]:
    """Dotted names of the ``Extension("name", ...)`` calls in ``setup_py`` (compiled modules)."""
    if not setup_py.is_file():
        return set()
    names = set()
    for node in ast.walk(ast.parse(setup_py.read_text(), filename=str(setup_py))):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Extension"
                and node.args and isinstance(node.args[0], ast.Constant)):
            names.add(node.args[0].value)
    return names


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path | None]:
    """``{dotted module name: file}`` of every ``.py`` file under ``root/<package>`` (``None`` for
    a compiled extension of ``root/setup.py`` inside those packages)."""
    mods: dict[str, Path | None] = {}
    for top in packages:
        for f in sorted((root / top).rglob("*.py")):
            rel = f.relative_to(root).with_suffix("")
            if "__pycache__" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            mods[".".join(parts)] = f
    for name in _extension_modules(root / "setup.py"):
        if name.split(".")[0] in packages:
            mods.setdefault(name, None)
    return mods


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """``(dotted name, line)`` of every name an import statement anywhere in ``tree`` (the source
    of ``module``) refers to: ``import a.b`` -> ``a.b``; ``from m import x`` -> ``m.x`` (resolved
    against the modules later, falling back to ``m``). Relative imports are made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                if node.level - 1 > len(base):
                    continue  # beyond the top-level package: not a project import
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out += [(f"{mod}.{a.name}" if mod else a.name, node.lineno) for a in node.names]
    return out


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> nx.DiGraph:
    """The import graph of the project's modules (module docstring for the rules).

    Parameters
    ----------
    root : Path
        The repository (holding the package folders and ``setup.py``).
    packages : tuple of str
        Top-level packages whose modules are nodes; imports of anything else are not edges.

    Returns
    -------
    networkx.DiGraph
        Nodes are dotted module names (attribute ``path``: the file, ``None`` for an extension;
        graph attribute ``root``);
        edge ``a -> b`` has ``line``, the first line of ``a`` whose import names ``b``.

    Raises
    ------
    SyntaxError
        A module that does not parse (named by ``ast``).
    """
    mods = _modules(root, packages)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    g = nx.DiGraph(root=root)
    for m, path in mods.items():
        g.add_node(m, path=path)
    for m, path in mods.items():
        if path is None:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for name, line in _imported_names(tree, m, path.name == "__init__.py"):
            t = resolve(name)
            if t is not None and t != m and not g.has_edge(m, t):
                g.add_edge(m, t, line=line)
    return g


def import_cycles(g: nx.DiGraph, within: str | None = None) -> list[str]:
    """One named cycle per strongly connected component of more than one module of ``g``
    (restricted to ``within`` and its subpackages; ``None``: the whole graph), each as
    ``"a -> b -> a (a.py:3 imports b; b.py:40 imports a)"``, sorted."""
    nodes = [n for n in g if within is None or n == within or n.startswith(within + ".")]
    sub = g.subgraph(nodes)
    out = []
    for comp in nx.strongly_connected_components(sub):
        if len(comp) < 2:
            continue
        first = min(comp)
        cyc = nx.find_cycle(sub.subgraph(comp), source=first)
        path = " -> ".join([u for u, _ in cyc] + [cyc[0][0]])
        where = "; ".join(
            f"{g.nodes[u]['path'].relative_to(g.graph['root'])}:{g.edges[u, v]['line']} "
            f"imports {v}" for u, v in cyc)
        out.append(f"{path} ({where})")
    return sorted(out)


@functools.cache
def _project_graph() -> nx.DiGraph:
    return import_graph()


def _packages() -> list[str]:
    return sorted(m for m, p in _project_graph().nodes(data="path")
                  if p is not None and p.name == "__init__.py")


#: Packages that must be found (the parametrisation below is discovered from the tree).
EXPECTED_PACKAGES = {
    "planners", "scheduling", "scheduling.schedulers", "scheduling.transforms", "experiments",
    "experiments.bench", "experiments.cli", "experiments.plots", "experiments.report",
    "experiments.runtimes", "experiments.runtimes.tflm", "experiments.rv64", "experiments.sweep",
}


def test_every_package_is_checked():
    assert EXPECTED_PACKAGES <= set(_packages())


@pytest.mark.parametrize("package", [*_packages(), None],
                         ids=lambda p: p or "across-packages")
def test_package_has_no_import_cycle(package):
    assert import_cycles(_project_graph(), package) == []


def test_graph_has_the_known_edges():
    """The graph sees the imports that hold the project together: the registries import their
    strategies (``planners.registry -> minimize -> base``, ``scheduling.schedulers.registry ->
    best_of``), strategies look names up in the catalogues, deferred imports and ``from package
    import submodule`` count, and the compiled extensions are nodes."""
    g = _project_graph()
    assert {"planners.registry", "planners.choose_best", "planners.minimize",
            "planners.lower_bounds", "planners.warmstart", "planners._greedy"} <= set(g)
    for u, v in [("planners.registry", "planners.minimize"), ("planners.minimize", "planners.base"),
                 ("planners.choose_best", "planners.catalogue"),
                 ("scheduling.schedulers.registry", "scheduling.schedulers.best_of"),
                 ("scheduling.schedulers.best_of", "scheduling.schedulers.catalogue"),
                 ("scheduling.schedulers", "scheduling.schedulers.catalogue"),  # from . import x
                 ("planners.greedy", "planners._greedy"),  # deferred `from . import _greedy`
                 ("scheduling.graph", "scheduling.nxgraph"),
                 ("experiments.cli.sweep", "experiments.cli.common")]:
        assert g.has_edge(u, v), (u, v)
    for u, v in [("planners.minimize", "planners.registry"),
                 ("scheduling.schedulers.best_of", "scheduling.schedulers.registry"),
                 ("scheduling.graph", "scheduling.nodelink"),
                 ("experiments.plots.view", "experiments.plots.style")]:
        assert not g.has_edge(u, v), (u, v)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_the_graph_of_a_small_tree_is_exactly_its_imports(tmp_path):
    """Hand-checked edges: every import form, an import outside the packages (no edge), a name
    re-exported by a package (edge to the package), a submodule of a package (edge to it)."""
    _write(tmp_path, {
        "setup.py": 'from setuptools import Extension\nExtension("pk._fast", sources=[])\n',
        "pk/__init__.py": "from .reg import TABLE\n",
        "pk/reg.py": "from . import a\nfrom .a import f\nimport pk.sub.c\nimport numpy\n",
        "pk/a.py": "def f():\n    from pk import TABLE\n    from . import _fast\n",
        "pk/sub/__init__.py": "from .. import a\n",
        "pk/sub/c.py": "from pk.sub import d\nfrom os import path\n",
        "pk/sub/d.py": "import pk.nothere\n",
        "other/x.py": "import pk\n",  # not a listed package: no node
    })
    g = import_graph(tmp_path, ("pk",))
    assert set(g) == {"pk", "pk.reg", "pk.a", "pk.sub", "pk.sub.c", "pk.sub.d", "pk._fast"}
    assert set(g.edges) == {
        ("pk", "pk.reg"), ("pk.reg", "pk.a"), ("pk.reg", "pk.sub.c"), ("pk.a", "pk"),
        ("pk.a", "pk._fast"), ("pk.sub", "pk.a"), ("pk.sub.c", "pk.sub.d"), ("pk.sub.d", "pk"),
    }
    assert g.edges["pk.reg", "pk.sub.c"]["line"] == 3
    # pk -> reg -> a -> pk: one component, named with the lines that close it
    assert import_cycles(g) == [
        "pk -> pk.reg -> pk.a -> pk (pk/__init__.py:1 imports pk.reg; pk/reg.py:1 imports pk.a; "
        "pk/a.py:2 imports pk)"]
    assert import_cycles(g, "pk.sub") == []


@pytest.mark.parametrize("text", [
    "def g():\n    from . import left\n",  # deferred, from . import x
    "from .left import thing\n",
    "import q.left\n",
    "from q import left\n",  # from package import submodule
])
def test_a_cycle_is_found_and_named(tmp_path, text):
    """The check can fail: ``q.left`` imports ``q.right`` and ``q.right`` imports ``q.left`` in
    each import form; the message names both modules and the lines."""
    _write(tmp_path, {"q/__init__.py": "", "q/left.py": "x = 1\nfrom q.right import y\n",
                      "q/right.py": "y = 2\n" + text})
    g = import_graph(tmp_path, ("q",))
    line = text.count("\n")
    assert import_cycles(g, "q") == import_cycles(g) == [
        f"q.left -> q.right -> q.left (q/left.py:2 imports q.right; q/right.py:{line + 1} "
        "imports q.left)"]
