"""Auto-detection keeps OpenAI chat JSONL away from the Anthropic Messages loader."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.transcript import detect


def test_openai_chat_jsonl_is_not_taken_for_anthropic_requests(tmp_path: Path) -> None:
    line = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a"},
        ]
    }
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(line) + "\n")
    loader = detect(path)
    assert loader is not None and loader.name != "anthropic-messages"
    anthropic = tmp_path / "req.jsonl"
    anthropic.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert detect(anthropic).name == "anthropic-messages"
