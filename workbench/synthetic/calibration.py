"""What the generator is calibrated on: `measure_corpus` measures the shapes of Claude Code sessions,
`calibration` reads the values measured on the open corpus (``workbench/data/synthetic_calibration.json``),
or built-in defaults when the file is missing. See the package docstring for the shapes themselves.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CALIBRATION_PATH", "calibration", "measure_corpus"]

CALIBRATION_PATH = Path(__file__).parent.parent / "data" / "synthetic_calibration.json"


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def q(p: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(p * (len(ordered) - 1) + 0.5))])

    return {"n": len(ordered), "p10": q(0.1), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": float(ordered[-1])}


def measure_corpus(paths: Iterable[str | Path]) -> dict[str, Any]:
    """Shape statistics of Claude Code sessions under ``paths`` (what the generator is calibrated on)."""
    from ..tokens.context import get_token_usage, prompt_tokens
    from ..tokens.js import rough_tokens
    from ..transcript import load_paths
    from ..transcript.steps import api_calls

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
