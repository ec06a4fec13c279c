"""A one-way house (issue 12, item 6): the import graph of the ``twinsweep.*`` modules has no
cycles, and every import that hides inside a function says why it stays there.

The graph is built from the source with :mod:`ast` (nothing is imported): module-level AND
function-level imports count, since a function-level import is still coupling (it only moves the
failure to run time). Imports under ``if TYPE_CHECKING:`` are annotations only and do not count.
Folders map to the namespace as in ``pyproject.toml`` (``core/`` -> ``twinsweep.core`` ...).
An edge goes to the module imported: ``from ..power import convert`` is ``core.cooling.timeline
-> core.power``; ``from twinsweep.core import simulate`` is an edge to the package ``twinsweep.core``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"twinsweep": "twinsweep", "core": "twinsweep.core", "sweep": "twinsweep.sweep",
           "backends": "twinsweep.backends"}

#: Edges that still close a cycle, each with the work that removes it. Empty is the goal.
KNOWN_CYCLE_EDGES: dict[tuple[str, str], str] = {}

#: Why a third-party package is imported inside functions (top-level package name -> reason).
LAZY_PACKAGES = {
    "optuna": "only `twinsweep tune` needs it; `twinsweep --help` and runs stay free of its ~0.5 s import",
    "matplotlib": "figures only (reports, tune); headless Agg backend chosen on first use (sweep.plotting)",
    "rich": "console tables/progress of the CLI only; library use (simulate, sweeps from Python) never loads it",
    "ray": "optional backend (extra 'ray'); imported when the Ray backend is chosen",
    "submitit": "optional Slurm backend dependency; imported when the slurm backend is chosen",
    "dask": "pooled distributions only (sweep.distributions); optional cluster extras",
    "distributed": "optional Dask cluster for pooled distributions",
    "numba": "core._jit imports numba.np.linalg/arraymath inside a function, to answer arraymath's import-time BLAS "
             "probe without importing scipy.linalg (only for that import's duration)",
    "fmpy": "optional FMU cooling model (docs/cooling.md); only a [cooling] table with fmu = ... needs it",
    "scipy": "statistics of reports/validation only; ~0.2 s import kept out of runs and the CLI start-up",
    "pyarrow": "Parquet I/O paths of the sweep layer; kept out of the CLI start-up",
    "pandas": "tables of the sweep layer's outputs; kept out of the CLI start-up (tune, expand)",
    "numpy": "sweep/report paths only; kept out of the CLI start-up (`twinsweep run` loads it first, with one "
             "OpenBLAS thread: sweep.cli._one_blas_thread)",
}

#: Why a standard-library module is imported inside a function ((importer, module) -> reason).
LAZY_STDLIB = {
    ("twinsweep", "importlib"): "lazy re-export of the run API (`import twinsweep` stays light)",
    ("twinsweep.sweep.tune", "importlib"): "lazy re-export of the tune API (the CLI builds its parser only)",
    ("twinsweep.core.atomic", "concurrent"): "concurrent.futures: the fsync thread pool, only when several files are flushed",
    ("twinsweep.core.registry", "importlib"): "importlib.metadata (~6 ms CPU: it imports the e-mail parser) only when "
                                             "the entry-point scan is not cached, or an installed plug-in is loaded",
    ("twinsweep.core.errors", "errno"): "only when an OSError is turned into one line (disk full, ...)",
    ("twinsweep.core.plugin_code", "importlib"): "importlib.metadata (~6 ms CPU) only when a run uses a plug-in "
                                                "from another package (its distribution and version)",
    ("twinsweep.core.system", "hashlib"): "only when a System's checksum is first asked for",
    ("twinsweep.core.system", "json"): "only when a System's checksum is first asked for",
    ("twinsweep.sweep.cli", "sys"): "the entry point's error path",
    ("twinsweep.sweep.cli", "dataclasses"): "one subcommand's config override",
    ("twinsweep.sweep.report", "datetime"): "report time stamp only",
    ("twinsweep.sweep.api", "fcntl"): "POSIX only: the result-store lock",
    ("twinsweep.sweep.api", "json"): "one rarely used path (sweep record)",
    ("twinsweep.backends.base", "re"): "only when a backend name is checked",
    ("twinsweep.backends.slurm.task", "traceback"): "only when a Slurm task fails",
}

#: Why a module imports twinsweep modules inside functions (importer -> reason). These are not
#: cycles (the graph above counts them); they keep start-up light or load a chosen plug-in.
LAZY_INTERNAL = {
    "twinsweep": "lazy re-export of twinsweep.core's run API (`twinsweep --version` imports nothing else)",
    "twinsweep.core": "lazy re-exports: `import twinsweep.core` does not load the engine",
    "twinsweep.core.config": "the scheduler registries are loaded (with their entry-point plug-ins) only to "
                             "validate a policy name",
    "twinsweep.core.system": "the cooling model (and its FMU path) loads only for a system with [cooling]",
    "twinsweep.core.run": "the trace loaders and data paths load only when simulate has no Workload given; "
                          "power traces, the cooling model and the external-scheduler protocol only when the "
                          "run uses them",
    "twinsweep.core.engine": "the scheduler is built only when the run is not a replay",
    "twinsweep.core.cooling.wetbulb": "the data folder is looked up only for a wet-bulb file",
    "twinsweep.core.scheduler": "plug-in loading on first use; the external-scheduler protocol only for "
                                "policy 'external'",
    "twinsweep.core.backfill.conservative": "the numba profile (~1 s to compile/import) loads on first use",
    "twinsweep.core.resources": "numba's node-array loops (core._nodearray, ~0.3 s import) load only for machines of more than 1,024 nodes",
    "twinsweep.core.fetch": "data-folder lookup only on download",
    "twinsweep.core.loaders._registry": "the parsed-trace cache loads only when a trace is loaded",
    "twinsweep.sweep.tune.cli": "the tuning machinery loads only when `twinsweep tune` runs (CLI start-up)",
    "twinsweep.sweep.cli": "every subcommand loads its implementation when run: `twinsweep --help` stays fast",
    "twinsweep.sweep.cli_sweep": "sweep/report/tune subcommands load their implementation when run",
    "twinsweep.sweep.api": "backends, aggregation and the report load when the sweep needs them",
    "twinsweep.sweep.expand": "the twin (loaders, engine) loads only when a grid point is expanded",
    "twinsweep.sweep.runner": "core.run (engine, loaders, pyarrow) loads in the worker that simulates, not in the "
                             "driver, which only builds payloads",
    "twinsweep.sweep.store": "core.run (the engine, pyarrow writers) and the metric catalogue load only when a run "
                            "folder is checked or runs.parquet built; `twinsweep status` does neither",
    "twinsweep.sweep.aggregate": "sweep.spec (backends, grid checks) only to read a study.json's axes and metrics",
    "twinsweep.sweep.gridcheck": "run configs and schedulers are built only to check a spec",
    "twinsweep.sweep.report": "pooled sections load on use",
    "twinsweep.sweep.spec": "the metric catalogue's plug-ins load on use",
    "twinsweep.sweep.validate": "the fidelity measures load on use",
    "twinsweep.sweep.tune.evaluator": "`twinsweep` builds the tune parser at start-up: backends, runner and "
                                      "the grid expansion load only when a tuning runs",
    "twinsweep.sweep.tune.run": "as tune.evaluator: the sweep machinery loads only when a tuning runs",
    "twinsweep.sweep.tune.slurm_workers": "as tune.evaluator; the Slurm backend only for --backend slurm",
}


def _modules() -> dict[str, Path]:
    mods = {}
    for folder, pkg in FOLDERS.items():
        for f in sorted((ROOT / folder).rglob("*.py")):
            parts = list(f.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = f
    return mods


def _imports(mods: dict[str, Path]):
    """``(importer, imported, line, inside_function)`` for every import not under TYPE_CHECKING;
    ``imported`` is the resolved absolute module name (a twinsweep module, or a third-party name)."""
    out = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only, in_func = set(), set()
        for n in ast.walk(tree):
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                typing_only |= {id(x) for b in n.body for x in ast.walk(b)}
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = n.body if isinstance(n.body, list) else [n.body]
                in_func |= {id(x) for b in body for x in ast.walk(b)}
        for n in ast.walk(tree):
            if id(n) in typing_only:
                continue
            if isinstance(n, ast.Import):
                names = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    base = base[: len(base) - (n.level - 1)]
                    base_name = ".".join(base + ([n.module] if n.module else []))
                else:
                    base_name = n.module
                names = [f"{base_name}.{a.name}" if f"{base_name}.{a.name}" in mods else base_name
                         for a in n.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] == "twinsweep":
                    while name not in mods and "." in name:
                        name = name.rsplit(".", 1)[0]
                out.append((mod, name, n.lineno, id(n) in in_func))
    return out


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (R. Tarjan, SIAM J. Comput. 1(2), 1972): the components with > 1 node."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def _edges(imports, skip=frozenset()) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for a, b, _, _ in imports:
        if b.startswith("twinsweep") and a != b and (a, b) not in skip:
            edges.setdefault(a, set()).add(b)
    return edges


def test_the_graph_finder_sees_a_cycle_and_a_clean_chain():
    """The cycle finder itself, on hand-made graphs."""
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) == []


def test_the_import_parser_resolves_relative_and_function_level_imports():
    mods = _modules()
    imps = _imports(mods)
    assert len(mods) > 50
    # module level: core.cooling.timeline uses core.power; function level: the CLI loads tune's parser
    assert ("twinsweep.core.cooling.timeline", "twinsweep.core.power") in {(a, b) for a, b, _, f in imps if not f}
    assert any(a == "twinsweep.sweep.cli" and b.startswith("twinsweep.sweep.tune") and f for a, b, _, f in imps)
    # typing-only imports do not count: power annotates with System but never imports it
    assert ("twinsweep.core.power", "twinsweep.core.system") not in {(a, b) for a, b, _, _ in imps}


def test_no_import_cycles():
    imps = _imports(_modules())
    cycles = _strongly_connected(_edges(imps, skip=frozenset(KNOWN_CYCLE_EDGES)))
    assert not cycles, "import cycles (module- or function-level):\n" + "\n".join(
        "  " + " <-> ".join(c) + "\n    " + "\n    ".join(
            f"{a} -> {b} (line {n})" for a, b, n, _ in imps if a in c and b in c and a != b) for c in cycles)


def test_every_function_level_import_is_justified():
    missing = []
    for a, b, n, in_func in _imports(_modules()):
        if not in_func:
            continue
        top = b.split(".")[0]
        if top == "twinsweep":
            ok = a in LAZY_INTERNAL
        elif (a, top) in LAZY_STDLIB:
            ok = True
        else:
            ok = top in LAZY_PACKAGES
        if not ok:
            missing.append(f"{a} line {n}: import of {b} inside a function")
    assert not missing, ("function-level imports without a stated reason (move them to the top of the module, "
                         "or add the reason to this test's tables):\n  " + "\n  ".join(missing))
