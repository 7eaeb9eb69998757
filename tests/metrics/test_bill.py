"""The recorded bill (`workbench.metrics.bill`): equal to ccusage 20.0.24 on every Claude Code file of the corpus.

The pinned figures are ccusage's, computed once per file, each file alone in a throw-away config dir::

    mkdir /tmp/ccusage && cd /tmp/ccusage && npm install ccusage@20.0.24
    d=$(mktemp -d) && mkdir -p $d/projects/p && cp "$WORKBENCH_CORPUS/<file>" $d/projects/p/ \\
      && CLAUDE_CONFIG_DIR=$d /tmp/ccusage/node_modules/.bin/ccusage claude session --json --offline \\
         --mode calculate | jq .totals.totalCost

(``--mode auto`` gives the same figures: no corpus line carries ``costUSD``.) CI does not need npm.
"""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from workbench.metrics.bill import bill_sessions, billed_responses, content_tokens
from workbench.metrics.pricing import load_pricing, tokens_dollars
from workbench.transcript import load_paths
from workbench.transcript.claude_code import parse_line

CCUSAGE_20_0_24 = [
    ("claude-code-more/obra-episodic-memory/large-conversation.jsonl", 43.20053579999998),
    ("claude-code-more/obra-episodic-memory/long-conversation.jsonl", 5.764524300000001),
    ("claude-code-more/smartagent-pai/24a90d02-9724-4548-9f4f-97bcb9f93ef3.jsonl", 7.131919249999998),
    ("claude-code-more/smartagent-pai/agent-4bc7d5af.jsonl", 0.00293),
    ("claude-code-more/smartagent-pai/agent-4be791f9.jsonl", 0.1441218),
    ("claude-code-more/smartagent-pai/agent-4cf02dfa.jsonl", 0.1820162),
    ("claude-code-more/smartagent-pai/agent-529c18c6.jsonl", 0.0026199999999999995),
    ("claude-code-more/smartagent-pai/agent-546617c3.jsonl", 0.11602885),
    ("claude-code-more/smartagent-pai/agent-54f35e83.jsonl", 1.05649515),
    ("claude-code-more/smartagent-pai/agent-68d82619.jsonl", 0.20670135),
    ("claude-code-more/smartagent-pai/agent-6dc3d70d.jsonl", 0.013740000000000002),
    ("claude-code-more/smartagent-pai/agent-8cbc1506.jsonl", 0.0029279999999999996),
    ("claude-code-more/smartagent-pai/agent-95500236.jsonl", 0.6273920999999999),
    ("claude-code-more/smartagent-pai/agent-a25222fc.jsonl", 0.015290000000000002),
    ("claude-code-more/smartagent-pai/agent-a7d3c86d.jsonl", 0.013740000000000002),
    ("claude-code-more/smartagent-pai/agent-ad29d662.jsonl", 0.015280000000000002),
    ("claude-code-more/smartagent-pai/agent-adb9bce9.jsonl", 0.003365),
    ("claude-code-more/smartagent-pai/agent-dee347d2.jsonl", 1.1686277999999999),
    ("claude-code-more/smartagent-pai/b566e56e-94a7-425e-a662-d701321e27ce.jsonl", 20.136434999999985),
    ("claude-code-more/smartagent-pai/d6a37ffc-384d-4d2a-832a-78cdd493af69.jsonl", 8.835184000000003),
    ("claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", 0.09315720000000001),
    ("claude-code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 0.33115094999999994),
    ("claude-code/hillviewcap-pai/155715ec-f4e9-47ea-859c-2e4cfcceab6f.jsonl", 0.25392025),
    ("claude-code/hillviewcap-pai/5eac5945-4cf4-4f5c-a46a-1f8dacb407aa.jsonl", 0.21970050000000002),
    ("claude-code/hillviewcap-pai/agent-a4e3ca2.jsonl", 0.007715000000000001),
    ("claude-code/hillviewcap-pai/agent-ae36478.jsonl", 0.001341),
    ("claude-code/hillviewcap-pai/agent-af374ee.jsonl", 0.007715000000000001),
    ("claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl", 11.85392349999999),
    ("claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl", 0.2633937),
    ("claude-code/marot-spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl", 0.108414),
    ("claude-code/marot-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 9.526149750000004),
    (
        "claude-code/marot-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
        0.45065954999999996,
    ),
    (
        "claude-code/marot-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl",
        0.13688625000000001,
    ),
    ("claude-code/marot-spotter/6c2214d7-b87e-4432-8e41-22ba294ea584/subagents/agent-afc096d.jsonl", 0.1250208),
    ("claude-code/marot-spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 11.495195500000003),
    (
        "claude-code/marot-spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl",
        0.057315700000000004,
    ),
    (
        "claude-code/marot-spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-acompact-f46190.jsonl",
        0.11185149999999999,
    ),
    ("claude-code/marot-spotter/short.jsonl", 0.1444475),
    ("claude-code/marot-spotter/subagent.jsonl", 0.5195930000000001),
    ("claude-code/marot-spotter/tool_heavy.jsonl", 0.2266455),
    ("same-task-three-agents/claude-code-pomodoro-timer.jsonl", 0.7878426000000001),
]


@pytest.mark.corpus
def test_recorded_cost_equals_ccusage_on_every_corpus_file(corpus):
    found = {
        str(p.relative_to(corpus))
        for folder in ("claude-code", "claude-code-more")
        for p in (corpus / folder).rglob("*.jsonl")
    }
    found.add("same-task-three-agents/claude-code-pomodoro-timer.jsonl")
    assert found == {name for name, _ in CCUSAGE_20_0_24}  # every Claude Code file of the corpus is pinned
    ours: dict[str, float] = defaultdict(float)
    sessions = list(load_paths([corpus / name for name, _ in CCUSAGE_20_0_24]))
    bill = bill_sessions(sessions)
    source = {s.id: s.source for s in sessions}
    for row in bill.to_dict("records"):
        ours[str(Path(source[row["session_id"]]).relative_to(corpus))] += row["recorded_cost_usd"]
    for name, theirs in CCUSAGE_20_0_24:
        assert abs(ours[name] - theirs) <= max(0.005, 0.005 * theirs), (name, ours[name], theirs)
    print(json.dumps({"files": len(CCUSAGE_20_0_24), "ours": round(sum(ours.values()), 4)}))


def _line(**fields):
    base = {
        "type": "assistant",
        "uuid": fields.pop("uuid", "u1"),
        "sessionId": "s",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "version": "2.1.38",
        "requestId": fields.pop("requestId", "req_1"),
        "message": {
            "id": fields.pop("id", "msg_1"),
            "model": fields.pop("model", "claude-opus-4-6"),
            "role": "assistant",
            "content": fields.pop("content", [{"type": "text", "text": "hi"}]),
            "stop_reason": fields.pop("stop_reason", None),
            "usage": fields.pop("usage", {"input_tokens": 10, "output_tokens": 2}),
        },
    }
    base.update(fields)
    if base["message"]["id"] is None:  # absent, not null: ccusage drops a line with "id":null
        del base["message"]["id"]
    text = json.dumps(base, separators=(",", ":"))
    return parse_line(text.encode(), source="t.jsonl", line_no=1)


def test_one_response_is_priced_once_at_its_largest_usage():
    price = load_pricing()["claude-opus-4-6"]
    first = _line(usage={"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 1000})
    last = _line(uuid="u2", usage={"input_tokens": 3, "output_tokens": 400, "cache_read_input_tokens": 1000})
    bill = billed_responses([first, last])
    assert len(bill) == 1 and bill[0].output_tokens == 400
    assert bill[0].cost_usd == pytest.approx(tokens_dollars(price, input=3, cache_read=1000, output=400))
    other_request = _line(uuid="u3", requestId="req_2")  # same message id, new request id: billed again
    assert len(billed_responses([first, last, other_request])) == 2
    no_id = [_line(uuid=f"n{i}", id=None) for i in range(2)]  # no message id: never deduplicated
    assert len(billed_responses(no_id)) == 2


def test_main_thread_line_beats_a_larger_sidechain_replay():
    main = _line(usage={"input_tokens": 5, "output_tokens": 5})
    replay = _line(uuid="u2", requestId="req_9", isSidechain=True, usage={"input_tokens": 5, "output_tokens": 500})
    bill = billed_responses([main, replay])
    assert len(bill) == 1 and bill[0].output_tokens == 5 and not bill[0].is_sidechain


def test_lines_ccusage_drops_cost_nothing():
    assert billed_responses([_line(cwd=None)]) == []  # "cwd":null anywhere on the line
    assert billed_responses([_line(version="x")]) == []
    assert billed_responses([_line(usage={"input_tokens": 1.5, "output_tokens": 1})]) == []
    assert billed_responses([_line(model="<synthetic>")])[0].cost_usd == 0.0


def test_cache_write_split_and_long_context():
    split = {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 1000}
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 1100, "cache_creation": split}
    [opus] = billed_responses([_line(usage=usage)])
    assert opus.cost_usd == pytest.approx((100 * 6.25 + 1000 * 10.0) / 1e6)
    [flat] = billed_responses([_line(usage={"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 40})])
    assert (flat.cache_write_5m, flat.cache_write_1h) == (40, 0)
    big = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 300_000}
    [sonnet] = billed_responses([_line(model="claude-sonnet-4-20250514", usage=big)])
    assert sonnet.cost_usd == pytest.approx((200_000 * 0.30 + 100_000 * 0.60) / 1e6)  # ccusage: per token kind
    [opus_big] = billed_responses([_line(usage=big)])
    assert opus_big.cost_usd == pytest.approx(300_000 * 0.50 / 1e6)  # no long-context rate in the table


def test_unfinished_response_gets_an_output_estimate():
    text = "x" * 4000
    unfinished = _line(content=[{"type": "text", "text": text}], usage={"input_tokens": 3, "output_tokens": 2})
    [row] = billed_responses([unfinished])
    assert row.output_tokens == 2 and row.output_tokens_estimated and row.output_tokens_estimate == 1000
    assert row.estimated_cost_usd - row.cost_usd == pytest.approx(998 * 25 / 1e6)
    finished = _line(stop_reason="end_turn", content=[{"type": "text", "text": text}])
    assert not billed_responses([finished])[0].output_tokens_estimated
    assert content_tokens([_line(content=[{"type": "tool_use", "id": "t", "name": "Bash", "input": {"a": 1}}])]) == 3


@pytest.mark.corpus
def test_output_undercount_on_the_corpus(corpus):
    sessions = list(load_paths([corpus / "claude-code", corpus / "claude-code-more"]))
    bill = bill_sessions(sessions)
    recorded, estimate = bill["output_tokens_recorded"].sum(), bill["output_tokens_estimate"].sum()
    flagged = bill["output_tokens_estimated"].sum()
    print(json.dumps({"recorded": int(recorded), "estimate": int(estimate), "responses_estimated": int(flagged)}))
    assert estimate > recorded and flagged > 0
