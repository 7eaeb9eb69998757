import pandas as pd

from workbench.metrics import savings_events, savings_sessions, savings_steps


def _steps(context, without, strategy="s"):
    return pd.DataFrame(
        {
            "session_id": "x",
            "strategy": strategy,
            "step": range(len(context)),
            "context_tokens": context,
            "tokens_without_compaction": without,
            "compacted": [c != w for c, w in zip(context, without, strict=True)],
        }
    )


def test_worked_example():
    steps = _steps([100_000, 170_000, 40_000], [100_000, 170_000, 180_000])
    events = pd.DataFrame(
        [
            {
                "session_id": "x",
                "strategy": "s",
                "kind": "sm-compact",
                "trigger": "auto",
                "step": 2,
                "tokens_before": 180_000,
                "tokens_after": 40_000,
            }
        ]
    )
    per_step = savings_steps(steps)
    assert per_step["tokens_saved"].tolist() == [0, 0, 140_000]
    assert per_step["cumulative_tokens_saved"].tolist() == [0, 0, 140_000]
    assert per_step["config_hash"].eq("n/a").all()
    row = savings_sessions(steps, events).iloc[0]
    assert row["tokens_saved"] == 140_000
    assert abs(row["saved_share"] - 140 / 450) < 1e-9
    assert (row["peak_context_tokens"], row["peak_without_compaction"]) == (170_000, 180_000)
    assert (row["steps_blocked_without"], row["steps_blocked"]) == (1, 0)
    assert (row["steps_over_window_without"], row["steps_over_window"]) == (0, 0)
    assert (row["compactions"], row["compaction_kinds"]) == (1, "sm-compact:1")
    assert savings_events(events)["tokens_freed"].tolist() == [140_000]


def test_parameters_and_baseline():
    steps = _steps([150_000, 150_000], [150_000, 150_000], strategy="recorded")
    baseline = _steps([0, 0], [150_000, 210_000], strategy="none")
    row = savings_sessions(steps, window=160_000, blocking_limit=140_000, baseline=baseline).iloc[0]
    assert row["tokens_saved"] == 60_000
    assert (row["steps_over_window_without"], row["steps_blocked"]) == (1, 2)
    assert row["compactions"] == 0


def test_empty_frames():
    assert savings_steps(pd.DataFrame()).empty
    assert savings_events(None).empty
