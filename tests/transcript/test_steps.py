"""`api_calls`: grouping by ``message.id``; asking again (same or changed records) gives a fresh, correct answer."""

from __future__ import annotations

from record_builders import say, user

from workbench.transcript.model import Record
from workbench.transcript.steps import api_calls


def _records() -> list[Record]:
    return [
        user("q"),
        say("a", message_id="m1"),
        user("r"),
        say("b", message_id="m2"),
        say("c", message_id="m1"),
        Record(kind="assistant", role="assistant", model="<synthetic>", message_id="m3"),
        say("d"),
    ]


def test_calls_group_by_message_id_in_order_of_first_record() -> None:
    calls = api_calls(_records())
    assert [(c.step, c.message_id, c.indices) for c in calls] == [(0, "m1", (1, 4)), (1, "m2", (3,)), (2, None, (6,))]


def test_asking_again_gives_equal_calls_in_a_fresh_list() -> None:
    records = _records()
    first = api_calls(records)
    first.clear()
    assert api_calls(records) == api_calls(list(records)) == api_calls(_records())
    assert len(api_calls(records)) == 3


def test_changed_records_are_grouped_again() -> None:
    records = _records()
    assert len(api_calls(records)) == 3
    records.append(say("e", message_id="m4"))
    assert [c.message_id for c in api_calls(records)] == ["m1", "m2", None, "m4"]
    records[1] = say("a", message_id="m0")
    assert [c.message_id for c in api_calls(records)] == ["m0", "m2", "m1", None, "m4"]
