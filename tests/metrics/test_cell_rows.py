"""`cell_rows` and `cell_events` group a metric frame's rows by cell as pandas would, without its sort."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.metrics._common import KEYS, cell_events, cell_rows

ROWS = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "a/b", "é"]),
        st.sampled_from(["none", "sm-compact", "Z"]),
        st.sampled_from(["h1", "h2", None]),
        st.integers(0, 6),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_cells_and_their_events_come_as_a_stable_sort_and_a_groupby_give_them(rows: list) -> None:  # type: ignore[type-arg]
    frame = pd.DataFrame(rows, columns=[*KEYS, "step"]).assign(n=range(len(rows)))
    frame["step"] = frame["step"].astype("int64")
    expected = [
        (cell, group[["step", "n"]].to_dict("records"))
        for cell, group in frame.sort_values([*KEYS, "step"], kind="stable").groupby(KEYS, sort=True)
    ]
    assert cell_events(frame, ("step", "n", "absent")) == [(tuple(c), g) for c, g in expected]
    positions = {tuple(cell): list(group["n"]) for cell, group in frame.groupby(KEYS, sort=False)}
    assert cell_rows(frame) == positions
