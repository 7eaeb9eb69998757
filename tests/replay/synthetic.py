"""Small hand-made Claude Code-shaped sessions for replay tests (no corpus needed).

Each turn: a user prompt (string content), then ``tools`` API calls, each streamed as a thinking record
and a tool_use record sharing one ``message.id`` with the tool_result interleaved, then a final text
answer. ``usage`` grows with what was sent, so thresholds are crossed deterministically.
"""

from __future__ import annotations

from typing import Any

from record_builders import assistant, say, session, thinking, tool_result, tool_use, user

from workbench.tokens.context import usage_tokens
from workbench.tokens.estimators import get_estimator
from workbench.transcript import Record, Session

MODEL = "claude-opus-4-6"


def make_session(turns: int = 6, tools: int = 3, result_chars: int = 8_000, overhead: int = 5_000) -> Session:
    rough = get_estimator("claude-rough")
    records: list[Record] = []

    def usage_now(output: int) -> dict:
        sent = sum(rough.count_many(records))
        return {
            "input_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": overhead + sent,
            "output_tokens": output,
        }

    def line() -> dict[str, Any]:
        """The fields every record shares; one minute per record."""
        minute = len(records)
        return {"timestamp": f"2026-01-01T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z", "session_id": "synthetic"}

    for t in range(turns):
        records.append(user(f"Turn {t}: please fix bug {t} in src/mod{t}.py", uuid=f"u{t}", cwd=None, **line()))
        for c in range(tools):
            mid = f"msg_{t}_{c}"
            tid = f"toolu_{t}_{c}"
            usage = usage_now(40)
            records.append(
                assistant(
                    thinking(f"plan {t}.{c}", signature="s"),
                    message_id=mid,
                    uuid=f"a{t}.{c}.th",
                    usage=usage,
                    model=MODEL,
                    **line(),
                )
            )
            records.append(
                assistant(
                    tool_use(tid, "Bash", command=f"pytest tests/test_{t}_{c}.py"),
                    message_id=mid,
                    uuid=f"a{t}.{c}.tu",
                    usage=usage,
                    model=MODEL,
                    **line(),
                )
            )
            result = tool_result(tid, f"FAILED test_{t}_{c} " + "x" * result_chars)
            records.append(user(result, uuid=f"r{t}.{c}", cwd=None, **line()))
        records.append(
            say(
                f"Fixed bug {t} by editing src/mod{t}.py.",
                message_id=f"msg_{t}_final",
                uuid=f"a{t}.txt",
                usage=usage_now(20),
                model=MODEL,
                **line(),
            )
        )
    return session(records, session_id="synthetic")


def final_context_tokens(session: Session) -> int:
    last = next(r for r in reversed(session.records) if r.usage)
    return usage_tokens(last.usage)
