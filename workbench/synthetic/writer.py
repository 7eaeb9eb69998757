"""`_Writer`: one session's JSONL lines with consistent uuids, parents, timestamps and recorded usage
(streaming splits, interleaved tool results, progress and snapshot lines, a recorded auto-compaction)."""

from __future__ import annotations

import json
import random
import uuid
from datetime import datetime, timedelta
from typing import Any

from .calibration import calibration

__all__ = ["MODEL", "VERSION", "_Writer"]

VERSION = "2.1.39"
MODEL = "claude-opus-4-6"


class _Writer:
    """Builds one session's lines with consistent uuids, parents, timestamps and usage."""

    def __init__(
        self,
        rng: random.Random,
        session_id: str,
        *,
        cwd: str,
        branch: str,
        agent_id: str | None = None,
        start: datetime,
    ) -> None:
        self.rng = rng
        self.session_id = session_id
        self.agent_id = agent_id
        self.cwd = cwd
        self.branch = branch
        self.clock = start
        self.parent: str | None = None
        self.lines: list[str] = []
        self.rough = 0  # chars/4 of the conversation so far
        self.cal = calibration()
        self.overhead = int(self.cal["first_call_overhead_tokens"].get("p50", 20000) * rng.uniform(0.8, 1.1))
        self.ratio = float(self.cal["tokens_per_rough_token"].get("p50", 1.33))
        self.prompt_before = 0
        self.boundary_offset = 0  # rough tokens of the conversation before a recorded compaction

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def ident(self, prefix: str, n: int = 24) -> str:
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz123456789"
        return prefix + "".join(self.rng.choice(alphabet) for _ in range(n))

    def tick(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def base(self, kind: str) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": self.branch,
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line["type"] = kind
        return line

    def emit(self, line: dict[str, Any], *, chain: bool = True) -> str:
        self.lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
        uuid: str = line["uuid"]
        if chain:
            self.parent = uuid
        return uuid

    def count(self, text: str) -> None:
        self.rough += round(len(text) / 4)

    @property
    def prompt_tokens(self) -> int:
        return self.overhead + round(self.ratio * (self.rough - self.boundary_offset))

    def snapshot(self, message_uuid: str) -> None:
        stamp = self.tick(0)
        self.lines.append(
            json.dumps(
                {
                    "type": "file-history-snapshot",
                    "messageId": message_uuid,
                    "snapshot": {"messageId": message_uuid, "trackedFileBackups": {}, "timestamp": stamp},
                    "isSnapshotUpdate": False,
                },
                separators=(",", ":"),
            )
        )

    def user_prompt(self, text: str) -> None:
        line = self.base("user")
        line["message"] = {"role": "user", "content": text}
        line["uuid"] = self.uuid()
        line["timestamp"] = self.tick(self.rng.uniform(20, 240))
        if self.agent_id is None:
            self.snapshot(line["uuid"])
        self.count(text)
        self.emit(line)

    def progress(self, tool_id: str, hook: str) -> None:
        line = self.base("progress")
        line["data"] = {
            "type": "hook_progress",
            "hookEvent": hook,
            "hookName": f"{hook}:Bash",
            "command": "hooks/guard.sh",
        }
        line["parentToolUseID"] = tool_id
        line["toolUseID"] = tool_id
        line["uuid"] = self.uuid()
        line["timestamp"] = self.tick(0.01)
        self.emit(line)

    def usage(self, output: int) -> dict[str, Any]:
        prompt = self.prompt_tokens
        read = min(self.prompt_before, prompt - 3)
        return {
            "input_tokens": 3,
            "cache_creation_input_tokens": max(0, prompt - 3 - read),
            "cache_read_input_tokens": max(0, read),
            "output_tokens": output,
            "service_tier": "standard",
        }

    def response(self, blocks: list[dict[str, Any]], results: dict[str, tuple[str, bool, Any]]) -> None:
        """One streamed response: a line per block, tool results interleaved (docs §7.4)."""
        message_id = self.ident("msg_01")
        request_id = self.ident("req_011C")
        start_usage = self.usage(self.rng.randint(1, 12))
        text_chars = sum(len(json.dumps(b)) for b in blocks)
        final_output = max(8, round(self.ratio * text_chars / 4) + self.rng.randint(0, 60))
        deferred: list[str] = []
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            line = self.base("assistant")
            usage = dict(start_usage, output_tokens=final_output) if last else start_usage
            line["message"] = {
                "model": MODEL,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            line["requestId"] = request_id
            line["uuid"] = self.uuid()
            line["timestamp"] = self.tick(self.rng.uniform(0.3, 6.0))
            self.emit(line)
            self.count(
                json.dumps(block.get("input"))
                if block["type"] == "tool_use"
                else block.get("text") or block.get("thinking") or ""
            )
            if block["type"] == "tool_use":
                for _ in range(self.rng.choice((0, 1, 1, 2))):
                    self.progress(block["id"], "PreToolUse")
                if last or self.rng.random() < 0.6:
                    self.tool_result(block["id"], line["uuid"], results[block["id"]])
                else:
                    deferred.append(block["id"])
                    self.deferred_sources = getattr(self, "deferred_sources", {})
                    self.deferred_sources[block["id"]] = line["uuid"]
        for tool_id in deferred:
            self.tool_result(tool_id, self.deferred_sources.pop(tool_id), results[tool_id])
        self.prompt_before = self.prompt_tokens

    def tool_result(self, tool_id: str, source_uuid: str, result: tuple[str, bool, Any]) -> None:
        text, is_error, extra = result
        line = self.base("user")
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": text, "is_error": is_error}
        line["message"] = {"role": "user", "content": [block]}
        line["uuid"] = self.uuid()
        line["timestamp"] = self.tick(self.rng.uniform(0.2, 20))
        line["toolUseResult"] = extra
        line["sourceToolAssistantUUID"] = source_uuid
        self.count(text)
        self.emit(line)
        if self.rng.random() < 0.3:
            self.progress(tool_id, "PostToolUse")

    def compact(self, summary: str) -> None:
        """A recorded auto-compaction: boundary (``preTokens``) + the summary as a string user message."""
        pre = self.prompt_tokens
        line = self.base("system")
        line["parentUuid"] = None
        line["logicalParentUuid"] = self.parent
        line.update(
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "uuid": self.uuid(),
                "timestamp": self.tick(40),
                "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": pre},
            }
        )
        self.parent = None
        self.emit(line)
        self.boundary_offset = self.rough
        summary_line = self.base("user")
        summary_line["message"] = {"role": "user", "content": summary}
        summary_line["isCompactSummary"] = True
        summary_line["isVisibleInTranscriptOnly"] = True
        summary_line["uuid"] = self.uuid()
        summary_line["timestamp"] = self.tick(0.1)
        self.count(summary)
        self.emit(summary_line)
        self.prompt_before = 0
