"""User instructions across a compaction (`workbench.metrics.instructions`): kept (predicted, per event),
repeated by the user (measured, per recorded compaction), and their validation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
from record_builders import assistant, result, say, tool_use, user

from workbench.metrics.instructions import (
    instructions,
    instructions_events,
    restates,
    stated,
    stems,
    user_prompt,
)
from workbench.metrics.recovery import recovery
from workbench.metrics.validation import measure_correlations
from workbench.transcript.model import Block, Record, Session

RULE = "Never commit directly to the main branch."
TASK = "Please add retry logic to the payment webhook handler in billing/webhooks.py"


def _boundary() -> Record:
    raw = {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto", "preTokens": 9}}
    return Record(kind="system", subtype="compact_boundary", raw=raw, blocks=(Block.text_block("c"),))


def _recorded(later: str, summary: str = "Working on the webhook handler.") -> Session:
    """A rule, a request, work, a recorded compaction, then the user types ``later``."""
    records = [
        user(f"Set up the project. {RULE} Run the tests with pytest."),
        say("ok", message_id="m1"),
        user(TASK),
        assistant(tool_use("t1", "Read", file_path="/repo/billing/webhooks.py"), message_id="m2"),
        result("t1", "def handle(event): ..."),
        _boundary(),
        user(summary, is_compact_summary=True),
        say("Continuing.", message_id="m3"),
        user(later),
        say("done", message_id="m4"),
    ]
    records = [replace(r, uuid=f"u{i}", line_no=i + 1) for i, r in enumerate(records)]
    return Session(id="hand", records=tuple(records), source="hand.jsonl", format="claude-code")


def test_what_counts_as_an_instruction():
    given = instructions(list(_recorded("x").records), 5)
    assert [(i.kind, i.text) for i in given] == [("constraint", RULE), ("request", TASK)]
    assert stems(RULE) == {"commit", "direct", "main", "branch"}  # "never" is a marker, not content
    notice = user("<task-notification>\n<status>completed</status>\n</task-notification>\nRead the output file")
    assert user_prompt(notice) == ""
    assert user_prompt(user("<command-name>/compact</command-name><command-args>keep the API notes</command-args>"))
    assert user_prompt(user("reminder", is_meta=True)) == ""
    assert user_prompt(result("t1", "must not fail")) == ""
    # a bare "continue" is not the last request: the request is the last prompt that states something
    records = [user(TASK), say("ok", message_id="m1"), user("continue")]
    assert [i.kind for i in instructions(records)] == ["request"]
    assert instructions(records)[0].text == TASK


def test_a_dropped_instruction_the_user_repeats_is_counted():
    row = recovery([_recorded("I told you: do not commit directly to main, use a branch!")]).iloc[0]
    assert row["user_prompts_after"] == 1 and row["instructions_repeated"] == 1
    again = recovery([_recorded("Add retry logic to the payment webhook handler please")]).iloc[0]
    assert again["instructions_repeated"] == 1  # the last request, restated


def test_a_new_prompt_is_not_a_repeat():
    row = recovery([_recorded("Now write the changelog entry for the release.")]).iloc[0]
    assert row["user_prompts_after"] == 1 and row["instructions_repeated"] == 0
    assert not restates(instructions(list(_recorded("x").records), 5)[0], "commit the docs")  # one shared stem


def _events(**changes: Any) -> list[dict[str, Any]]:
    return [
        {
            "session_id": "hand",
            "strategy": "s",
            "config_hash": "c",
            "kind": "full-compact",
            "step": 2,  # before the call after the Read
            "dropped_uuids": ["u0", "u1", "u2", "u3", "u4"],
            "summary": "The user asked for retry logic in the payment webhook handler (billing/webhooks.py).",
            "added_text": None,
            **changes,
        }
    ]


def _plain() -> Session:
    s = _recorded("thanks")
    return s.with_records(r for r in s.records if not (r.is_compact_boundary or r.is_compact_summary))


def test_a_dropped_instruction_not_in_the_summary_is_lost():
    row = instructions_events(_plain(), _events()).iloc[0]
    assert row["instructions"] == 2 and row["instructions_lost"] == 1  # the rule; the request is stated
    assert row["instructions_kept"] == 0.5 and row["last_request_kept"] == 1.0


def test_a_kept_instruction_is_not_lost():
    verbatim = instructions_events(_plain(), _events(dropped_uuids=["u1", "u3", "u4"])).iloc[0]
    assert verbatim["instructions_lost"] == 0 and verbatim["instructions_kept"] == 1.0
    nothing = instructions_events(_plain(), _events(summary="Fixed things.")).iloc[0]
    assert nothing["instructions_lost"] == 2 and nothing["last_request_kept"] == 0.0


def test_a_paraphrased_summary_statement_counts_as_kept():
    summary = (
        "Constraints: commits must not go directly to the main branch. "
        "Task: retry logic for the payment webhook handler."
    )
    row = instructions_events(_plain(), _events(summary=summary)).iloc[0]
    assert row["instructions_lost"] == 0 and row["instructions_kept"] == 1.0
    rule = instructions([user(f"hello there. {RULE}")])[0]
    assert stated(rule, stems("Rule from the user: no committing straight onto main; use a branch."))
    assert not stated(rule, stems("The user works on the main dashboard."))


def test_a_recorded_compaction_keeps_only_what_its_summary_states():
    lost = instructions_events(_recorded("x"), _recorded_event()).iloc[0]
    assert lost["instructions"] == 2 and lost["instructions_lost"] == 2
    kept = _recorded("x", summary=f"User rules: {RULE} Current task: {TASK}")
    assert instructions_events(kept, _recorded_event()).iloc[0]["instructions_kept"] == 1.0


def _recorded_event() -> list[dict[str, Any]]:
    return [{"session_id": "hand", "strategy": "recorded", "config_hash": "c", "kind": "recorded-compact", "step": 2}]


def test_the_checks_correlate_each_measure_with_its_measured_side():
    table = pd.DataFrame(
        {
            "instructions_kept": [1.0, 0.8, 0.5, 0.2, 0.0],
            "instructions_lost": [0, 1, 2, 3, 4],
            "last_request_kept": [1.0, 1.0, 0.0, 1.0, 0.0],
            "instructions_repeated": [0, 0, 1, 2, 3],
        }
    )
    rows = measure_correlations(table).set_index("score")
    assert rows.loc["instructions_kept", "target"] == "instructions_repeated"
    assert rows.loc["instructions_kept", "rho"] < -0.9 and rows.loc["instructions_lost", "rho"] > 0.9
    assert (rows["n"] == 5).all()
    assert "expected_repeated_calls" not in rows.index  # no such column: no row
