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

The package by concern: `calibration` (``measure_corpus`` and the shipped statistics), `writer` (the
``_Writer`` building one session's lines), `content` (the vocabulary and text generators); this module
draws sessions from them (`generate_session`, `write_corpus`) and ``__main__`` is the command line.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .calibration import CALIBRATION_PATH as CALIBRATION_PATH
from .calibration import calibration, measure_corpus
from .content import _PROMPTS, _prose, _tool_call, _words
from .writer import MODEL as MODEL
from .writer import VERSION as VERSION
from .writer import _Writer

__all__ = ["DEFAULT_LAYOUT", "calibration", "generate_session", "measure_corpus", "write_corpus"]

#: (file stem, calls, target prompt tokens to stop at or None, recorded compaction, seed offset)
DEFAULT_LAYOUT: tuple[dict[str, Any], ...] = (
    {"name": "long-autocompact", "target_tokens": 178_000, "compact_at": 167_000, "after_compact_calls": 15},
    {"name": "medium-feature", "target_tokens": 84_000},
    {"name": "short-bugfix", "target_tokens": 38_000},
    {"name": "short-question", "target_tokens": 27_000},
    {"name": "tiny-hello", "target_tokens": 22_000, "max_calls": 2},
)


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
