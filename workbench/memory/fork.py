"""One session-memory extraction as the replay records it: Claude Code's forked "update the notes" call.

With session memory Claude Code pays at *extraction* time, not at compaction: SM-compaction reads the
notes file from disk and makes no API call (docs §2.6 step 3). An extraction is the post-sampling hook
(docs §1.3) deciding, with ``shouldExtractMemory``, to run ``runForkedAgent`` over the whole current
conversation as a cache-sharing fork (``querySource: 'session_memory'``) plus one extra user message, the
update prompt with the current notes inlined (docs §1.1); the fork's reply is one or more parallel
``Edit`` calls on the notes file, then it stops.

`ExtractionCall` is what one such call reads and writes, measured when the strategy extracts
(`workbench.strategies.sm_compact.observe_sm`) and priced by `workbench.metrics.memory_cost`:

* ``context_tokens``: the conversation the fork reads, the hook's ``tokenCountWithEstimation`` (the
  context sent for the previous call plus that call's response, docs §1.3);
* ``prompt_tokens``: the update prompt, chars/4 of `workbench.memory.prompt.build_update_prompt` with the
  notes *before* the extraction (the template on the first one) and their size reminders;
* ``notes_tokens``: chars/4 of the notes file after the extraction;
* ``edit_tokens``: the Edit calls (the fork's output). The online extractor's recorded
  ``output_tokens`` when it reports them; otherwise the estimate of `edit_calls`, from the notes before
  and after: one Edit per changed run of lines (difflib's ``SequenceMatcher``; cydifflib's C++ port of it
  when installed, the same opcodes about 3.5x faster: `SequenceMatcher` below), ``old_string`` the old lines (for a pure
  insertion the line before it, since Edit needs a non-empty anchor), ``new_string`` the new lines, each
  counted as a tool_use is (``name + JSON.stringify(input)``, chars/4). A lower bound of what a model
  writes: it re-states context around its changes;
* ``extractor``: which extractor wrote the notes: ``offline`` (deterministic, no model call) or the
  online extractor's name, ``anthropic:<model>``. The price is the same for both: it models Claude
  Code's fork, not the request our extractor sends (the online one sends only the records since the
  previous extraction, `workbench.strategies.sm_compact._unseen`).

The replay engine puts these on the step row of the call *before* which the hook ran (the hook of the
previous response; `workbench.replay.engine`): `ExtractionCall.columns`, and `NO_EXTRACTION` on every
other row, so every strategy's steps have the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

try:  # the same algorithm and opcodes as difflib's (tests/memory/test_edit_diff.py pins them on real notes)
    from cydifflib import SequenceMatcher
except ImportError:  # pragma: no cover - cydifflib is a dependency; the standard library is the fallback
    from difflib import SequenceMatcher

from ..tokens.js import js_len, js_round, js_stringify, rough_tokens
from ..transcript.model import Record
from .prompt import DEFAULT_UPDATE_PROMPT, build_update_prompt, default_memory_path
from .template import SessionMemory

__all__ = ["EXTRACTION_COLUMNS", "NO_EXTRACTION", "ExtractionCall", "edit_calls", "edit_tokens", "extraction_call"]

#: The step columns of an extraction (`ExtractionCall.columns`), in order.
EXTRACTION_COLUMNS = (
    "memory_extraction",
    "extraction_context_tokens",
    "extraction_prompt_tokens",
    "extraction_notes_tokens",
    "extraction_edit_tokens",
    "extractor",
)
#: The columns of a step before which no extraction ran.
NO_EXTRACTION: dict[str, Any] = {
    "memory_extraction": False,
    "extraction_context_tokens": 0,
    "extraction_prompt_tokens": 0,
    "extraction_notes_tokens": 0,
    "extraction_edit_tokens": 0,
    "extractor": None,
}


@dataclass(frozen=True, slots=True)
class ExtractionCall:
    """One extraction's forked call (module docstring)."""

    context_tokens: int
    prompt_tokens: int
    notes_tokens: int
    edit_tokens: int
    extractor: str

    @property
    def columns(self) -> dict[str, Any]:
        """This extraction as step columns (`EXTRACTION_COLUMNS`)."""
        return {
            "memory_extraction": True,
            "extraction_context_tokens": self.context_tokens,
            "extraction_prompt_tokens": self.prompt_tokens,
            "extraction_notes_tokens": self.notes_tokens,
            "extraction_edit_tokens": self.edit_tokens,
            "extractor": self.extractor,
        }


def edit_calls(before: str, after: str, path: str) -> list[dict[str, str]]:
    """The Edit inputs that turn the notes ``before`` into ``after``: one per changed run of lines."""
    old, new = before.split("\n"), after.split("\n")
    calls = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        removed, added = old[i1:i2], new[j1:j2]
        if not removed:  # a pure insertion: anchor on the line before it (the first line at the very top)
            if i1:
                removed, added = [old[i1 - 1]], [old[i1 - 1], *added]
            else:
                removed, added = old[:1], [*added, *old[:1]]
        calls.append({"file_path": path, "old_string": "\n".join(removed), "new_string": "\n".join(added)})
    return calls


def edit_tokens(before: str, after: str, path: str) -> int:
    """chars/4 of the Edit tool_uses of `edit_calls`, counted like any tool_use: name + JSON input."""
    # rough_tokens("Edit" + json) without the concatenation: a JavaScript length adds up over its parts
    return sum(js_round((4 + js_len(js_stringify(call))) / 4) for call in edit_calls(before, after, path))


def extraction_call(
    records: Sequence[Record],
    context_tokens: int,
    before: SessionMemory | None,
    after: SessionMemory,
    extractor: Any,
) -> ExtractionCall:
    """Measure the extraction that turned ``before`` (None: the template) into ``after``.

    Args:
        records: the conversation the hook saw (names the notes path of the prompt).
        context_tokens: the hook's ``tokenCountWithEstimation`` of ``records``.
        before: the notes before the extraction, None before the first one.
        after: the notes the extractor returned.
        extractor: the extractor that ran (its ``name``; an online one's ``last_report`` usage).
    """
    previous = before or SessionMemory.empty()
    notes = previous.text
    path = getattr(extractor, "notes_path", None) or default_memory_path(records)
    template = getattr(extractor, "prompt_template", None) or DEFAULT_UPDATE_PROMPT
    report = getattr(extractor, "last_report", None)  # the online extractor's record of its calls
    recorded = (getattr(report, "usage", None) or {}).get("output_tokens")
    output = recorded if isinstance(recorded, int) and recorded > 0 else edit_tokens(notes, after.text, path)
    return ExtractionCall(
        context_tokens=int(context_tokens),
        prompt_tokens=rough_tokens(build_update_prompt(previous, path, template)),
        notes_tokens=after.tokens,
        edit_tokens=output,
        extractor=str(getattr(extractor, "name", type(extractor).__name__)),
    )
