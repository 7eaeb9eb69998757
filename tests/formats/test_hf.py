"""The ``datasets`` bridge: lossless round trip on the whole corpus, presets, token counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from workbench.tokens.datasets import add_token_counts  # noqa: E402
from workbench.transcript import Session, TranscriptError, detect, load_paths  # noqa: E402
from workbench.transcript.hf import (  # noqa: E402
    corpus_to_dataset,
    dataset_to_sessions,
    load_dataset_sessions,
)

datasets.disable_progress_bars()


def _assert_same(before: list[Session], after: list[Session]) -> None:
    assert [s.id for s in before] == [s.id for s in after]
    for a, b in zip(before, after, strict=True):
        assert a == b, a.id  # every compared field, records included
        assert (a.format, a.lines, a.source, a.capabilities) == (b.format, b.lines, b.source, b.capabilities)
        assert [(k.file, k.line, k.reason, k.data) for k in a.skipped] == [
            (k.file, k.line, k.reason, k.data) for k in b.skipped
        ]
        for x, y in zip(a.records, b.records, strict=True):
            assert (x.kind, x.uuid, x.blocks) == (y.kind, y.uuid, y.blocks)
            assert x.raw == y.raw and x.line == y.line, (a.id, x.uuid)


@pytest.mark.corpus
def test_round_trip_whole_corpus_through_parquet(corpus: Path, tmp_path: Path) -> None:
    folders = ["claude-code", "swe-agent", "openhands", "gemini-cli", "aider"]
    sessions = list(load_paths([corpus / f for f in folders]))
    assert {s.format for s in sessions} >= {"claude-code", "swe-agent", "openhands", "gemini-cli", "aider"}
    ds = corpus_to_dataset(sessions)
    assert len(ds) == sum(max(1, len(s.records)) for s in sessions)
    target = tmp_path / "corpus.parquet"
    ds.to_parquet(str(target))
    again = datasets.Dataset.from_parquet(str(target), cache_dir=str(tmp_path / "cache"))
    _assert_same(sessions, dataset_to_sessions(again))
    # the registry reads the same parquet file directly
    assert detect(target).name == "dataset-parquet"
    _assert_same(sessions, list(load_paths([target])))
    # and the offline local-dataset path restores it too
    _assert_same(sessions, load_dataset_sessions(target, cache_dir=tmp_path / "cache2"))


def test_round_trip_keeps_empty_sessions_and_skips(tmp_path: Path) -> None:
    bad = tmp_path / "bad.traj"
    bad.write_bytes(b'{"history": [')
    sessions = list(load_paths([bad]))
    assert not sessions[0].records and sessions[0].skipped
    back = dataset_to_sessions(corpus_to_dataset(sessions))
    _assert_same(sessions, back)
    assert back[0].skipped[0].data == b'{"history": ['


def test_typed_columns(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n')
    ds = corpus_to_dataset(load_paths([path]))
    assert ds["kind"] == ["user", "assistant"] and ds["text"] == ["hi", "yo"]
    assert ds["block_types"] == [["text"], ["text"]] and ds["record_index"] == [0, 1]
    assert ds["session_json"][1] is None


def test_preset_messages_jsonl(tmp_path: Path) -> None:
    rows = [
        {
            "id": "a",
            "messages": [
                {"role": "user", "content": "2+2?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "t1", "type": "function", "function": {"name": "calc", "arguments": '{"x": "2+2"}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "4"},
                {"role": "assistant", "content": "4"},
            ],
        },
        {"id": "b", "messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "?"}]},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    sessions = load_dataset_sessions(path, cache_dir=tmp_path / "cache")
    assert [s.id for s in sessions] == ["a", "b"]
    a, b = sessions
    assert [r.kind for r in a.records] == ["user", "assistant", "user", "assistant"]
    assert a.records[1].tool_uses()[0].input == {"x": "2+2"}
    assert a.records[2].tool_result_ids() == ["t1"]
    assert b.lines == 2 and len(b.records) == 1 and "unknown role" in b.skipped[0].reason
    for s in sessions:
        assert s.lines == len(s.records) + len(s.skipped)


def test_preset_trajectory_parquet(tmp_path: Path) -> None:
    ds = datasets.Dataset.from_dict(
        {
            "instance_id": ["repo__1", "repo__2"],
            "trajectory": [
                [
                    {"role": "system", "text": "You are SWE"},
                    {"role": "user", "text": "fix it"},
                    {"role": "ai", "text": "ls"},
                    {"role": "user", "text": "a.py"},
                ],
                [{"role": "human", "text": "hi"}, {"role": "gpt", "text": "hello"}],
            ],
            "resolved": [True, False],
        }
    )
    path = tmp_path / "traj.parquet"
    ds.to_parquet(str(path))
    sessions = load_dataset_sessions(path, cache_dir=tmp_path / "cache")
    assert [s.id for s in sessions] == ["repo__1", "repo__2"]
    assert [r.kind for r in sessions[0].records] == ["system", "user", "assistant", "user"]
    assert sessions[0].metadata["resolved"] is True
    assert sessions[1].records[1].text == "hello" and sessions[1].records[1].raw == {"role": "gpt", "text": "hello"}
    # the registry's parquet loader applies the same presets
    assert [s.id for s in load_paths([path])] == ["repo__1", "repo__2"]


def test_preset_conversations_and_swe_steps(tmp_path: Path) -> None:
    path = tmp_path / "share.json"
    path.write_text(
        json.dumps(
            [
                {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]},
            ]
        )
    )
    (session,) = load_dataset_sessions(path, cache_dir=tmp_path / "c1")
    assert [r.role for r in session.records] == ["user", "assistant"] and session.id == "share:0"
    steps = tmp_path / "steps.jsonl"
    steps.write_text(json.dumps({"trajectory": [{"response": "ls", "observation": "a.py", "action": "ls"}]}) + "\n")
    (session,) = load_dataset_sessions(steps, cache_dir=tmp_path / "c2")
    assert [r.kind for r in session.records] == ["assistant", "user"] and session.lines == 2


def test_bad_local_dataset_and_offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"messages": [\n')
    with pytest.raises(TranscriptError, match=r"broken\.jsonl"):
        load_dataset_sessions(broken, cache_dir=tmp_path / "cache")
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"question": "q", "answer": "a"}]))
    with pytest.raises(TranscriptError, match="no column for a preset"):
        load_dataset_sessions(other, cache_dir=tmp_path / "cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TranscriptError, match="offline"):
        load_dataset_sessions("hf://someone/trajectories:test")


def test_damaged_parquet_gives_skip(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 20)
    (session,) = load_paths([path])
    assert session.skipped[0].file == str(path) and "unreadable parquet" in session.skipped[0].reason
    assert session.lines == 1


def test_add_token_counts_parallel(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"role": "user", "content": "x" * (40 * i)}) for i in range(1, 9)) + "\n")
    ds = corpus_to_dataset(load_paths([path]))
    counted = add_token_counts(ds, estimator="claude-rough", num_proc=2, batch_size=2)
    assert counted["tokens_claude-rough"] == [10 * i for i in range(1, 9)]
