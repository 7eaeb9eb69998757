"""What the views show a reader: distinguishable curves, readable names, tables and strips that fit.

Runs on the embedded corpus (``data/``), so no real corpus is needed; the layout in a real browser is
checked by test_browser.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from matplotlib.text import Text

import workbench as wb
from workbench.memory.template import SessionMemory
from workbench.transcript.model import Block, Record, Session
from workbench.widgets import (
    KeepWindowView,
    MemorySectionsView,
    SessionIndex,
    StrategyComparison,
    comparison_frames,
    keep_window_model,
    memory_diff,
    plot_timelines,
    render_diff,
    render_readout,
    render_zoom,
)
from workbench.widgets._compare import render_table

matplotlib.use("Agg")

DATA = Path(__file__).resolve().parents[2] / "data"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: Okabe & Ito's colour-blind-safe palette.
OKABE_ITO = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}


@pytest.fixture(scope="module")
def corpus():
    if not any(DATA.glob("*.jsonl")):
        pytest.skip("data/ has no embedded corpus")
    return wb.load(DATA, progress=False)


@pytest.fixture(scope="module")
def runs(corpus):
    strategies = ["none", "sm-compact", "sm-compact-naive", wb.strategy("sm-compact", min_tokens=20_000)]
    return wb.replay(corpus.top(2), strategies, progress=False)


def _visible(html: str) -> str:
    """The text a reader sees: tags and their attributes (tooltips) removed."""
    return re.sub(r"<[^>]*>", " ", html)


# ------------------------------------------------------------------------------------------- timelines
def test_one_no_compaction_curve_and_distinct_styles(runs) -> None:
    steps, _ = comparison_frames(runs)
    sid = steps["session_id"].iloc[0]
    fig = plot_timelines(steps, sid)
    ax = fig.axes[0]
    lines = ax.get_lines()
    names = [line.get_label() for line in lines]
    assert names == ["no compaction", "sm-compact", "sm-compact min_tokens=20k", "sm-compact-naive"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "none" not in legend and legend.count("no compaction") == 1 and "without compaction" not in legend
    styles = {(line.get_color(), str(line.get_linestyle()), str(line.get_marker())) for line in lines[1:]}
    assert len(styles) == len(lines) - 1, "two curves share colour, dash and marker"
    assert {str(line.get_color()).lower() for line in lines} <= OKABE_ITO
    # a curve drawn later is never wider than one below it: identical curves leave the lower one visible
    widths = [line.get_linewidth() for line in lines]
    assert widths == sorted(widths, reverse=True)
    ends = [t.get_text() for t in ax.texts]  # direct labels at the line ends
    assert sorted(ends) == sorted(names)
    static = runs.plot.timeline(sid).axes[0]  # the static timeline of the notebooks and reports
    legend = [t.get_text() for t in static.get_legend().get_texts()]
    assert legend.count("no compaction") == 1 and "none" not in legend
    assert {str(line.get_color()).lower() for line in static.get_lines()[:4]} <= OKABE_ITO


def test_direct_labels_do_not_overlap(runs) -> None:
    steps, _ = comparison_frames(runs)
    fig = plot_timelines(steps, steps["session_id"].iloc[0])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in fig.axes[0].texts]  # the words, not the leader line
    assert len(boxes) == 4
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)


def test_plot_titles_and_pickers_name_sessions_by_short_id(runs) -> None:
    steps, _ = comparison_frames(runs)
    sid = steps["session_id"].iloc[0]
    title = plot_timelines(steps, sid).axes[0].get_title()
    assert sid[:8] in title and sid not in title and ".jsonl" in title
    assert sid not in runs.plot.timeline(sid).axes[0].get_title()
    view = StrategyComparison(runs)
    options = [text for text, _ in view.session.options]
    assert all(not UUID.search(text) for text in options), options
    assert any(text.startswith(sid[:8]) and ".jsonl" in text for text in options)
    assert view.session.tooltip == view.session.value  # the full id on hover
    assert f"title='{view.session.value}'" in view.session_name.value


def test_a_file_named_after_the_session_shows_its_folder_and_the_short_id() -> None:
    from workbench.widgets._names import session_html, session_text

    sid = "258c7280-ae70-4798-800f-63464d01a85d"
    text = session_text(sid, f"/corpus/claude-code/marot-spotter/{sid}.jsonl")
    assert text == "258c7280 · marot-spotter/258c7280….jsonl"
    assert session_text(sid) == "258c7280" and session_text(sid, float("nan")) == "258c7280"
    html = session_html(sid, f"marot-spotter/{sid}.jsonl")
    assert sid not in _visible(html) and f"title='{sid}'" in html


def test_keep_window_title_shows_the_short_id_and_file(corpus) -> None:
    session = corpus.largest()
    view = wb.widgets.keep_window(session)
    title = view.title.value
    assert session.id not in _visible(title) and session.id[:8] in _visible(title)
    assert f"title='{session.id}'" in title and Path(str(session.source)).name in title


# ------------------------------------------------------------------------------------- tables, labels
def test_tables_scroll_sideways_and_headers_do_not_wrap(runs) -> None:
    html = StrategyComparison(runs).table.value
    assert re.search(r'<div class="wb-table-scroll" style="[^"]*overflow-x:auto', html)
    headers = re.findall(r"<th style='([^']*)'>", html)
    assert headers and all("white-space:nowrap" in style for style in headers)


def test_widget_tables_and_legends_name_configs_by_label(runs) -> None:
    hashes = set(runs.steps["config_hash"])
    view = StrategyComparison(runs)
    visible = _visible(view.table.value)
    assert "sm-compact min_tokens=20k" in visible
    assert not any(h in visible for h in hashes), "a bare config hash in the widget table"
    assert "config_hash" not in visible
    fig = plot_timelines(view.steps, view.session.value)
    shown = [t.get_text() for t in fig.axes[0].get_legend().get_texts()] + [t.get_text() for t in fig.axes[0].texts]
    assert not any(h in text for h in hashes for text in shown)
    table = render_table(view.current_table())
    assert all(f"title='{h}'" in table for h in hashes)  # the hash stays reachable, as the label's tooltip


def test_report_paired_differences_name_configs_by_label() -> None:
    from workbench.experiments.report import _differences

    rows = []
    for session, saved in (("s1", 10), ("s2", 20), ("s3", 30)):
        for strategy, config_hash, label, share in (
            ("none", "90a5e2ca289b", "none", 0),
            ("sm-compact", "0639eb2b389f", "sm-compact min_tokens=20k", saved),
        ):
            rows.append(
                {
                    "session_id": session,
                    "strategy": strategy,
                    "config_hash": config_hash,
                    "label": label,
                    "compactions": 1 if share else 0,
                    "tokens_saved": share,
                    "input_tokens_without": 100,
                    "saved_share": share / 100,
                }
            )
    text = "\n".join(_differences(pd.DataFrame(rows), None))
    assert "| sm-compact min_tokens=20k | saved_share |" in text
    assert "0639eb2b389f" not in text


# ---------------------------------------------------------------------------------------- keep window
def _long_session(records: int = 1_240) -> Session:
    """Alternating prompts and answers, every fifth one long: enough records for four-digit indices, and
    short records drawn narrow next to the long ones."""
    out = []
    for i in range(records):
        text = f"turn {i} " * (30 * 16 if i % 5 == 0 else 30)
        if i % 2 == 0:
            out.append(
                Record(
                    kind="user",
                    uuid=f"u{i}",
                    role="user",
                    blocks=(Block.text_block(text),),
                    has_content=True,
                )
            )
        else:
            block = Block.from_raw({"type": "text", "text": text})
            out.append(
                Record(
                    kind="assistant",
                    uuid=f"a{i}",
                    role="assistant",
                    message_id=f"msg_{i}",
                    model="claude-x",
                    blocks=(block,),
                    has_content=True,
                )
            )
    return Session(id="long-fixture", records=tuple(out))


def test_strip_record_numbers_do_not_overlap() -> None:
    index = SessionIndex.build(_long_session())
    state = keep_window_model(index, index.steps - 1, summarized="unset", validate_cuts=False)
    # a window whose adjustment moved the start 16 records: one run of 34 records drawn, four-digit numbers
    moved = dataclasses.replace(state, start=state.end - 30, pair_start=state.end - 30, naive_start=state.end - 14)
    svg = render_zoom(index, moved)
    numbers = [(float(x), text) for x, text in re.findall(r'<text[^>]*x="([\d.]+)" y="88"[^>]*>(\d+)</text>', svg)]
    assert len(numbers) >= 8 and all(len(text) == 4 for _, text in numbers)
    for (a, ta), (b, tb) in itertools.pairwise(numbers):
        half_widths = (len(ta) + len(tb)) / 2 * 9 * 0.58  # a sans-serif digit is ~0.56 em
        assert b - a >= half_widths, f"record numbers {ta} and {tb} overlap"
    width = int(re.search(r'viewBox="0 0 (\d+)', svg).group(1))
    starts = re.findall(r'<text class="wb-start-label" x="([\d.]+)"[^>]*text-anchor="(\w+)"', svg)
    assert starts and all(anchor == "end" or float(x) < width for x, anchor in starts)


def test_long_api_errors_wrap_inside_the_readout(corpus) -> None:
    index = SessionIndex.build(corpus.largest())
    html = render_readout(keep_window_model(index))
    style = re.search(r'class="wb-keep-readout" style="([^"]*)"', html).group(1)
    assert "pre-wrap" in style and "overflow-wrap:anywhere" in style
    assert "max-width:100%" in render_zoom(index, keep_window_model(index))


def test_keep_window_refuses_min_tokens_above_max_tokens(corpus) -> None:
    view = KeepWindowView(corpus.largest(), min_tokens=10_000, max_tokens=40_000)
    before, readout = view.state, view.readout.value
    view.min_tokens.value = 50_000  # as the browser sends it
    message = "min_tokens (50000) must not exceed max_tokens (40000)"
    assert message in view.refusal.value
    assert view.min_tokens.value == 10_000 and view.state == before and view.readout.value == readout
    view.max_tokens.value = 30_000  # a valid move clears the refusal
    assert view.refusal.value == "" and view.state.max_tokens == 30_000
    view.max_tokens.value = 5_000  # below min_tokens: refused the same way
    assert "must not exceed max_tokens (5000)" in view.refusal.value and view.max_tokens.value == 30_000
    with pytest.raises(ValueError, match=re.escape("min_tokens (50000) must not exceed max_tokens (30000)")):
        view.set(min_tokens=50_000)
    assert view.min_tokens.value == 10_000
    assert view.set(min_tokens=50_000, max_tokens=80_000).min_tokens == 50_000  # both at once is valid
    with pytest.raises(ValueError, match="must not exceed"):
        KeepWindowView(corpus.largest(), min_tokens=50_000, max_tokens=40_000)


# -------------------------------------------------------------------------------------------- memory
def test_memory_diff_is_bounded_collapsible_and_wraps() -> None:
    big = SessionMemory.from_contents(
        {"Worklog": "\n".join(f"- step {i}: " + "ran_the_whole_test_suite_again" * 8 for i in range(700))}
    )
    html = render_diff(memory_diff(None, big), title="first extraction:")
    style = re.search(r'class="wb-memory-diff" style="([^"]*)"', html).group(1)
    assert re.search(r"max-height:\d+px", style) and "overflow-y:auto" in style
    assert "<details" in html and "<summary>" in html
    assert "overflow-wrap:anywhere" in html and "pre-wrap" in html
    view = MemorySectionsView(big)
    assert "max-height" in view.diff.value and view.diff.layout.min_width == "0"
