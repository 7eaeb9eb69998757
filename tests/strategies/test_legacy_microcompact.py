"""Claude Code's automatic microcompact of 1.0.68–2.1.20 (`legacy_microcompact`): the algorithm on hand-made
records, the version range that runs it inside ``claude-code``, and a 2.1.19-shaped session whose recorded
``microcompact_boundary`` (written by the generator from the documented algorithm) the replay reproduces at
the same call with the same ``tokensSaved``, through ``workbench reproduce`` too. The constants are pinned by
what they change: keeping 2 instead of 3, or a minimum saving other than 20,000, no longer reproduces it."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from helpers import view_of
from record_builders import assistant, result, tool_use, user

import workbench.replay.reproduction as reproduction
from workbench.replay.engine import replay_session
from workbench.replay.reproduction import (
    microcompact_reproduction,
    recorded_microcompacts,
    reproduce_microcompacts,
)
from workbench.request.normalize import is_sent
from workbench.strategies import create
from workbench.strategies.microcompact import (
    TOOL_RESULT_CLEARED_MESSAGE,
    LegacyMicrocompactConfig,
    legacy_microcompact,
)
from workbench.strategies.triggers import AutoCompactTrigger, for_version
from workbench.strategies.versions import version_constants
from workbench.synthetic.shapes import Shape, shaped_session
from workbench.transcript import load_paths
from workbench.transcript.model import Record, Session

MODEL = "claude-opus-4-5-20251101"


def _warning(version: str, model: str = MODEL) -> int:
    trigger = for_version(AutoCompactTrigger(), version_constants(version), model)
    return trigger.threshold - trigger.warning_buffer_tokens


def _results(*tokens: int, names: tuple[str, ...] = ("Bash",)) -> list[Record]:
    """A prompt, then one call per result of ``tokens`` tokens (chars/4), tools cycling through ``names``."""
    records = [user("go")]
    for n, size in enumerate(tokens):
        records.append(assistant(tool_use(f"t{n}", names[n % len(names)], command="x"), message_id=f"m{n}"))
        records.append(result(f"t{n}", "x" * (4 * size)))
    return records


def _cleared(compaction) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        b.tool_use_id
        for r in compaction.records
        for b in r.tool_results()
        if b.content == TOOL_RESULT_CLEARED_MESSAGE and b.tool_use_id
    ]


CONFIG = LegacyMicrocompactConfig()


def test_clears_from_the_oldest_until_40k_are_left_and_keeps_the_last_three() -> None:
    records = _results(*[10_000] * 8)  # 80,000 tokens of results
    done = legacy_microcompact(view_of(records, tokens=150_000), CONFIG, warning_threshold=147_000)
    assert done is not None and (done.kind, done.trigger) == ("microcompact", "warning")
    # 80k → clear t0..t3 (40k left: t4..t7); the last 3 were never candidates
    assert _cleared(done) == ["t0", "t1", "t2", "t3"]
    assert done.details["tokens_saved"] == 40_000 and done.details["compacted_tool_ids"] == ["t0", "t1", "t2", "t3"]
    assert done.details["pre_tokens"] == 150_000 and len(done.records) == len(records)


def test_the_last_three_stay_even_over_40k() -> None:
    records = _results(30_000, 30_000, 30_000, 30_000)  # 120k: only t0 is a candidate
    done = legacy_microcompact(view_of(records, tokens=150_000), CONFIG, warning_threshold=147_000)
    assert done is not None and _cleared(done) == ["t0"] and done.details["tokens_saved"] == 30_000


def test_nothing_below_the_warning_threshold_or_under_20k_saved() -> None:
    records = _results(*[10_000] * 8)
    assert legacy_microcompact(view_of(records, tokens=146_999), CONFIG, warning_threshold=147_000) is None
    # 59,996 tokens of results: clearing stops at 40k left, saving 19,997 < 20,000
    small = _results(*[4_999] * 12, 8)
    assert legacy_microcompact(view_of(small, tokens=150_000), CONFIG, warning_threshold=147_000) is None
    enough = _results(*[5_000] * 12)  # 60,000: saves exactly 20,000
    done = legacy_microcompact(view_of(enough, tokens=150_000), CONFIG, warning_threshold=147_000)
    assert done is not None and done.details["tokens_saved"] == 20_000


def test_only_the_compactable_tools_and_not_twice() -> None:
    names = ("Read", "TodoWrite", "PowerShell", "Grep")  # PowerShell came after the legacy microcompact
    records = _results(*[20_000] * 8, names=names)
    done = legacy_microcompact(view_of(records, tokens=180_000), CONFIG, warning_threshold=147_000)
    # compactable: t0 (Read), t3 (Grep), t4 (Read), t7 (Grep), 80k; the last 3 kept, t0 cleared (20k saved)
    assert done is not None and _cleared(done) == ["t0"] and done.details["tokens_saved"] == 20_000
    again = legacy_microcompact(view_of(done.records, tokens=180_000), CONFIG, warning_threshold=147_000)
    assert again is None  # what is cleared stays cleared and is no candidate again
    assert (
        legacy_microcompact(
            view_of(records, tokens=180_000), CONFIG.model_copy(update={"enabled": False}), warning_threshold=0
        )
        is None
    )  # DISABLE_MICROCOMPACT


@pytest.mark.parametrize(
    ("version", "runs"),
    [
        ("1.0.67", False),
        ("1.0.68", True),
        ("2.0.57", True),
        ("2.1.19", True),
        ("2.1.20", True),
        ("2.1.21", False),
        ("2.1.39", False),
        ("2.1.88", False),
        ("2.1.230", False),
    ],
)
def test_the_versions_that_run_it(version: str, runs: bool) -> None:
    assert version_constants(version).runs_legacy_microcompact(version) is runs


#: Two 2.1.19-shaped sessions whose Claude Code microcompacted once (Read, Bash, Grep and TodoWrite in turn):
#: ``warning``: 5k-token results, cleared at the first call past the warning threshold (the warning gate and
#: the 40,000 left decide); ``saving``: 15k-token results, past the warning threshold a call before the
#: clearing saves 20,000 (the minimum saving and the 3 kept decide).
SHAPES = {
    "warning": {"calls": 20, "hidden_tokens": 60_000, "result_chars": 20_000},
    "saving": {"calls": 9, "hidden_tokens": 61_000, "result_chars": 60_000},
}


def _mc_session(version: str = "2.1.19", shape: str = "warning") -> Session:
    return shaped_session(
        Shape(
            **SHAPES[shape],  # type: ignore[arg-type]
            thinking=0.0,
            model=MODEL,
            version=version,
            microcompact_warning=_warning("2.1.19"),
        ),
        f"mc-{shape}",
    )


def test_the_generated_session_records_one_microcompact_as_documented() -> None:
    session = _mc_session()
    [boundary] = [r for r in session.records if r.is_microcompact_boundary]
    meta = boundary.microcompact_metadata
    assert meta["trigger"] == "auto" and meta["preTokens"] >= _warning("2.1.19")
    assert meta["tokensSaved"] >= 20_000 and meta["clearedAttachmentUUIDs"] == []
    names = {b.id: b.name for r in session.records if r.kind == "assistant" for b in r.tool_uses()}
    assert {names[i] for i in meta["compactedToolIds"]} <= {"Read", "Bash", "Grep"}
    assert boundary.raw["type"] == "system" and boundary.raw["content"] == "Context microcompacted"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_replay_reproduces_the_recorded_microcompact(shape: str) -> None:
    session = _mc_session(shape=shape)
    [recorded] = recorded_microcompacts(session)
    [row] = microcompact_reproduction(session)
    assert row.runs and row.row == "2.1.14–2.1.20"
    assert row.step == recorded.step and row.hit
    assert row.tokens_saved_error is not None and abs(row.tokens_saved_error) <= 0.10
    assert row.compacted_tool_ids == recorded.compacted_tool_ids
    # the boundary is no API message: every replayed request is valid, and none holds a system line
    result = replay_session(session, create("claude-code"))
    assert [e["step"] for e in result.events if e["trigger"] == "warning"] == [recorded.step]
    assert all(row["violations"] == 0 for row in result.steps)


def test_versions_outside_the_range_do_not_run_it() -> None:
    for version in ("2.1.39", "2.1.88"):
        session = _mc_session(version)
        [row] = microcompact_reproduction(session)
        assert not row.runs and row.step is None and not row.hit
        events = replay_session(session, create("claude-code")).events
        assert not [e for e in events if e["kind"] == "microcompact"]

    def micro(session: Session, config: dict[str, object]) -> list[int]:
        events = replay_session(session, create("claude-code", config)).events
        return [e["step"] for e in events if e["kind"] == "microcompact"]

    recorded = recorded_microcompacts(_mc_session())[0].step
    assert micro(_mc_session(), {}) == [recorded]
    assert micro(_mc_session(), {"version": "2.1.21"}) == []  # pinned to a version without it
    assert micro(_mc_session(), {"legacy_microcompact": {"enabled": False}}) == []  # DISABLE_MICROCOMPACT
    assert micro(_mc_session("2.1.39"), {"version": "2.1.19"}) == [recorded]  # pinned to one with it
    plain = shaped_session(Shape(calls=16, hidden_tokens=90_000, result_chars=20_000, thinking=0.0, model=MODEL))
    assert micro(plain, {}) == []  # 2.1.88
    assert micro(plain, {"legacy_microcompact": {"enabled": True}})  # set explicitly, it runs on any version


def _ours(config: dict[str, object], shape: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(call, tokens saved, ids) of each legacy microcompact of ``claude-code`` with ``config`` over the
    generated session of ``shape``."""
    strategy = create("claude-code", {"legacy_microcompact": config})
    noted = reproduction._noting_microcompacts(strategy)
    replay_session(_mc_session(shape=shape), strategy)
    return [(step, d["tokens_saved"], tuple(d["compacted_tool_ids"])) for step, d in noted]


