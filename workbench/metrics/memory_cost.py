"""What session memory costs: its extractions, priced as Claude Code's forked call, and no summariser call
for an SM-compaction whose summary is the notes file. `workbench.metrics.cost` adds both to a session's
dollars (``memory_cost_usd``, ``memory_share``; its docstring has the definitions).

**Session-memory extractions, priced as Claude Code's forked call.** What session memory really costs is
the extraction (docs §1.3): each post-sampling hook run where ``shouldExtractMemory`` says so forks the
conversation (``runForkedAgent``, a *cache-sharing* fork, ``querySource: 'session_memory'``) with one extra
user message, the update prompt with the current notes (docs §1.1), and the reply is the Edit calls. The
replay records each on the step row of the next call (`workbench.memory.fork`, `workbench.replay.engine`);
`_memory_rows` prices it as one call:

* **cache read**: the prefix the fork shares with the main thread's cache, the simulated prompt of the
  call whose response the hook saw (``min(prompt(k−1), extraction_context_tokens)``);
* **cache write**: the rest of the conversation it reads (that response, not yet cached) plus the update
  prompt (``extraction_prompt_tokens``), at the session's cache-write rate (5 min, or 1 h). A request
  writes what follows its cache breakpoint, and the recorded compaction forks do exactly that: each of the
  corpus' three ``agent-acompact-*`` calls read ~165k tokens from the cache and wrote its 2.5k-8.7k token
  tail (3 tokens of uncached input), so the extraction's tail is a write, not plain input;
* **output**: the Edit calls (``extraction_edit_tokens``: the online extractor's recorded output, else
  the estimate from the notes' changed lines, `workbench.memory.fork.edit_calls`).

Worked example (claude-opus-4-6 as in `workbench.metrics.cost`'s: input $5, write $6.25, read $0.50, output
$25 per MTok; `tests/metrics/test_memory_cost.py`): prompts 10k, 12k, 15k, then 4k after an SM-compaction;
before step 1 an extraction read 10.5k (prompt(0) + the 500-token response) with a 1k update prompt and wrote
200 tokens of edits: 10k·0.50 + 1.5k·6.25 + 200·25 = $0.019375; before step 2 one read 12.8k with a 1.2k
prompt, 300 out: 12k·0.50 + 2k·6.25 + 300·25 = $0.026. ``memory_cost_usd`` = $0.045375, no summariser call; a
fallback to full compaction there (summary 1k tokens, ``tokens_before`` 17k) would add one: 14k·0.50 + 1k·25 =
$0.032.

Not modelled: the fork's second turn (the Edit results go back and the model ends its turn: another cache
read of the same prefix and a few output tokens; our online extractor skips it too), and that the main
thread's next request could read the response from the fork's write instead of writing it again. Steps
written before the extraction columns existed carry no extractions: their SM runs are then priced
without them (`workbench report` notes it).

SM-compaction itself (``summary_source == "session-memory"``; before that column, the kinds
``sm-compact``/``sm-compact-naive``) makes **no** API call: the summary is the notes file read from disk
(docs §2.6 step 3), so `_from_session_memory` events add no summariser call in `workbench.metrics.cost`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._common import KEYS, Cells, cell_rows, row_cells
from .pricing import Price, price_or_none, tokens_dollars

__all__ = ["MEMORY_COLUMNS", "_from_session_memory", "_memory_rows", "with_memory_cost"]


#: Event kinds whose summary is the session-memory file (events written before ``summary_source`` existed).
_SM_KINDS = frozenset({"sm-compact", "sm-compact-naive"})


def _from_session_memory(event: Mapping[str, Any]) -> bool:
    """The summary is the notes file read from disk: SM-compaction makes no API call (docs §2.6 step 3)."""
    source = event.get("summary_source")
    if isinstance(source, str):
        return source == "session-memory"
    return event.get("kind") in _SM_KINDS


MEMORY_COLUMNS = [*KEYS, "memory_extractions", "memory_read", "memory_write", "memory_output", "memory_cost_usd"]


def _memory_rows(
    steps: pd.DataFrame, per_step: pd.DataFrame, pricing: Mapping[str, Price], default: str
) -> pd.DataFrame:
    """One row per session-memory extraction (a step with ``memory_extraction``), priced as its forked call.

    The fork shares the main conversation's prompt cache (docs §1.3: a cache-sharing ``runForkedAgent``):
    it reads from the cache the prefix the main thread just sent, the simulated prompt of the previous
    step (the call whose response the hook saw), and writes what follows (that response and the update
    prompt) at the session's cache-write rate, as the recorded compaction forks do (``agent-acompact-*``:
    ~165k read, 2.5k-8.7k written, 3 tokens of input); its output is the Edit calls.
    """
    rows = []
    for row in _extractions(steps, per_step):
        context = int(row.get("extraction_context_tokens") or 0)
        read = min(int(row["previous_prompt"]), context)
        write = context - read + int(row.get("extraction_prompt_tokens") or 0)
        output = int(row.get("extraction_edit_tokens") or 0)
        price = price_or_none(row["previous_model"], pricing, default)
        hour = row["previous_ttl"] == "1h"
        dollars = (
            float("nan")
            if price is None
            else tokens_dollars(
                price,
                cache_read=read,
                cache_write_5m=0 if hour else write,
                cache_write_1h=write if hour else 0,
                output=output,
            )
        )
        rows.append(
            {
                **{k: row[k] for k in KEYS},
                "memory_extractions": 1,
                "memory_read": read,
                "memory_write": write,
                "memory_output": output,
                "memory_cost_usd": dollars,
            }
        )
    return pd.DataFrame(rows, columns=MEMORY_COLUMNS)


def _extractions(steps: pd.DataFrame, per_step: pd.DataFrame) -> list[dict[str, Any]]:
    """The steps with ``memory_extraction`` (their cell, step and extraction counts, nulls as 0), each
    with its previous call's ``previous_prompt``, ``previous_model`` and ``previous_ttl`` (`_previous_calls`;
    one row per `cost_steps` row of its step, none without a previous call)."""
    if "memory_extraction" not in steps.columns or per_step.empty:
        return []
    extracted = steps[steps["memory_extraction"].fillna(False).astype(bool)]
    if extracted.empty:
        return []
    columns = [*KEYS, "step", "extraction_context_tokens", "extraction_prompt_tokens", "extraction_edit_tokens"]
    extracted = extracted.reindex(columns=columns)
    counts = columns[-3:]
    extracted[counts] = extracted[counts].apply(pd.to_numeric, errors="coerce").fillna(0)
    extracted["step"] = extracted["step"].astype(int)
    previous = _previous_calls(per_step)
    # the hook runs after a response, so a previous step always exists in a whole replay
    return [
        {**row, "previous_prompt": before[0], "previous_model": before[1], "previous_ttl": before[2]}
        for row in extracted.to_dict("records")
        for before in previous.get((*(row[k] for k in KEYS), row["step"]), ())
        if before is not None and not pd.isna(before[0])
    ]


def _previous_calls(per_step: pd.DataFrame) -> dict[tuple[Any, ...], list[tuple[Any, Any, Any] | None]]:
    """``{(*cell, step): [(prompt_tokens, model, ttl) of the row before, or None for a cell's first]}``: for
    each `cost_steps` row, the one before it in its cell by step (ties in row order), the call whose
    response the extraction hook saw; a row with a null key has none."""
    steps = per_step["step"].tolist()
    before_values = list(zip(*(per_step[c].tolist() for c in ("prompt_tokens", "model", "ttl")), strict=True))
    out: dict[tuple[Any, ...], list[tuple[Any, Any, Any] | None]] = {}
    for cell, positions in cell_rows(per_step).items():
        before = None
        for position in sorted(positions, key=steps.__getitem__):  # stable: ties stay in row order
            out.setdefault((*cell, int(steps[position])), []).append(before)
            before = before_values[position]
    return out


def with_memory_cost(
    sessions: pd.DataFrame, steps: pd.DataFrame, per_step: pd.DataFrame, pricing: Mapping[str, Price], default: str
) -> pd.DataFrame:
    """``sessions`` (one row per `KEYS`) with ``memory_extractions`` and ``memory_cost_usd``: the sum of its
    extractions (`_memory_rows`), 0 without any, NaN when one of them could not be priced."""
    memory = _memory_rows(steps, per_step, pricing, default)
    found: dict[tuple[Any, ...], tuple[int, float]] = {}
    if len(memory):
        cells = Cells(memory)  # each cell's extractions, and their own sum (NaN when one is unpriced)
        sums = zip(cells.size().tolist(), cells.own_sums(memory["memory_cost_usd"]), strict=True)
        found = dict(zip(cells.tuples(), sums, strict=True))
    pairs = [found.get(cell, (0, 0.0)) for cell in row_cells(sessions)]
    out = sessions.copy()
    out["memory_extractions"] = np.array([n for n, _ in pairs], dtype=np.int64)
    out["memory_cost_usd"] = np.array([dollars for _, dollars in pairs], dtype=float)
    return out
