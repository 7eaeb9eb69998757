"""Small hand-made Claude Code-shaped sessions for replay tests (no corpus needed).

Each turn: a user prompt (string content), then ``tools`` API calls, each streamed as a thinking record
and a tool_use record sharing one ``message.id`` with the tool_result interleaved, then a final text
answer. ``usage`` grows with what was sent, so thresholds are crossed deterministically.
"""

from __future__ import annotations

from workbench.tokens.context import usage_tokens
from workbench.tokens.estimators import get_estimator
from workbench.transcript import Block, Record, Session


def _record(kind: str, uuid: str, blocks, *, mid=None, usage=None, string=False, minute: int = 0) -> Record:
    ts = f"2026-01-01T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"  # one minute per record
    return Record(
        kind=kind,
        uuid=uuid,
        role=kind,
        message_id=mid,
        usage=usage,
        timestamp=ts,
        blocks=tuple(
            Block.text_block(blocks) if string else Block.from_raw(b) for b in ([blocks] if string else blocks)
        ),
        string_content=string,
        has_content=True,
        model="claude-opus-4-6" if kind == "assistant" else None,
        session_id="synthetic",
    )


def make_session(turns: int = 6, tools: int = 3, result_chars: int = 8_000, overhead: int = 5_000) -> Session:
    rough = get_estimator("claude-rough")
    records: list[Record] = []
    n = 0

    def usage_now(output: int) -> dict:
        sent = sum(rough.count_many(records))
        return {
            "input_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": overhead + sent,
            "output_tokens": output,
        }

    def _rec(*args, **kwargs) -> Record:
        return _record(*args, minute=len(records), **kwargs)

    for t in range(turns):
        records.append(_rec("user", f"u{t}", f"Turn {t}: please fix bug {t} in src/mod{t}.py", string=True))
        for c in range(tools):
            mid = f"msg_{t}_{c}"
            tid = f"toolu_{t}_{c}"
            usage = usage_now(40)
            records.append(
                _rec(
                    "assistant",
                    f"a{t}.{c}.th",
                    [{"type": "thinking", "thinking": f"plan {t}.{c}", "signature": "s"}],
                    mid=mid,
                    usage=usage,
                )
            )
            records.append(
                _rec(
                    "assistant",
                    f"a{t}.{c}.tu",
                    [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": f"pytest tests/test_{t}_{c}.py"},
                        }
                    ],
                    mid=mid,
                    usage=usage,
                )
            )
            records.append(
                _rec(
                    "user",
                    f"r{t}.{c}",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": tid,
                            "content": f"FAILED test_{t}_{c} " + "x" * result_chars,
                        }
                    ],
                )
            )
            n += 1
        mid = f"msg_{t}_final"
        records.append(
            _rec(
                "assistant",
                f"a{t}.txt",
                [{"type": "text", "text": f"Fixed bug {t} by editing src/mod{t}.py."}],
                mid=mid,
                usage=usage_now(20),
            )
        )
    return Session(
        id="synthetic",
        records=tuple(records),
        format="claude-code",
        session_id="synthetic",
        capabilities=frozenset({"usage", "message_ids", "uuids"}),
    )


def final_context_tokens(session: Session) -> int:
    last = next(r for r in reversed(session.records) if r.usage)
    return usage_tokens(last.usage)
