"""Notebook widgets: thin ipywidgets views over plain, browser-free models.

* `KeepWindowView` / `keep_window_model`: SM-compact's keep window at a compaction point, naive vs
  adjusted start and why it moved (docs §2.4, §2.5);
* `MemorySectionsView` / `memory_snapshot` / `memory_diff` / `replay_memory`: the session-memory
  sections against their caps, and what each extraction changed (docs §1.1);
* `StrategyComparison` / `run_comparison` / `comparison_table` / `plot_timelines`: strategies side by side;
* `export_notebook_html`: static HTML with the widget state embedded and a local renderer;
* `keep_window`, `memory`, `compare`: one call each (what ``wb.widgets`` offers notebooks).

Only the views import ipywidgets (lazily), so the models work without it.
"""

from ..memory.template import SessionMemory
from ._compare import StrategyComparison, comparison_frames, comparison_table, plot_timelines, run_comparison
from ._corpus import REPO_ROOT, resolve_corpus
from ._export import WIDGET_ASSETS, export_notebook_html
from ._keep_window import KeepWindowState, Move, SessionIndex, keep_window_model
from ._keep_window_view import KeepWindowView, readout_lines, render_readout
from ._memory import (
    MemoryReplay,
    MemorySectionsView,
    MemorySnapshot,
    SectionDiff,
    SectionSize,
    memory_diff,
    memory_history,
    memory_snapshot,
    render_diff,
    render_sections,
    replay_memory,
)
from ._shortcuts import compare, interesting_step, keep_window, memory
from ._strip import record_class, render_overview, render_zoom

__all__ = [
    "REPO_ROOT",
    "WIDGET_ASSETS",
    "KeepWindowState",
    "KeepWindowView",
    "MemoryReplay",
    "MemorySectionsView",
    "MemorySnapshot",
    "Move",
    "SectionDiff",
    "SectionSize",
    "SessionIndex",
    "SessionMemory",
    "StrategyComparison",
    "compare",
    "comparison_frames",
    "comparison_table",
    "export_notebook_html",
    "interesting_step",
    "keep_window",
    "keep_window_model",
    "memory",
    "memory_diff",
    "memory_history",
    "memory_snapshot",
    "plot_timelines",
    "readout_lines",
    "record_class",
    "render_diff",
    "render_overview",
    "render_readout",
    "render_sections",
    "render_zoom",
    "replay_memory",
    "resolve_corpus",
    "run_comparison",
]
