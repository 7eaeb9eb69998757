"""`IdentityMemo`: an answer is reused only for the very same items and extra key."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.util.identity_memo import IdentityMemo


class Item:
    """An immutable stand-in for a record: equal by value, yet a memo must tell two apart."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Item) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def test_the_same_items_and_key_reuse_the_answer_equal_items_do_not() -> None:
    memo: IdentityMemo[int] = IdentityMemo(size=2)
    items = [Item(1), Item(2), Item(3)]
    calls: list[str] = []

    def answer(name: str, value: int):  # type: ignore[no-untyped-def]
        return lambda: calls.append(name) or value

    assert memo.get(items, 0, answer("first", 10)) == 10
    assert memo.get(list(items), 0, answer("same items in another list", 11)) == 10
    assert memo.get(items, 1, answer("other key", 12)) == 12
    # the same ends and length, an equal but distinct item in the middle: computed again
    middle = [items[0], Item(2), items[2]]
    assert memo.get(middle, 0, answer("other middle", 13)) == 13
    assert calls == ["first", "other key", "other middle"]
    assert memo.get([], 0, answer("empty", 14)) == 14 and memo.get([], 0, answer("empty again", 15)) == 14


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.integers(0, 5), max_size=6), st.integers(0, 2)),
        max_size=30,
    ),
    st.integers(1, 4),
)
def test_every_answer_is_the_functions_own(requests: list[tuple[list[int], int]], size: int) -> None:
    """Over random request sequences on a small pool of items: the memo's answer is always what the function
    gives for those items and that key, whatever was evicted."""
    pool = [Item(n % 3) for n in range(6)]  # equal values, distinct objects
    memo: IdentityMemo[tuple[int, ...]] = IdentityMemo(size=size)
    for picks, extra in requests:
        items = [pool[p] for p in picks]
        expected = (*(id(i) for i in items), extra)
        assert memo.get(items, extra, lambda items=items, extra=extra: (*(id(i) for i in items), extra)) == expected
    assert len(memo._entries) <= size


def test_a_replay_leaves_no_records_in_the_memos(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SM-compact's memos hold the records of the compactions they remember; when a session's replay ends
    (alone, grouped or as a process) they are emptied, so a command over a corpus holds one session."""
    from workbench.replay import replay_group, replay_session
    from workbench.strategies import create, sm_compact
    from workbench.synthetic import generate_session
    from workbench.transcript import load_paths

    path = tmp_path / "generated.jsonl"
    path.write_text("\n".join(generate_session(3, target_tokens=180_000)) + "\n", encoding="utf-8")
    session = next(s for s in load_paths([path]) if not s.is_subagent)
    configs = [{"trigger": {"pct_of_window": 30}}, {"trigger": {"pct_of_window": 30}, "min_tokens": 30_000}]
    held: list[int] = []
    real = sm_compact._CUTS.get

    def spy(items, extra, compute):  # type: ignore[no-untyped-def]
        value = real(items, extra, compute)
        held.append(len(sm_compact._CUTS._entries))
        return value

    sm_compact._CUTS.get = spy  # type: ignore[method-assign]
    try:
        for replay in (
            lambda: replay_session(session, create("sm-compact", configs[0])),
            lambda: replay_group(session, [create("sm-compact", c) for c in configs]),
        ):
            held.clear()
            assert replay()
            assert held and max(held) > 0, "nothing was remembered: the replay did not compact"
            assert not sm_compact._CUTS._entries and not sm_compact._SIZES._entries
    finally:
        del sm_compact._CUTS.get
