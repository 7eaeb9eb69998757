import pandas as pd

from workbench.metrics import validity_events, validity_rules, validity_sessions, validity_steps


def _frames():
    steps = pd.DataFrame(
        {
            "session_id": "x",
            "strategy": "s",
            "step": range(4),
            "violations": [0, 2, 0, 1],
            "violation_rules": ["", "a,b", "", "a"],
            "repaired": [0, 1, 0, 0],
        }
    )
    events = pd.DataFrame(
        [
            {
                "session_id": "x",
                "strategy": "s",
                "kind": "sm-compact",
                "step": 1,
                "violations": 2,
                "violation_rules": ["a", "b"],
                "repaired": 1,
                "fallbacks": ["no-memory"],
                "keep_start": 5,
                "naive_start": 7,
            }
        ]
    )
    return steps, events


def test_worked_example():
    steps, events = _frames()
    row = validity_sessions(steps, events).iloc[0]
    assert (row["violating_steps"], row["violations"], row["repairs"], row["repaired_steps"]) == (2, 3, 1, 1)
    assert row["violation_rate"] == 0.5
    assert (row["compactions"], row["compaction_violations"], row["compaction_violation_rate"]) == (1, 1, 1.0)
    assert (row["fallbacks"], row["fallback_reasons"], row["adjusted_compactions"]) == (1, "no-memory:1", 1)
    rules = validity_rules(steps, events)
    step_rules = dict(rules[rules["scope"] == "step"][["rule", "count"]].itertuples(index=False))
    assert step_rules == {"a": 2, "b": 1}
    assert validity_steps(steps)["has_violation"].tolist() == [False, True, False, True]
    assert validity_events(events)["adjusted"].tolist() == [True]


def test_no_events():
    steps, _ = _frames()
    row = validity_sessions(steps, None).iloc[0]
    assert (row["compactions"], row["compaction_violation_rate"], row["fallback_reasons"]) == (0, 0.0, "")
