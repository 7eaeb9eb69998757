"""Export writes what ingest reads back: every format of the corpus, exported and read again, gives the
same sessions with the same records (content), or the export is refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli

from workbench.transcript import load_paths
from workbench.transcript.export import ExportError, session_bytes

pytestmark = pytest.mark.corpus

FOLDERS = ["aider", "gemini-cli", "openhands", "codex", "swe-agent", "same-task-three-agents", "claude-code-sonnet45"]


def _content(record) -> tuple:
    return (record.kind, record.role, record.content_json(), dict(record.usage or {}), record.model)


def _sessions(paths: list[Path]) -> dict[str, list[tuple]]:
    return {s.id: [_content(r) for r in s.conversation()] for s in load_paths(paths) if not s.is_inline}


@pytest.mark.parametrize("folder", FOLDERS)
def test_export_reads_back_record_for_record(corpus: Path, tmp_path: Path, folder: str) -> None:
    source = corpus / folder
    out = tmp_path / "out"
    result = run_cli("export", source, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["failed"] == []
    before, after = _sessions([source]), _sessions([out])
    assert sorted(after) == sorted(before), folder
    for session_id, records in before.items():
        assert after[session_id] == records, (folder, session_id)


def test_a_modified_session_of_a_file_format_is_refused(corpus: Path) -> None:
    [session] = [s for s in load_paths([corpus / "openhands" / "basic.json"])]
    record = session.records[0]
    changed = session.with_records([record.with_blocks(record.blocks), *session.records[1:]])
    with pytest.raises(ExportError, match="a modified openhands session cannot be written back in its format"):
        session_bytes(changed)
