"""Builders of small hostile transcript files for the bad-input tests (tests/transcript is on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import run_cli

MARK = "@@VALUE@@"


def claude_lines(sid: str, input_tokens: Any = 100, text: str = "two files") -> list[str]:
    """A Claude Code session with two API calls (a tool call and an answer), both with usage.

    ``input_tokens`` of the first call is written verbatim when it is a str (``"NaN"``, ``"1e999"``).
    """
    first_usage: Any = MARK if isinstance(input_tokens, str) else input_tokens
    lines = [
        {
            "parentUuid": None,
            "type": "user",
            "uuid": f"{sid}-u1",
            "sessionId": sid,
            "message": {"role": "user", "content": "list the files"},
        },
        {
            "parentUuid": f"{sid}-u1",
            "type": "assistant",
            "uuid": f"{sid}-a1",
            "sessionId": sid,
            "message": {
                "id": f"{sid}-m1",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "tool_use", "id": f"{sid}-t1", "name": "Bash", "input": {"command": "ls"}}],
                "usage": {"input_tokens": first_usage, "cache_read_input_tokens": 1000, "output_tokens": 20},
            },
        },
        {
            "parentUuid": f"{sid}-a1",
            "type": "user",
            "uuid": f"{sid}-u2",
            "sessionId": sid,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"{sid}-t1", "content": "a"}],
            },
        },
        {
            "parentUuid": f"{sid}-u2",
            "type": "assistant",
            "uuid": f"{sid}-a2",
            "sessionId": sid,
            "message": {
                "id": f"{sid}-m2",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 150, "cache_read_input_tokens": 1000, "output_tokens": 5},
            },
        },
    ]
    out = [json.dumps(line, separators=(",", ":")) for line in lines]  # ASCII: a lone surrogate is "\\udc80"
    return [line.replace(f'"{MARK}"', str(input_tokens)) for line in out]


def write_claude(path: Path, sid: str, **kw: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(claude_lines(sid, **kw)) + "\n", encoding="utf-8")
    return path


def cli(*args: str) -> tuple[int, str, str]:
    """``workbench ARGS`` in-process: (exit code, stdout, stderr)."""
    result = run_cli(*args)
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr
