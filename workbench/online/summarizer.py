"""Model-backed full-compact summary: Claude Code's ``compactConversation`` summary call (docs §5.1-5.2).

`OnlineSummarizer` implements `workbench.summarize.offline.Summarizer` and mirrors the streaming
fallback path of docs §5.1 step 4:

* messages: the conversation (normalize, images → ``[image]``, documents → ``[document]``), then one
  user message with `workbench.summarize.prompt.build_compact_prompt` (the 9-section prompt, custom
  instructions as ``Additional Instructions``), then pairing repair (`workbench.online.messages`);
* system prompt ``You are a helpful AI assistant tasked with summarizing conversations.``, no thinking;
* ``max_tokens = min(COMPACT_MAX_OUTPUT_TOKENS = 20000, model max output)``;
* tools: Claude Code offers ``[Read]`` and rejects any call afterwards; we offer the same ``Read``
  definition (recorded ``tool_use`` history stays a well-formed tool conversation) with
  ``tool_choice: none`` so the API itself refuses tool calls (our deviation: saves a wasted answer);
* prompt too long (a 400 ``prompt is too long``): up to ``MAX_PTL_RETRIES = 3`` retries, each dropping the
  oldest API-round groups (a group starts at each assistant with a new ``message.id``) until the parsed
  token gap is covered by their rough size, or 20 % of the groups (at least 1) when the gap does not
  parse; at least one group is kept; out of retries → ``Conversation too long…``;
* a response without text → ``Failed to generate conversation summary…``.

`summarize` returns the **raw** text (``<analysis>…</analysis><summary>…</summary>``): the caller formats
it with `workbench.summarize.prompt.format_compact_summary` / ``compact_user_summary_message``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..summarize.prompt import build_compact_prompt
from ..tokens.estimators import ClaudeRough
from ..transcript.model import Record
from .cache import ResponseCache
from .client import DEFAULT_MODEL, MESSAGES, OnlineAPIError, OnlineCaller, RetryPolicy, model_max_output_tokens
from .messages import conversation_messages

__all__ = [
    "COMPACT_MAX_OUTPUT_TOKENS",
    "COMPACT_SYSTEM_PROMPT",
    "CONVERSATION_TOO_LONG",
    "MAX_PTL_RETRIES",
    "NO_SUMMARY_ERROR",
    "READ_TOOL",
    "OnlineSummarizer",
    "OnlineSummaryError",
    "api_round_groups",
]

COMPACT_SYSTEM_PROMPT = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACT_MAX_OUTPUT_TOKENS = 20_000
MAX_PTL_RETRIES = 3
CONVERSATION_TOO_LONG = "Conversation too long. Press esc twice to go up a few messages and try again."
NO_SUMMARY_ERROR = "Failed to generate conversation summary - response did not contain valid text content"
_PTL = re.compile(r"prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)", re.IGNORECASE)

READ_TOOL: dict[str, Any] = {
    "name": "Read",
    "description": "Reads a file from the local filesystem.",
    "input_schema": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path to the file to read"},
            "offset": {"type": "number", "description": "The line number to start reading from"},
            "limit": {"type": "number", "description": "The number of lines to read"},
        },
        "required": ["file_path"],
        "additionalProperties": False,
    },
}


class OnlineSummaryError(RuntimeError):
    """The model gave no usable summary, or the conversation stayed too long after the PTL retries."""


def api_round_groups(records: Sequence[Record]) -> list[list[Record]]:
    """``groupMessagesByApiRound``: a new group at each assistant whose ``message.id`` differs from the
    previous assistant's (records before the first assistant form the first group)."""
    groups: list[list[Record]] = []
    last_id: object = object()
    for record in records:
        if record.kind == "assistant" and record.message_id != last_id:
            groups.append([])
            last_id = record.message_id
        if not groups:
            groups.append([])
        groups[-1].append(record)
    return [g for g in groups if g]


def _drop_head(records: Sequence[Record], gap: int | None) -> list[Record]:
    groups = api_round_groups(records)
    if len(groups) <= 1:
        return list(records)
    if gap is None:
        drop = max(1, len(groups) // 5)
    else:
        rough, drop, covered = ClaudeRough(), 0, 0
        while drop < len(groups) - 1 and covered < gap:
            covered += sum(rough.count(r) for r in groups[drop])
            drop += 1
        drop = max(drop, 1)
    drop = min(drop, len(groups) - 1)
    return [r for g in groups[drop:] for r in g]


class OnlineSummarizer(OnlineCaller):
    """`Summarizer` backed by the Messages API (see the module docstring).

    Args:
        model: the summarising model (Claude Code uses the main-loop model).
        client: an ``anthropic.Anthropic``; default: built from ``ANTHROPIC_API_KEY`` at the first call.
        cache: ``True`` (default on-disk cache), ``False`` or a `ResponseCache`/path.
        retry: bounded-backoff policy for 429/5xx/529.
        max_tokens: default ``min(20000, model_max_output_tokens(model))``.
        max_ptl_retries: prompt-too-long retries (Claude Code: 3).
        temperature: sent only when given.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        client: Any = None,
        cache: ResponseCache | bool | None = True,
        *,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        max_ptl_retries: int = MAX_PTL_RETRIES,
        temperature: float | None = None,
        drop_thinking: bool = True,
    ) -> None:
        super().__init__(model, client=client, cache=cache, retry=retry)
        self.max_tokens = max_tokens or min(COMPACT_MAX_OUTPUT_TOKENS, model_max_output_tokens(model))
        self.max_ptl_retries = max_ptl_retries
        self.temperature = temperature
        self.drop_thinking = drop_thinking
        self.name = f"anthropic:{model}"
        self.last_response: dict[str, Any] | None = None
        self.ptl_retries = 0

    def _repr_fields(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens}

    def request_params(self, records: Sequence[Record], custom_instructions: str | None = None) -> dict[str, Any]:
        """The exact request body `summarize` sends for ``records`` (also the cache key's input)."""
        messages = conversation_messages(
            records, build_compact_prompt(custom_instructions), strip_media=True, drop_thinking=self.drop_thinking
        )
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": COMPACT_SYSTEM_PROMPT,
            "messages": messages,
            "tools": [READ_TOOL],
            "tool_choice": {"type": "none"},
        }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def summarize(self, records: Sequence[Record], *, custom_instructions: str | None = None) -> str:
        if not records:
            raise OnlineSummaryError("Not enough messages to compact.")
        current = list(records)
        self.ptl_retries = 0
        while True:
            try:
                response = self._request(MESSAGES, self.request_params(current, custom_instructions))
            except OnlineAPIError as err:
                if not err.prompt_too_long:
                    raise
                if self.ptl_retries >= self.max_ptl_retries:
                    raise OnlineSummaryError(CONVERSATION_TOO_LONG) from None
                match = _PTL.search(err.message)
                gap = int(match.group(1)) - int(match.group(2)) if match else None
                shorter = _drop_head(current, gap)
                if len(shorter) == len(current):
                    raise OnlineSummaryError(CONVERSATION_TOO_LONG) from None
                current = shorter
                self.ptl_retries += 1
                continue
            break
        self.last_response = response
        text = "".join(
            str(b.get("text", ""))
            for b in response.get("content") or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
        if not text.strip():
            raise OnlineSummaryError(NO_SUMMARY_ERROR)
        if text.startswith("API Error"):
            raise OnlineSummaryError(text)
        return text
