"""Seeded generator of Claude Code JSONL sessions: the embedded demo corpus in ``data/``.

The real open corpus (``../shared/corpus/claude-code``) cannot be shipped inside the repository, so the
demo and the sweep tests run on synthetic sessions whose *shapes* are calibrated on it. `measure_corpus`
computes the statistics below from any Claude Code folder; ``workbench/data/synthetic_calibration.json``
holds the values measured on the open corpus (20 sessions, 5,766 lines) and `generate_session` draws
from them:

* streaming splits: one API response is written as several ``assistant`` lines sharing ``message.id``
  (thinking / text / tool_use, one block per line), all carrying the ``message_start`` usage, the last
  one the final ``output_tokens``; ``tool_result`` user lines are interleaved right after the tool_use
  they answer or after the response's last sibling;
* parallel tool calls (share of responses with 0, 1, 2, 3+ tool_use blocks), thinking share;
* long tool outputs (tool_result length quantiles, drawn log-normally between them);
* ``progress`` hook lines around tool calls and ``file-history-snapshot`` lines at user prompts;
* recorded usage consistent with the content: prompt = first-call overhead (system prompt, tools) +
  tokens-per-rough-token ratio × chars/4 of the conversation so far, split into input / cache creation
  / cache read as a cached conversation would be;
* the long session crosses Claude Code's 167,000-token auto-compact threshold and records a real-shaped
  auto-compaction (``compact_boundary`` with ``compactMetadata.preTokens`` + ``isCompactSummary``
  message), then continues; a sub-agent transcript lives under ``<session>/subagents/``.

`write_corpus` writes the default corpus (``python -m workbench.synthetic write data``); the output
loads with zero skipped lines (`workbench ingest data/`). Nothing from the real corpus is copied: the
text is generated from templates over a made-up project.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_LAYOUT", "calibration", "generate_session", "measure_corpus", "write_corpus"]

CALIBRATION_PATH = Path(__file__).parent / "data" / "synthetic_calibration.json"
VERSION = "2.1.39"
MODEL = "claude-opus-4-6"

#: (file stem, calls, target prompt tokens to stop at or None, recorded compaction, seed offset)
DEFAULT_LAYOUT: tuple[dict[str, Any], ...] = (
    {"name": "long-autocompact", "target_tokens": 178_000, "compact_at": 167_000, "after_compact_calls": 15},
    {"name": "medium-feature", "target_tokens": 84_000},
    {"name": "short-bugfix", "target_tokens": 38_000},
    {"name": "short-question", "target_tokens": 27_000},
    {"name": "tiny-hello", "target_tokens": 22_000, "max_calls": 2},
)


# --------------------------------------------------------------------------------------------- measure
def _quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def q(p: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(p * (len(ordered) - 1) + 0.5))])

    return {"n": len(ordered), "p10": q(0.1), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": float(ordered[-1])}


def measure_corpus(paths: Iterable[str | Path]) -> dict[str, Any]:
    """Shape statistics of Claude Code sessions under ``paths`` (what the generator is calibrated on)."""
    from .tokens.context import get_token_usage, prompt_tokens
    from .tokens.js import rough_tokens
    from .transcript import load_paths
    from .transcript.steps import api_calls

    sessions = [s for s in load_paths(list(paths)) if s.format == "claude-code" and s.records]
    kinds: Counter[str] = Counter()
    split_sizes, tool_uses, result_chars, prompt_chars, overheads, ratios, outputs, growth = (
        [],
        [],
        [],
        [],
        [],
        [],
        [],
        [],
    )
    thinking = text = 0
    tools: Counter[str] = Counter()
    progress_per_tool = []
    for session in sessions:
        kinds.update(r.kind for r in session.records)
        records = session.conversation()
        calls = api_calls(records)
        progress = sum(r.kind == "progress" for r in session.records)
        n_tools = 0
        rough_prefix = [0]
        for record in records:
            rough_prefix.append(
                rough_prefix[-1] + sum(rough_tokens(b.text or json.dumps(b.raw)) for b in record.blocks)
            )
        previous = None
        first_prompt = None
        for call in calls:
            blocks = [b for i in call.indices for b in records[i].blocks]
            split_sizes.append(len(call.indices))
            uses = [b for b in blocks if b.kind == "tool_use"]
            tool_uses.append(len(uses))
            n_tools += len(uses)
            tools.update(b.name or "?" for b in uses)
            thinking += any(b.kind == "thinking" for b in blocks)
            text += any(b.kind == "text" for b in blocks)
            usage = call.usage(records)
            if usage is None or get_token_usage(records[call.last]) is None:
                continue
            outputs.append(int(usage.get("output_tokens") or 0))
            prompt = prompt_tokens(usage)
            if first_prompt is None:
                first_prompt = prompt
                overheads.append(prompt - rough_prefix[call.first])
            elif rough_prefix[call.first] > 5_000 and not any(r.is_compact_boundary for r in records[: call.first]):
                ratios.append((prompt - first_prompt) / max(1, rough_prefix[call.first] - rough_prefix[calls[0].first]))
            if previous is not None and prompt > previous:
                growth.append(prompt - previous)
            previous = prompt
        for record in records:
            for block in record.blocks:
                if block.kind == "tool_result":
                    result_chars.append(len(block.result_text()))
            if record.kind == "user" and record.string_content and not record.is_meta and not record.is_compact_summary:
                prompt_chars.append(len(record.text))
        if n_tools:
            progress_per_tool.append(progress / n_tools)
    calls_total = len(split_sizes)
    parallel = Counter(min(n, 3) for n in tool_uses)
    return {
        "sessions": len(sessions),
        "lines": sum(kinds.values()),
        "line_kinds": dict(kinds.most_common()),
        "api_calls": calls_total,
        "calls_per_session": _quantiles([len(api_calls(s.conversation())) for s in sessions]),
        "records_per_call": _quantiles(split_sizes),
        "thinking_share": round(thinking / calls_total, 4) if calls_total else 0.0,
        "text_share": round(text / calls_total, 4) if calls_total else 0.0,
        "tool_uses_per_call": {
            str(k) if k < 3 else "3+": round(parallel[k] / calls_total, 4) for k in sorted(parallel)
        },
        "tool_names": dict(tools.most_common(10)),
        "tool_result_chars": _quantiles(result_chars),
        "user_prompt_chars": _quantiles(prompt_chars),
        "first_call_overhead_tokens": _quantiles(overheads),
        "tokens_per_rough_token": _quantiles(ratios),
        "output_tokens_per_call": _quantiles(outputs),
        "prompt_growth_per_call": _quantiles(growth),
        "progress_lines_per_tool_use": _quantiles(progress_per_tool),
    }


_FALLBACK = {
    "thinking_share": 0.35,
    "text_share": 0.6,
    "tool_uses_per_call": {"0": 0.12, "1": 0.75, "2": 0.09, "3+": 0.04},
    "tool_result_chars": {"p10": 60, "p50": 700, "p90": 6000, "max": 40000},
    "user_prompt_chars": {"p50": 120, "p90": 900},
    "first_call_overhead_tokens": {"p50": 20000},
    "tokens_per_rough_token": {"p50": 1.33},
    "output_tokens_per_call": {"p50": 200, "p90": 1200},
    "progress_lines_per_tool_use": {"p50": 2.0},
}


def calibration() -> dict[str, Any]:
    """The measured statistics shipped with the package (`measure_corpus` output), or built-in defaults."""
    if CALIBRATION_PATH.is_file():
        data = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8"))
        return {**_FALLBACK, **{k: v for k, v in data.items() if v}}
    return dict(_FALLBACK)


# -------------------------------------------------------------------------------------------- generate
_MODULES = ("cart", "checkout", "inventory", "payments", "users", "search", "shipping", "reviews", "auth", "catalog")
_LAYERS = ("models", "views", "services", "api", "tests")
_VERBS = ("load", "save", "validate", "compute", "render", "fetch", "update", "delete", "merge", "resolve")
_NOUNS = ("order", "item", "total", "price", "session", "token", "address", "discount", "stock", "invoice")
_PROMPTS = (
    "The {m} {n} {v} is wrong when the cart has more than one {n2}; find out why and fix it.",
    "Add a {v} endpoint for {n} in the {m} module, with tests.",
    "Refactor {m}/{l}.py so {v}_{n} no longer duplicates the logic in {m2}/{l2}.py.",
    "Tests in tests/test_{m}.py fail on CI with a KeyError on '{n}'. Investigate.",
    "Explain how {v}_{n} flows from the api layer to the database in {m}.",
    "Continue with the next task in TODO.md; keep the commits small.",
)
_ERRORS = (
    "KeyError: '{n}'",
    "AssertionError: expected {a} == {b}",
    "TypeError: {v}_{n}() missing 1 required positional argument: '{n2}'",
    "ModuleNotFoundError: No module named 'shop.{m}.{l}'",
)


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
        if chain:
            self.parent = line["uuid"]
        return line["uuid"]

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


def _words(rng: random.Random) -> dict[str, str]:
    return {
        "m": rng.choice(_MODULES),
        "m2": rng.choice(_MODULES),
        "l": rng.choice(_LAYERS),
        "l2": rng.choice(_LAYERS),
        "v": rng.choice(_VERBS),
        "n": rng.choice(_NOUNS),
        "n2": rng.choice(_NOUNS),
        "a": str(rng.randint(1, 99)),
        "b": str(rng.randint(1, 99)),
    }


def _length(rng: random.Random, quantiles: dict[str, float]) -> int:
    """A tool-result length drawn log-normally through the measured median and p90."""
    median = max(20.0, float(quantiles.get("p50", 700)))
    p90 = max(median * 1.5, float(quantiles.get("p90", 6000)))
    sigma = math.log(p90 / median) / 1.2816
    cap = float(quantiles.get("max", 40000))
    return int(min(cap, max(10.0, rng.lognormvariate(math.log(median), sigma))))


def _code(rng: random.Random, path: str, chars: int) -> str:
    lines, size, n = [], 0, 1
    while size < chars:
        w = _words(rng)
        template = rng.choice(
            (
                "def {v}_{n}(self, {n2}):",
                "    {n} = self.{v}_{n2}({n2})",
                "    if not {n}:",
                "        raise ValueError('invalid {n} for {m}')",
                "    return {n2}.{v}()",
                "class {N}{M}Service:",
                "from shop.{m}.{l} import {v}_{n}",
                "    # {v} the {n} before the {n2} is stored",
                "",
            )
        )
        text = template.format(**w, N=w["n"].title(), M=w["m"].title())
        lines.append(f"{n:>6}\u2192{text}")
        size += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)


def _tool_call(
    rng: random.Random, writer: _Writer, cal: dict[str, Any], fail: bool
) -> tuple[dict[str, Any], tuple[str, bool, Any]]:
    w = _words(rng)
    path = f"{writer.cwd}/shop/{w['m']}/{w['l']}.py"
    tool_id = writer.ident("toolu_01")
    kind = rng.choices(("Read", "Bash", "Grep", "Edit", "Glob"), weights=(40, 30, 12, 14, 4))[0]
    length = _length(rng, cal["tool_result_chars"])
    if kind == "Read":
        inputs = {"file_path": path}
        text = _code(rng, path, length)
        extra: Any = {"type": "text", "file": {"filePath": path, "numLines": text.count("\n") + 1}}
    elif kind == "Bash":
        command = rng.choice(
            (
                f"pytest tests/test_{w['m']}.py -q",
                f"git diff shop/{w['m']}",
                "make lint",
                f"python -m shop.{w['m']}.{w['l']} --check",
            )
        )
        inputs = {"command": command, "description": f"Run {command.split()[0]}"}
        if fail:
            text = f"Exit code 1\n{_ERRORS[rng.randrange(len(_ERRORS))].format(**w)}\n" + _code(
                rng, path, min(length, 800)
            )
        else:
            text = f"{rng.randint(3, 80)} passed in {rng.uniform(0.2, 9):.2f}s\n" + _code(
                rng, path, max(0, length - 40)
            )
        extra = {"stdout": text[:200], "stderr": "", "interrupted": False, "isImage": False}
    elif kind == "Grep":
        inputs = {"pattern": f"{w['v']}_{w['n']}", "path": "shop", "output_mode": "files_with_matches"}
        files = sorted({f"shop/{rng.choice(_MODULES)}/{rng.choice(_LAYERS)}.py" for _ in range(rng.randint(1, 12))})
        text = f"Found {len(files)} files\n" + "\n".join(files)
        extra = {"mode": "files_with_matches", "numFiles": len(files), "filenames": files}
    elif kind == "Glob":
        inputs = {"pattern": f"shop/{w['m']}/**/*.py"}
        files = sorted({f"{writer.cwd}/shop/{w['m']}/{rng.choice(_LAYERS)}.py" for _ in range(rng.randint(1, 6))})
        text = "\n".join(files)
        extra = {"filenames": files, "numFiles": len(files), "truncated": False}
    else:
        old = f"return {w['n2']}.{w['v']}()"
        inputs = {"file_path": path, "old_string": old, "new_string": f"return self.{w['v']}_{w['n2']}({w['n2']})"}
        text = (
            f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"
            if fail
            else f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet:\n"
            + _code(rng, path, min(length, 1200))
        )
        extra = {"filePath": path, "oldString": old, "newString": inputs["new_string"]}
    return {"type": "tool_use", "id": tool_id, "name": kind, "input": inputs}, (text, fail, extra)


def _prose(rng: random.Random, sentences: int) -> str:
    parts = []
    for _ in range(sentences):
        w = _words(rng)
        parts.append(
            rng.choice(
                (
                    "Let me look at how {v}_{n} is used in shop/{m}/{l}.py.",
                    "The failure comes from {m}/{l}.py: {n} is read before {n2} is set.",
                    "I'll run the {m} tests again to confirm the fix.",
                    "Now update the {n2} handling in the {m2} service so both paths agree.",
                    "Good, that works; next, the {n} {v} needs the same guard.",
                )
            ).format(**w)
        )
    return " ".join(parts)


def generate_session(
    seed: int,
    *,
    target_tokens: int,
    compact_at: int | None = None,
    after_compact_calls: int = 0,
    max_calls: int = 10_000,
    session_id: str | None = None,
    agent_id: str | None = None,
    start: datetime | None = None,
) -> list[str]:
    """JSONL lines of one session that grows until its prompt reaches ``target_tokens``.

    With ``compact_at`` the session records an auto-compaction when the prompt first reaches it and
    continues ``after_compact_calls`` more calls. ``agent_id`` makes it a sub-agent transcript (all
    lines ``isSidechain``, no file-history snapshots).
    """
    rng = random.Random(seed)
    cal = calibration()
    sid = session_id or str(uuid.UUID(int=rng.getrandbits(128), version=4))
    writer = _Writer(
        rng,
        sid,
        cwd="/home/USER/projects/acme-shop",
        branch=f"feature-{rng.randint(100, 999)}",
        agent_id=agent_id,
        start=start or datetime(2026, 1, 15, 9, 0, tzinfo=UTC) + timedelta(days=seed % 28),
    )
    weights = cal["tool_uses_per_call"]
    parallel = [weights.get("0", 0.1), weights.get("1", 0.75), weights.get("2", 0.1), weights.get("3+", 0.05)]
    calls = 0
    compacted = False
    remaining_after = after_compact_calls
    writer.user_prompt(rng.choice(_PROMPTS).format(**_words(rng)))
    thinking_turn = rng.random() < min(1.0, 3 * cal["thinking_share"])
    first_of_turn = True
    while calls < max_calls:
        if compact_at and not compacted and writer.prompt_tokens >= compact_at:
            summary = (
                "This session is being continued from a previous conversation that ran out of context. "
                "The conversation is summarized below:\n" + _prose(rng, 24)
            )
            writer.compact(summary)
            compacted = True
            first_of_turn = True  # the summary opens the kept context: the next response starts the loop
        if compacted:
            if remaining_after <= 0:
                break
            remaining_after -= 1
        elif writer.prompt_tokens >= target_tokens:
            break
        n_tools = rng.choices((0, 1, 2, 3), weights=parallel)[0]
        if calls == max_calls - 1:
            n_tools = 0
        blocks: list[dict[str, Any]] = []
        # Thinking opens a turn's first response (and some later ones): the API requires the tool loop's
        # first assistant message to start with thinking whenever a later response in it thinks (docs §9).
        if thinking_turn and (first_of_turn or rng.random() < 0.3):
            blocks.append(
                {"type": "thinking", "thinking": _prose(rng, rng.randint(1, 6)), "signature": "[REDACTED_SIGNATURE]"}
            )
        if n_tools == 0 or rng.random() < cal["text_share"]:
            blocks.append({"type": "text", "text": _prose(rng, rng.randint(1, 4 if n_tools else 8))})
        results = {}
        for _ in range(n_tools):
            block, result = _tool_call(rng, writer, cal, fail=rng.random() < 0.08)
            blocks.append(block)
            results[block["id"]] = result
        writer.response(blocks, results)
        calls += 1
        first_of_turn = False
        if n_tools == 0 and calls < max_calls:
            writer.user_prompt(rng.choice(_PROMPTS).format(**_words(rng)))
            thinking_turn = rng.random() < min(1.0, 3 * cal["thinking_share"])
            first_of_turn = True
    return writer.lines


def write_corpus(out: str | Path, *, seed: int = 0, layout: Sequence[dict[str, Any]] = DEFAULT_LAYOUT) -> list[Path]:
    """Write the default synthetic corpus (one file per layout entry, plus one sub-agent transcript)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for index, entry in enumerate(layout):
        params = {k: v for k, v in entry.items() if k != "name"}
        rng = random.Random(seed * 1000 + index)
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        lines = generate_session(seed * 1000 + index, session_id=sid, **params)
        path = root / f"{entry['name']}-{sid[:8]}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(path)
        if index == 1:  # the medium session delegates to a sub-agent
            agent = f"a{rng.getrandbits(24):06x}"
            sub = generate_session(seed * 1000 + 100 + index, target_tokens=26_000, session_id=sid, agent_id=agent)
            path = root / f"{entry['name']}-{sid[:8]}" / "subagents" / f"agent-{agent}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(sub) + "\n", encoding="utf-8")
            written.append(path)
    return written


def _main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m workbench.synthetic", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    measure = sub.add_parser("measure", help="print corpus statistics as JSON")
    measure.add_argument("paths", nargs="+")
    write = sub.add_parser("write", help="write the default synthetic corpus")
    write.add_argument("out")
    write.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "measure":
        print(json.dumps(measure_corpus(args.paths), indent=2))
    else:
        for path in write_corpus(args.out, seed=args.seed):
            print(path)


if __name__ == "__main__":
    _main()
