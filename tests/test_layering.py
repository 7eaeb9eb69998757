"""The package's layers: data flows one way, and a package imports only packages below it.

Every import in the package counts, also those inside functions (a lazy import is still a dependency).
The layers, bottom to top; a package may import any package of a lower layer, never one of its own layer
or above."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"

LAYERS: list[set[str]] = [
    {"util"},  # version, pool, cache folder, value classes
    {"transcript"},  # files → sessions of records
    {"tokens"},  # token counts of records
    {"request"},  # the request Claude Code sends, its repair and the API's rules
    {"memory"},  # session-memory notes and their extraction
    {"summarize"},  # the offline summariser
    {"online"},  # the Anthropic API client (summaries, extraction, count_tokens)
    {"strategies"},  # compaction strategies and their registry
    {"synthetic", "studies"},  # generated sessions; the naive-cut study
    {"replay"},  # the engine
    {"metrics"},  # what a replay saved, broke, lost and cost
    {"probes"},  # judge probes over compaction events
    {"reporting"},  # run folders read back, the report, plots
    {"experiments"},  # sweeps, tuning, advice
    {"widgets"},  # notebook widgets
    {"_public"},  # `import workbench as wb`
    {"cli"},  # the command line
]
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _imports() -> list[tuple[str, str, str]]:
    """(importing package, imported package, file:line) for every import between top-level packages."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        here = parts[1] if len(parts) > 1 else ""
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = parts if is_package else parts[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                targets = [module] if node.module else [f"{module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                bits = target.split(".")
                if bits[0] != "workbench" or len(bits) < 2:
                    continue
                there = bits[1]
                if here and there != here and (PACKAGE / there).is_dir():
                    edges.append((here, there, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"))
    return edges


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(RANK), (packages - set(RANK), set(RANK) - packages)


def test_packages_import_only_downward() -> None:
    upward = [f"{where}: {a} imports {b}" for a, b, where in _imports() if RANK[b] >= RANK[a]]
    assert not upward, "\n".join(upward)


def test_at_most_three_modules_at_the_package_root() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= 3, modules