def _first(shape: str) -> tuple[int, int | None, tuple[str, ...]]:
    [recorded] = recorded_microcompacts(_mc_session(shape=shape))
    return recorded.step, recorded.tokens_saved, recorded.compacted_tool_ids


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_documented_constants_reproduce_both_sessions(shape: str) -> None:
    assert _ours({}, shape) == [_first(shape)]


@pytest.mark.parametrize("keep_recent", [2, 4])
def test_another_number_kept_no_longer_reproduces_it(keep_recent: int) -> None:
    assert _ours({"keep_recent": keep_recent}, "saving")[0][0] != _first("saving")[0]


@pytest.mark.parametrize("min_savings", [10_000, 35_000])
def test_another_minimum_saving_no_longer_reproduces_it(min_savings: int) -> None:
    assert _ours({"min_savings": min_savings}, "saving")[0] != _first("saving")


@pytest.mark.parametrize("keep_tokens", [35_000, 45_000])
def test_another_40k_left_no_longer_reproduces_it(keep_tokens: int) -> None:
    assert _ours({"keep_tokens": keep_tokens}, "warning")[0] != _first("warning")


def test_the_loader_reads_the_line_and_reproduce_reports_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The generated session written out line by line: the loader keeps the boundary as a known record with
    nothing to warn about, and ``workbench reproduce`` lists it with our call and both ``tokensSaved``."""
    from workbench.cli import main

    session = _mc_session()
    path = tmp_path / "mc.jsonl"
    path.write_text("\n".join(json.dumps(_line(r)) for r in session.records) + "\n")
    [loaded] = load_paths([path])
    assert loaded.metadata.get("unknown_types", []) == [] and loaded.metadata.get("warnings", []) == []
    [boundary] = [r for r in loaded.records if r.is_microcompact_boundary]
    assert boundary.microcompact_metadata["tokensSaved"] >= 20_000
    assert not is_sent(boundary)  # not an API message
    [row] = reproduce_microcompacts([loaded])
    assert row.hit and row.tokens_saved_error == 0
    with pytest.raises(SystemExit) as done:
        main(["reproduce", str(path), "--json"])
    assert done.value.code == 0
    [micro] = json.loads(capsys.readouterr().out)["microcompactions"]
    assert micro["hit"] and micro["runs"] and micro["microcompact_tokens_saved"] == micro["tokens_saved"]
    with pytest.raises(SystemExit):
        main(["reproduce", str(path)])
    text = capsys.readouterr().out
    assert "1 recorded microcompacts" in text and "legacy microcompact on" in text and "MISSED" not in text


def _line(record: Record) -> dict[str, object]:
    """A Claude Code JSONL line for a generated record."""
    if record.kind == "system":
        return dict(record.raw)
    message: dict[str, object] = {
        "role": record.kind,
        "content": record.blocks[0].text if record.string_content else [b.raw for b in record.blocks],
    }
    if record.kind == "assistant":
        message |= {"id": record.message_id, "model": record.model, "usage": dict(record.usage or {})}
    return {
        "type": record.kind,
        "uuid": record.uuid,
        "parentUuid": record.parent_uuid,
        "sessionId": record.session_id,
        "timestamp": record.timestamp,
        "version": record.raw.get("version"),
        "message": message,
    }


def test_the_uncompacted_size_adds_back_what_a_recorded_microcompact_cleared() -> None:
    """The transcript keeps the cleared results whole while every later usage counts them cleared: without
    compaction the context keeps growing across the recorded boundary instead of dropping by its saving."""
    session = _mc_session()
    [recorded] = recorded_microcompacts(session)
    sizes = [row["context_tokens"] for row in replay_session(session, create("none")).steps]
    growth = [b - a for a, b in pairwise(sizes)]
    assert all(step > 0 for step in growth), growth
    assert sizes[recorded.step + 1] - sizes[recorded.step] < 2 * (sizes[recorded.step] - sizes[recorded.step - 1])
