"""The near-linear naive-cut study (`workbench.studies.cuts`) gives exactly what the direct
computation gives: cut by cut, and as a whole report (`workbench.studies.reference`)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from workbench.request.invariants import adjust_for_thinking, adjust_to_api_invariants
from workbench.request.repair import repair
from workbench.request.validate import original_thinking_blocks, validate
from workbench.studies.cuts import Adjuster, CutOracle, ThinkingAdjuster
from workbench.studies.naive_cut import cut_request, invariants_report, keep_window_cuts
from workbench.studies.reference import reference_invariants_report, reference_keep_window_cuts
from workbench.transcript import load_paths
from workbench.transcript.model import Session

DATA = Path(__file__).resolve().parents[2] / "data"


def _rules(request, **kw) -> frozenset[str]:
    return frozenset(v.rule for v in validate(request, **kw))


def _longer(path: Path, copies: int, out: Path) -> Path:
    """The session of ``path`` repeated ``copies`` times, every id of copy j suffixed, the chain linked."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    keys = {"uuid", "parentUuid", "logicalParentUuid", "leafUuid", "tool_use_id", "messageId", "id"}

    def walk(value, tag):
        if isinstance(value, dict):
            return {k: (f"{v}{tag}" if k in keys and isinstance(v, str) else walk(v, tag)) for k, v in value.items()}
        return [walk(v, tag) for v in value] if isinstance(value, list) else value

    last = None
    with out.open("w", encoding="utf-8") as handle:
        for copy in range(copies):
            for index, row in enumerate(rows):
                new = walk(row, f"-x{copy}") if copy else row
                if copy and index == 0 and "parentUuid" in new:
                    new = {**new, "parentUuid": last}
                last = new.get("uuid") or last
                handle.write(json.dumps(new) + "\n")
    return out


def _sessions(*paths: Path) -> list[Session]:
    return [s for s in load_paths(list(paths)) if s.records]


def _check_every_cut(session: Session, windows: int = 40, step: int = 1) -> int:
    """Every cut of ``session`` (and random windows): the oracle equals normalize/repair/validate, the
    adjusters equal the reference adjustments. Returns how many requests were compared."""
    records = session.conversation()
    originals = original_thinking_blocks(records)
    oracle, adjuster = CutOracle(records, originals), Adjuster(records)
    thinking = ThinkingAdjuster(records, adjuster, oracle)
    rng = random.Random(len(records))
    n = len(records)
    pairs = [(c, n) for c in range(0, n + 1, step)]
    pairs += [tuple(sorted(rng.sample(range(n + 1), 2))) for _ in range(windows)] if n > 2 else []
    for cut, end in pairs:
        request = cut_request(records, cut, end)
        plain, _ = oracle.evaluate(cut, end)
        for on in (False, True):
            assert plain.rules(thinking=on, originals=True) == _rules(
                request, thinking=on, original_thinking=originals
            ), (session.id, cut, end, on)
        fixed, count = oracle.evaluate(cut, end, repaired=True)
        repaired, repairs = repair(request)
        assert count == len(repairs), (session.id, cut, end)
        assert fixed.rules(thinking=True, originals=True) == _rules(
            repaired, thinking=True, original_thinking=originals
        ), (session.id, cut, end)
        lo = rng.randrange(0, cut + 1) if end == n and cut else 0
        window = records[lo:end]
        assert adjuster.adjust(cut, lo, end) == lo + adjust_to_api_invariants(window, cut - lo), (cut, lo, end)
        for on in (False, True):
            expected = lo + adjust_for_thinking(window, cut - lo, thinking=on)
            assert thinking.adjust(cut, lo, end, thinking=on) == expected, (session.id, cut, lo, end, on)
    return len(pairs)


def test_every_cut_of_the_embedded_corpus_matches_the_direct_computation() -> None:
    compared = sum(_check_every_cut(s) for s in _sessions(DATA))
    assert compared > 1000


@pytest.mark.slow
def test_a_session_twice_as_long_matches(tmp_path) -> None:
    """Two recorded compactions, chunks of both copies: every third cut and 60 random windows."""
    [session] = _sessions(_longer(DATA / "long-autocompact-e3e70682.jsonl", 2, tmp_path / "long.jsonl"))
    assert len(session.conversation()) > 2 * 300
    _check_every_cut(session, windows=60, step=3)


def test_keep_window_cuts_and_the_report_equal_the_reference(tmp_path) -> None:
    sessions = _sessions(DATA, _longer(DATA / "short-bugfix-d95bafc8.jsonl", 2, tmp_path / "twice.jsonl"))
    for session in sessions:
        assert keep_window_cuts(session) == reference_keep_window_cuts(session)
    assert invariants_report(sessions) == reference_invariants_report(sessions)


@pytest.mark.corpus
def test_every_cut_of_small_real_sessions_matches(claude_sessions: list[Session]) -> None:
    """The shorter real sessions cut by cut (the long ones are compared as whole reports below)."""
    small = [s for s in claude_sessions if len(s.conversation()) < 400]
    assert small
    for session in small:
        _check_every_cut(session)


@pytest.mark.corpus
@pytest.mark.slow
def test_the_report_on_the_real_corpus_equals_the_reference(claude_sessions: list[Session]) -> None:
    """Byte-identical results on the corpus (the reference takes ~10 s here)."""
    fast = invariants_report(claude_sessions)
    assert json.dumps(fast, sort_keys=True) == json.dumps(reference_invariants_report(claude_sessions), sort_keys=True)
    for session in claude_sessions:
        assert keep_window_cuts(session) == reference_keep_window_cuts(session)


@pytest.mark.corpus
def test_other_formats_match(corpus: Path) -> None:
    """Sessions without message ids (Codex reasoning records, SWE-agent, OpenHands): no shortcut may
    change a result."""
    for folder in ("swe-agent", "openhands", "codex"):
        sessions = _sessions(corpus / folder)
        assert sessions, folder
        for session in sorted(sessions, key=lambda s: len(s.records))[:2]:
            _check_every_cut(session, windows=10)
