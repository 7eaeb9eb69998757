"""Counterfactual recovery (`workbench.metrics.expected_recovery`): the carried-content rule on hand-made
sessions, pricing, availability, and the corpus."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from record_builders import assistant, result, say, tool_use, user

from workbench.metrics.expected_recovery import (
    content_carried,
    expected_recovery_events,
    expected_recovery_sessions,
    mentions,
)
from workbench.metrics.pricing import Price
from workbench.metrics.recovery import recovery
from workbench.replay import replay_frames, replay_sessions
from workbench.strategies import create
from workbench.transcript import load_paths
from workbench.transcript.model import Session

A_LINES = [f"   {n}→def function_number_{n}(argument):  # line {n}" for n in range(1, 9)]
A = "\n".join(A_LINES)  # 8 content lines
B = "\n".join(f"   {n}→class Model{n}(Base):  pass  # model" for n in range(1, 5))


def _session(fmt: str = "claude-code") -> Session:
    records = [
        user("fix the parser"),
        assistant(tool_use("t1", "Read", file_path="/r/lib/app/a.py"), message_id="m1"),  # step 0
        result("t1", A),
        assistant(tool_use("t2", "Read", file_path="/r/lib/app/b.py"), message_id="m2"),  # step 1
        result("t2", B),
        assistant(tool_use("t3", "Bash", command="pytest -q"), message_id="m3"),  # step 2
        result("t3", "3 passed in 0.1s"),
        say("thinking about it", message_id="m4"),  # step 3: the compaction happens before this call
        assistant(tool_use("t5", "Read", file_path="/r/lib/app/a.py"), message_id="m5"),  # step 4
        result("t5", A),
        assistant(tool_use("t6", "Read", file_path="/r/lib/app/a.py", offset=3), message_id="m6"),  # step 5
        result("t6", A),
        assistant(tool_use("t7", "Read", file_path="/r/lib/app/b.py"), message_id="m7"),  # step 6
        result("t7", B),
        assistant(tool_use("t8", "Bash", command="pytest -q"), message_id="m8"),  # step 7
        result("t8", "3 passed in 0.1s"),
        say("done", message_id="m9"),  # step 8
    ]
    records = [replace(r, uuid=f"u{i}") for i, r in enumerate(records)]
    return Session(id="hand", records=tuple(records), format=fmt)


BEFORE = [f"u{i}" for i in range(7)]  # everything before step 3


def _event(**changes: Any) -> dict[str, Any]:
    return {
        "session_id": "hand",
        "strategy": "s",
        "config_hash": "c",
        "kind": "full-compact",
        "step": 3,
        "dropped_uuids": BEFORE,
        "summary": "Working on lib/app/a.py; tests pass.",
        "added_text": None,
        **changes,
    }


def _row(**changes: Any) -> pd.Series:
    return expected_recovery_events(_session(), [_event(**changes)]).iloc[0]


def test_a_path_mention_is_not_content():
    """The summary names a.py but holds none of it: the later Reads of a.py and b.py and the re-run are
    recovery; the second Read of a.py (t6) is not (t5 brought it back)."""
    row = _row()
    assert row["lost_keys"] == 3 and row["carried_keys"] == 0
    assert row["expected_recovery_calls"] == 3  # t5 (a.py), t7 (b.py), t8 (pytest -q)
    assert row["expected_recovery_files"] == 2
    a, b, ok = len(A) // 4, len(B) // 4, len("3 passed in 0.1s") // 4
    assert row["expected_recovery_tokens"] == pytest.approx(a + b + ok, abs=3)  # chars/4, rounded per record
    assert row["expected_recovery_mentioned_calls"] == 1  # a.py, by its relative path


def test_quoted_content_is_carried():
    summary = "a.py says:\n" + "\n".join(A_LINES[:4])  # half of its content lines, gutter and all
    row = _row(summary=summary)
    assert row["carried_keys"] == 1 and row["lost_keys"] == 2
    assert row["expected_recovery_calls"] == 2  # b.py and the re-run; a.py's content was still there
    three = "\n".join(A_LINES[:3])  # under half
    assert _row(summary=three)["expected_recovery_calls"] == 3


def test_reattached_and_kept_content_is_not_recovery():
    attached = f'Called the Read tool with the following input: {{"file_path":"/r/lib/app/a.py"}}\n{A}'
    assert _row(added_text=attached)["expected_recovery_calls"] == 2
    # b.py's read (u3, u4) kept verbatim: only a.py and the re-run are lost
    kept = _row(dropped_uuids=["u0", "u1", "u2", "u5", "u6"])
    assert (kept["lost_keys"], kept["expected_recovery_calls"]) == (2, 2)


def test_nothing_dropped_and_not_available():
    session = _session()
    steps = pd.DataFrame(
        {"session_id": "hand", "strategy": "s", "config_hash": "c", "step": range(9), "context_tokens": 100}
    )
    no_events = expected_recovery_sessions(pd.DataFrame(), steps, [session]).iloc[0]
    assert no_events["expected_recovery_tokens"] == 0 and no_events["recovery_cost_usd"] == 0
    # a format that records no tool calls with results: null, never 0
    plain = Session(id="hand", records=(user("hi"), say("hello", message_id="m1")), format="aider")
    frame = expected_recovery_events(plain, [_event(dropped_uuids=[])])
    assert frame["expected_recovery_tokens"].isna().all()
    assert expected_recovery_sessions(frame, steps, [plain])["expected_recovery_tokens"].isna().all()


def test_price_of_a_recovery_call():
    """One recovery call (t7, b.py) priced by hand: the round trip re-reads the step's context (1,000
    tokens) at the cache-read price and generates the tool_use at the output price; the result is
    written once and re-read by the requests after it until the session end."""
    price = Price("m", input=3.0, cache_write_5m=3.75, cache_write_1h=6.0, cache_read=0.3, output=15.0)
    steps = pd.DataFrame(
        {"session_id": "hand", "strategy": "s", "config_hash": "c", "step": range(9), "context_tokens": 1000}
    )
    keep_a = ["u3", "u4"]  # drop only b.py's read
    row = expected_recovery_events(
        _session(), [_event(dropped_uuids=keep_a)], steps, pricing={"m": price}, default_model="m"
    ).iloc[0]
    assert row["expected_recovery_calls"] == 1
    tokens = row["expected_recovery_tokens"]
    use = len('Read{"file_path":"/r/lib/app/b.py"}') / 4  # claude-rough of the tool_use
    # t7 is in step 6's response; its result is written at step 7's request and re-read at step 8 (1 request)
    expected = (1000 * 0.3 + round(use) * 15.0 + tokens * (3.75 + 1 * 0.3)) / 1e6
    assert row["recovery_cost_usd"] == pytest.approx(expected, rel=0.02)


def test_rules():
    assert content_carried(A, "x\n" + A + "\ny")
    assert not content_carried(A, "lib/app/a.py")
    assert not content_carried("ok", "ok")  # too short to say
    assert mentions("/home/u/proj/lib/app/a.py", "read", "see app/a.py")
    assert mentions("/home/u/proj/lib/app/a.py", "read", "edited `a.py` twice")
    assert not mentions("/home/u/proj/lib/app/a.py", "read", "data.pyc and ba.py")
    assert mentions("pytest -q\nmore", "command", "ran pytest   -q")


def test_recorded_estimate_matches_the_measured_first_rereads(corpus: Path):
    """On 8463c716 the `recorded` strategy's estimate counts the first re-read of each of the 6 files
    (16,800 tokens, `first_rereads_tokens` of the measured recovery); the measured total counts all 7."""
    path = corpus / "claude-code/marot-spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    session = next(s for s in load_paths([path]) if not s.is_subagent)
    steps, events = replay_frames(replay_sessions([session], create("recorded"), progress=False))
    row = expected_recovery_events(session, events, steps).iloc[0]
    measured = recovery([session]).iloc[0]
    assert row["expected_recovery_files"] == measured["reread_files"] == 6
    assert row["expected_recovery_tokens"] == measured["first_rereads_tokens"]
    assert row["expected_recovery_calls"] == 6 < measured["rereads"]


def test_reattachment_lowers_full_compact_recovery(corpus: Path):
    """full-compact re-attaches the 5 most recently read files (docs §5.4): with re-attachment off the
    same compactions cost more recovery on the real sessions."""
    sessions = [s for s in load_paths([corpus / "claude-code/marot-spotter"]) if not s.is_subagent]
    totals = {}
    for files in (5, 0):
        strategy = create("full-compact", {"max_files_to_restore": files})
        steps, events = replay_frames(replay_sessions(sessions, strategy, progress=False))
        assert files == 0 or events["added_text"].notna().any()
        frame = pd.concat([expected_recovery_events(s, events, steps) for s in sessions], ignore_index=True)
        totals[files] = frame["expected_recovery_tokens"].sum()
    assert totals[5] < totals[0]
