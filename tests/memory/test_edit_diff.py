"""The diff that prices a session-memory extraction's Edit calls (`workbench.memory.fork.edit_calls`) runs
on cydifflib's port of difflib's ``SequenceMatcher``: its opcodes, and so every Edit and every priced token,
must be exactly the standard library's, on the notes real replays write and on adversarial line lists."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.memory import fork


def _opcodes(matcher: type, old: list[str], new: list[str]) -> list[tuple]:
    return [tuple(op) for op in matcher(None, old, new, autojunk=False).get_opcodes()]


def test_the_fast_matcher_is_in_use() -> None:
    cydifflib = pytest.importorskip("cydifflib")
    assert fork.SequenceMatcher is cydifflib.SequenceMatcher


def test_the_edits_of_real_extractions_are_the_standard_librarys(corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every extraction of ``sm-compact`` over the real Claude Code sessions: the same opcodes, the same
    Edit calls and the same edit tokens with either matcher."""
    from workbench.replay import replay_session
    from workbench.strategies import create
    from workbench.transcript import load_paths

    pairs: list[tuple[str, str, str]] = []
    real = fork.edit_calls

    def capture(before: str, after: str, path: str) -> list[dict[str, str]]:
        pairs.append((before, after, path))
        return real(before, after, path)

    monkeypatch.setattr(fork, "edit_calls", capture)
    strategy = create("sm-compact")
    for session in load_paths([corpus / "claude-code"]):
        replay_session(session, strategy)
    assert len(pairs) > 20 and any(b != a for b, a, _ in pairs)
    fast = [real(b, a, p) for b, a, p in pairs]
    monkeypatch.setattr(fork, "edit_calls", real)
    tokens = [fork.edit_tokens(b, a, p) for b, a, p in pairs]
    monkeypatch.setattr(fork, "SequenceMatcher", difflib.SequenceMatcher)
    assert [real(b, a, p) for b, a, p in pairs] == fast
    assert [fork.edit_tokens(b, a, p) for b, a, p in pairs] == tokens and sum(tokens) > 0


lines = st.lists(st.sampled_from(["", "# Title", "- a", "- b", "- c", "x" * 30, "- a"]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(old=lines, new=lines)
def test_the_opcodes_equal_difflibs_on_repetitive_line_lists(old: list[str], new: list[str]) -> None:
    """Few distinct lines, many repeats: where ties between equally long matches decide the opcodes."""
    assert _opcodes(fork.SequenceMatcher, old, new) == _opcodes(difflib.SequenceMatcher, old, new)
