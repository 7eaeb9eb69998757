"""Claude Code's compaction constants by client version: one table, as data, with a source per value.

Every recorded Claude Code line carries ``version``; the ``claude-code`` and ``full-compact`` strategies
select the row of the version that made each API call (``version="recorded"``, the default) or pin one
(``--set version=2.1.88``). A row holds only what is known to have changed between versions; a constant
that no source pins down for a range keeps v2.1.88's value and says so in its evidence.

How the rows were derived (docs/replay.md, "Claude Code versions"):

* **Public changelog** (anthropics/claude-code ``CHANGELOG.md``): 2.1.2 persists large tool outputs
  instead of truncating them; 2.1.7 computes the blocking limit from the effective window instead of the
  full window; 2.1.14 fixes a blocking limit at "~65%" back to "the intended ~98%"; 2.1.21 "Fixed
  auto-compact triggering too early on models with large output token limits" (the output reserve gets
  the 20k cap, ``MAX_OUTPUT_TOKENS_FOR_SUMMARY``); 2.1.51 lowers the persisted-output size from 100K to
  50K characters; 2.1.76 adds the circuit breaker (3 consecutive failures).
* **Public issues**: ``/context`` showed an "Autocompact buffer: 45.0k tokens (22.5%)" on v2.0.x
  (#10266, #11781 on v2.0.42, #12333 on v2.0.53) = 32k output reserve + 13k buffer, and "77.0k tokens
  (38.5%)" with ``claude-opus-4-5-20251101`` (#17660, 2026-01-12, before 2.1.21) = 64k + 13k; v2.1.x
  shows 33k (16.5%, #23409) = 20k + 13k.
* **The reference doc** (v2.1.88 source, docs §3.3, §3.7, §4.2, §4.4).
* **Readings of the minified bundles** (labelled *inferred*): the automatic microcompact of 1.0.68–2.1.20
  (`workbench.strategies.microcompact.legacy_microcompact`) is known only from them, from transcripts of
  2.1.12–2.1.19 that record its ``microcompact_boundary`` and from the v2.1.39 recordings, where it no
  longer ran; the v2.1.88 source says it was removed.
* **The recordings** (labelled *inferred*): for each recorded auto-compaction the threshold must lie in
  (size measured at the check before the previous call, size at the compaction]. On the five v2.0.57
  auto-compactions of ``claude-code-more/smartagent-pai`` (b566e56e ×4, 24a90d02) ``preTokens`` equals
  the last response's usage total (input + cache + output) in 4 of 5 and exceeds it by 186 tokens where
  the final usage of that response was never persisted (its recorded ``output_tokens`` is 1): v2.0.x
  measured ``tokenCountFromLastAPIResponse``, not v2.1.88's ``tokenCountWithEstimation``. With that
  measure the five intervals intersect in (122,647, 124,249]; 200,000 − 64,000 − 13,000 = 123,000 is the
  only value of the changelog's rule inside it. With the estimate measure they intersect in
  (125,810, 126,336], which no published rule gives. Sonnet 4.5 on v2.0.5 (obra long-conversation)
  reached 140,276 tokens without compacting, so its reserve was 32k, not its API maximum of 64k.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "REFERENCE_VERSION",
    "TABLE_THROUGH",
    "VERSIONS",
    "ClaudeCodeVersion",
    "Evidence",
    "is_claude_model",
    "newer_than_table",
    "parse_version",
    "version_constants",
    "version_table",
]

#: The version the reference doc describes and the default when a session records none.
REFERENCE_VERSION = "2.1.88"
#: The newest CHANGELOG entry the table was checked against; a newer version gets the last row and a warning.
TABLE_THROUGH = "2.1.240"


def parse_version(text: str) -> tuple[int, ...]:
    """``"2.0.57"`` → ``(2, 0, 57)``; a pre-release or build suffix is ignored. ValueError when unparseable."""
    head = text.strip().split("-")[0].split("+")[0]
    try:
        parts = tuple(int(p) for p in head.split("."))
    except ValueError:
        raise ValueError(f"not a Claude Code version: {text!r} (expected e.g. 2.1.88)") from None
    if not parts:
        raise ValueError(f"not a Claude Code version: {text!r} (expected e.g. 2.1.88)")
    return parts


class Evidence(BaseModel):
    """Where one constant of a row comes from. ``inferred``: only from recordings (named in ``sessions``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    constant: str
    source: str
    inferred: bool = False
    sessions: tuple[str, ...] = ()


class ClaudeCodeVersion(BaseModel):
    """The constants of one version range ``[since, next row's since)``.

    ``output_reserve_cap``: ``min(model max output, cap)`` is reserved from the window (docs §4.2);
    None = the model's whole default max output (before 2.1.21). ``measure``: what the auto-compact
    check compares with the threshold: ``estimate`` = ``tokenCountWithEstimation`` (docs §6),
    ``usage`` = ``tokenCountFromLastAPIResponse`` (the last response's usage total). ``blocking_base``:
    the blocking limit is ``base − blocking_buffer`` with base the effective or the whole window.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    since: str
    label: str
    output_reserve_cap: int | None = Field(20_000, gt=0)
    #: Claude Code's default ``max_tokens`` per model family (prefix match, longest first); others get
    #: ``default_max_output``.
    max_output_tokens: dict[str, int] = Field(default_factory=dict)
    default_max_output: int = Field(32_000, gt=0)
    autocompact_buffer: int = Field(13_000, ge=0)
    warning_buffer: int = Field(20_000, ge=0)
    blocking_base: Literal["effective", "window"] = "effective"
    blocking_buffer: int = Field(3_000, ge=0)
    measure: Literal["estimate", "usage"] = "estimate"
    tool_result_budget: bool = True
    max_result_chars: int = Field(50_000, gt=0)
    max_message_chars: int = Field(200_000, gt=0)
    time_based_microcompact: bool = True
    #: Claude Code's automatic microcompact of 1.0.68–2.1.20 (`workbench.strategies.microcompact.
    #: legacy_microcompact`): above the warning threshold, old tool results are cleared.
    legacy_microcompact: bool = False
    #: The first version that runs it where that falls inside the row's range (1.0.68, inside 1.0.x–2.0.57).
    legacy_microcompact_since: str | None = None
    circuit_breaker: int | None = Field(3, ge=1)
    #: Claude Code's own stop after this many refills in a row (2.1.89); None: the version has none. The
    #: replay applies `workbench.strategies.refill` to every version (a thrash loop is a cost, not a result).
    refill_stop: int | None = Field(None, ge=1)
    #: Model families (prefix match) whose native window is 1M in this version, whatever the recording shows.
    native_1m: tuple[str, ...] = ()
    #: Whether a session on a model id the version does not recognise is held to the assumed window; before
    #: 2.1.223 such sessions grew past it and never auto-compacted.
    unknown_models_compact: bool = False
    evidence: tuple[Evidence, ...] = ()

    def max_output_for(self, model: str | None) -> int:
        """The model's default max output tokens in this version (``getMaxOutputTokensForModel``)."""
        if model:
            name = model.removesuffix("[1m]")
            for prefix in sorted(self.max_output_tokens, key=len, reverse=True):
                if name.startswith(prefix):
                    return self.max_output_tokens[prefix]
        return self.default_max_output

    def output_reserve(self, model: str | None) -> int:
        out = self.max_output_for(model)
        return out if self.output_reserve_cap is None else min(out, self.output_reserve_cap)

    def runs_legacy_microcompact(self, version: str | None) -> bool:
        """Whether ``version`` (of this row's range; None: the row's own) runs the legacy microcompact."""
        if not self.legacy_microcompact:
            return False
        if self.legacy_microcompact_since is None or version is None:
            return True
        try:
            return parse_version(version) >= parse_version(self.legacy_microcompact_since)
        except ValueError:
            return True

    def native_window(self, model: str | None) -> int | None:
        """1,000,000 for a model whose window this version takes as natively 1M, else None."""
        if model:
            name = model.removesuffix("[1m]")
            if any(name.startswith(prefix) for prefix in self.native_1m):
                return 1_000_000
        return None

    def auto_compacts(self, model: str | None) -> bool:
        """Whether this version auto-compacts a session on ``model`` at all (unknown ids: from 2.1.223)."""
        return self.unknown_models_compact or is_claude_model(model)


def is_claude_model(model: str | None) -> bool:
    """A model id Claude Code recognises: a Claude model under any provider's naming (``claude-…``,
    ``us.anthropic.claude-…``, ``claude-opus-4-6@…``) or a name it maps itself (``fable…``); no model
    recorded counts as recognised. GLM, Kimi, MiniMax, Gemini or GPT ids run through a proxy do not."""
    if not model:
        return True
    name = model.lower()
    return "claude" in name or name.startswith("fable") or name == "<synthetic>"


_CHANGELOG = "anthropics/claude-code CHANGELOG.md"
_B566 = ("smartagent-pai/b566e56e", "smartagent-pai/24a90d02")

#: Where the legacy microcompact is seen running. Every reading of its code is second-hand (readings of the
#: minified bundles; no source tree of a version that has it is public) and no open recording holds a
#: ``microcompact_boundary``.
_LEGACY_MC_SEEN = (
    "held-out: Claude Code 2.1.12–2.1.19 transcripts with system microcompact_boundary lines, "
    "microcompactMetadata {trigger: auto, preTokens, tokensSaved, compactedToolIds, clearedAttachmentUUIDs} "
    "(docs/peers.md, 'Late 2026'; the sessions stay outside the repository)",
)
_LEGACY_MC = Evidence(
    constant="legacy_microcompact, legacy_microcompact_since",
    source="claudelog.com/faqs/what-is-micro-compact: micro-compact clears old tool calls automatically when "
    "the context grows long, 'introduced in Claude Code v1.0.68' (the 1.0.68 changelog entry does not name "
    "it). The algorithm (microcompact.legacy_microcompact): the v2.0.76 cli.js function Vd as described in a "
    "public re-implementation's notes ('Microcompact 实现文档', 2026-01-07: DISABLE_MICROCOMPACT; qy5=20000 "
    "minimum saving, Ny5=40000, Ly5=3 kept; Read, Bash, Grep, Glob, WebSearch, WebFetch, Edit, Write; only "
    "when isAboveWarningThreshold; '[Old tool result content cleared]') and the v2.1.63 cli.js as sliced and "
    "executed by BreadBoard's scripts/compaction_oracles/capture_claude_code.js ('var G3Y=20000,Z3Y=40000,"
    "f3Y=3' and the loop 'let _=z.slice(-f3Y)…if($-O>Y)H.add(Z),O+=w.get(Z)': 40,000 is the compactable "
    "tokens left in place, not a trigger)",
    inferred=True,
    sessions=_LEGACY_MC_SEEN,
)

_V20 = ClaudeCodeVersion(
    since="0.0.0",
    label="1.0.x–2.0.57",
    output_reserve_cap=None,
    max_output_tokens={"claude-opus-4-5": 64_000},
    measure="usage",
    blocking_base="window",
    tool_result_budget=False,
    time_based_microcompact=False,
    legacy_microcompact=True,
    legacy_microcompact_since="1.0.68",
    circuit_breaker=None,
    evidence=(
        _LEGACY_MC,
        Evidence(
            constant="output_reserve_cap",
            source=f"{_CHANGELOG} 2.1.21: 'Fixed auto-compact triggering too early on models with large output "
            "token limits' (before it the whole max output was reserved); #10266/#11781/#12333: 45.0k (22.5%) "
            "buffer on v2.0.x = 32k + 13k",
        ),
        Evidence(
            constant="max_output_tokens[claude-opus-4-5]",
            source="#17660 (claude-opus-4-5-20251101): 'Autocompact buffer: 77.0k tokens (38.5%)' = 64k + 13k; "
            "the recorded v2.0.57 compactions put the threshold in (122,647, 124,249], i.e. 123,000",
            inferred=True,
            sessions=_B566,
        ),
        Evidence(
            constant="default_max_output",
            source="45.0k (22.5%) buffer reports (#10266, #11781 v2.0.42, #12333 v2.0.53); obra long-conversation "
            "(v2.0.5, claude-sonnet-4-5) reached 140,276 tokens without compacting (a 64k reserve would compact at "
            "123,000)",
            inferred=True,
            sessions=("obra-episodic-memory/long-conversation",),
        ),
        Evidence(
            constant="measure",
            source="preTokens = last response's usage total on 4 of 5 v2.0.57 auto-compactions (+186 where the "
            "final usage was not persisted); the estimate measure would have fired one call earlier on b566e56e's "
            "first compaction (125,810 ≥ 123,000). The switch to the estimate is placed at 2.1.0 (observed: "
            "usage on 2.0.57/2.0.58, estimate on 2.1.38/2.1.39; no changelog entry found)",
            inferred=True,
            sessions=_B566,
        ),
        Evidence(
            constant="blocking_base",
            source=f"{_CHANGELOG} 2.1.7: 'Fixed context window blocking limit being calculated using the full "
            "context window instead of the effective context window'",
        ),
        Evidence(
            constant="tool_result_budget",
            source=f"{_CHANGELOG} 2.1.2: 'Changed large tool outputs to be persisted to disk instead of truncated'",
        ),
        Evidence(
            constant="time_based_microcompact",
            source="not in any changelog; known only from the v2.1.88 source (docs §3.3), where it ships disabled; "
            "treated as absent before 2.1.88",
        ),
        Evidence(
            constant="circuit_breaker", source=f"{_CHANGELOG} 2.1.76: 'a circuit breaker now stops after 3 attempts'"
        ),
        Evidence(
            constant="autocompact_buffer, warning_buffer, blocking_buffer",
            source="13k buffer: 45k − 32k and 77k − 64k above; the others keep v2.1.88's values (no public change "
            "found); v1.0.x assumed equal to v2.0.x (no v1.0.x auto-compaction in the corpus)",
        ),
    ),
)

_OPUS45_155K = (
    "held-out: 13 Opus 4.5 auto-compactions on 2.0.74, 2.0.76 and 2.1.19 at preTokens 155,199–172,320, "
    "equal to the last response's usage total in 11 of 13",
)

_V20_LATE = _V20.model_copy(
    update={
        "since": "2.0.58",
        "label": "2.0.58–2.0.x",
        "max_output_tokens": {},
        "evidence": (
            Evidence(
                constant="max_output_tokens[claude-opus-4-5]",
                source="Opus 4.5 reserves the default 32k: 200,000 − 32,000 − 13,000 = 155,000, the lowest recorded "
                "preTokens on 2.0.74, 2.0.76 and 2.1.19 (held-out recordings; the sessions stay outside the "
                "repository). The 64k of 2.0.57 (smartagent-pai) holds up to 2.0.57; the change lies in "
                "(2.0.57, 2.0.74] and no changelog entry names it, so it is placed at 2.0.58 (assumed). #17660's "
                "77.0k buffer (January 2026) matches a user-set CLAUDE_CODE_MAX_OUTPUT_TOKENS=64000 (set "
                "trigger.max_output_tokens to replay such a user)",
                inferred=True,
                sessions=_OPUS45_155K,
            ),
            Evidence(
                constant="max_output_tokens[claude-sonnet-4-5]",
                source="Sonnet 4.5 on 2.0.36–2.0.42: 5 auto-compactions at preTokens 155,573–157,712 (the 155,000 "
                "threshold on the last usage)",
                inferred=True,
                sessions=("bestlove1211-opencode/765a9806", "bestlove1211-opencode/ce3dbbb4"),
            ),
        ),
    }
)

_V21_EARLY = _V20_LATE.model_copy(
    update={
        "since": "2.1.0",
        "label": "2.1.0–2.1.1",
        "measure": "estimate",
        "evidence": (
            Evidence(
                constant="measure",
                source="tokenCountWithEstimation: the v2.1.39 preTokens equal the last usage + chars/4 of what "
                "followed (docs/architecture.md calibration table); switch placed at 2.1.0 (assumed)",
                inferred=True,
                sessions=("marot-spotter/258c7280", "marot-spotter/4d5611e5", "marot-spotter/8463c716"),
            ),
        ),
    }
)

_V21_PERSIST = _V21_EARLY.model_copy(
    update={
        "since": "2.1.2",
        "label": "2.1.2–2.1.6",
        "tool_result_budget": True,
        "max_result_chars": 100_000,
        "evidence": (
            Evidence(
                constant="tool_result_budget, max_result_chars",
                source=f"{_CHANGELOG} 2.1.2 (persisted instead of truncated) and 2.1.51 ('previously 100K'); the "
                "200k per-message budget is v2.1.88's (assumed for earlier versions)",
            ),
        ),
    }
)

_V21_BLOCK_EFFECTIVE = _V21_PERSIST.model_copy(
    update={
        "since": "2.1.7",
        "label": "2.1.7–2.1.13",
        "blocking_base": "effective",
        "evidence": (
            Evidence(
                constant="blocking_base",
                source=f"{_CHANGELOG} 2.1.7 (effective window); 2.1.14 calls the result a regression at '~65%' "
                "(200k − 64k − 3k = 133k = 66.5% for a 64k-output model)",
            ),
        ),
    }
)

_V21_BLOCK_WINDOW = _V21_PERSIST.model_copy(
    update={
        "since": "2.1.14",
        "label": "2.1.14–2.1.20",
        "evidence": (
            Evidence(
                constant="blocking_base",
                source=f"{_CHANGELOG} 2.1.14: blocking 'at ~65% context usage instead of the intended ~98%' "
                "(window − 3,000 = 98.5%)",
            ),
        ),
    }
)

_V21_CAPPED = _V21_BLOCK_WINDOW.model_copy(
    update={
        "since": "2.1.21",
        "label": "2.1.21–2.1.50",
        "output_reserve_cap": 20_000,
        "legacy_microcompact": False,
        "evidence": (
            Evidence(
                constant="legacy_microcompact",
                source="the v2.1.39 recordings grow smoothly past the warning threshold (147,000) to their "
                "auto-compaction at 167,000, where the legacy microcompact would have cleared old results at "
                "258c7280 call 86 (25,779 tokens) and 4d5611e5 call 46 (20,467): it no longer ran. It ran on "
                "2.1.12–2.1.19 (held-out recordings), so it stopped in (2.1.19, 2.1.38]; no changelog entry "
                "names it and the end is placed at this row (assumed). Readings of the 2.1.63 and 2.1.68 bundles "
                "(BreadBoard's capture; sam-saffron-jarvis gist 9d8e291c: 'Microcompact | Warning threshold hit') "
                "still find its code: switched off or gated, not deleted (or these sessions set "
                "DISABLE_MICROCOMPACT, which a transcript does not show); the v2.1.88 source has it removed "
                "(docs §3.2)",
                inferred=True,
                sessions=("marot-spotter/258c7280", "marot-spotter/4d5611e5"),
            ),
            Evidence(
                constant="output_reserve_cap",
                source=f"{_CHANGELOG} 2.1.21 (reserve capped); docs §4.2 MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20,000; "
                "#23409: 33k (16.5%) buffer; the three v2.1.39 auto-compactions fire at 167,000",
            ),
        ),
    }
)

_V21_50K = _V21_CAPPED.model_copy(
    update={
        "since": "2.1.51",
        "label": "2.1.51–2.1.75",
        "max_result_chars": 50_000,
        "evidence": (
            Evidence(
                constant="max_result_chars",
                source=f"{_CHANGELOG} 2.1.51: 'Tool results larger than 50K characters are now persisted to disk "
                "(previously 100K)'",
            ),
        ),
    }
)

_V21_BREAKER = _V21_50K.model_copy(
    update={
        "since": "2.1.76",
        "label": "2.1.76–2.1.87",
        "circuit_breaker": 3,
        "evidence": (
            Evidence(
                constant="circuit_breaker",
                source=f"{_CHANGELOG} 2.1.76: 'Fixed auto-compaction retrying indefinitely after consecutive "
                "failures — a circuit breaker now stops after 3 attempts'",
            ),
        ),
    }
)

_V2188 = ClaudeCodeVersion(
    since="2.1.88",
    label="2.1.88 (reference)",
    max_output_tokens={"claude-opus-4-6": 64_000},
    evidence=(
        Evidence(
            constant="all",
            source="docs §3.3 (time-based microcompact, shipped disabled), §3.7 (50k / 200k budget), §4.2 "
            "(20k reserve cap, 13k buffer, 20k warning, effective − 3k blocking), §4.4 (circuit breaker 3), "
            "§2.1 (tengu_session_memory / tengu_sm_compact default false)",
        ),
        Evidence(
            constant="legacy_microcompact",
            source="docs §3.2: the source says the legacy client-side microcompact was removed; only the "
            "time-based and the ant-only cached microcompact remain",
        ),
    ),
)

_V21_REFILL = _V2188.model_copy(
    update={
        "since": "2.1.89",
        "label": "2.1.89–2.1.116",
        "refill_stop": 3,
        "evidence": (
            Evidence(
                constant="refill_stop",
                source=f"{_CHANGELOG} 2.1.89: 'Fixed autocompact thrash loop — now detects when context refills to "
                "the limit immediately after compacting three times in a row and stops'",
            ),
            Evidence(
                constant="not modelled",
                source="#43989: v2.1.92 held Opus 4.6 (1M) to a 400k auto-compact window (a regression, no changelog "
                "entry for its start or its fix); 2.1.105 PreCompact hooks can block compaction (a user's hook)",
            ),
        ),
    }
)

_V21_NATIVE_1M = _V21_REFILL.model_copy(
    update={
        "since": "2.1.117",
        "label": "2.1.117–2.1.222",
        "native_1m": ("claude-opus-4-7", "fable", "claude-sonnet-5", "claude-opus-5"),
        "evidence": (
            Evidence(
                constant="native_1m",
                source=f"{_CHANGELOG} 2.1.117: Opus 4.7 'was computing against a 200K context window instead of "
                "Opus 4.7's native 1M'; models introduced later with a native 1M window: Fable 5 (2.1.170; 2.1.173 "
                "'Fable 5 includes 1M context by default'), Sonnet 5 (2.1.197 'native 1M-token context window'), "
                "Opus 5 (2.1.219 '1M context'). Opus 4.8 (2.1.154) is announced without a window: 200k unless the "
                "recording proves 1M",
            ),
            Evidence(
                constant="not modelled",
                source=f"{_CHANGELOG} 2.1.139 compaction prompt keeps sensitive user instructions (the summary's "
                "text, not its size); 2.1.141 'Summarize up to here' (a user action); 2.1.142 reactive compaction "
                "seeds from the overflow size (the replay never sends an over-limit request); 2.1.152 "
                "cache_creation_input_tokens written as 0 when only the nested breakdown was reported (the loader "
                "reads the breakdown instead, `workbench.transcript.sanitize`); 2.1.172 1M sessions "
                "without usage credits compact back under the standard limit (account state, not in transcripts); "
                "2.1.198 compaction inherits the session's thinking settings (the summary call's cost)",
            ),
        ),
    }
)

_V21_UNKNOWN_MODELS = _V21_NATIVE_1M.model_copy(
    update={
        "since": "2.1.223",
        "label": f"2.1.223–{TABLE_THROUGH}",
        "unknown_models_compact": True,
        "evidence": (
            Evidence(
                constant="unknown_models_compact",
                source=f"{_CHANGELOG} 2.1.223: 'keep sessions on unrecognized model IDs within the assumed context "
                "window instead of letting them grow past it'; before it, auto-compact did not fire for them "
                "(router-for-me/CLIProxyAPI#363: glm-4.6, kimi, minimax through Claude Code, 2025-11)",
            ),
            Evidence(
                constant="not modelled",
                source=f"{_CHANGELOG} 2.1.223 CLAUDE_CODE_DISABLE_1M_CONTEXT holds native-1M models to 200K (set "
                "trigger.context_window=200000); 2.1.229 requests over the 32 MB limit are stripped of images and "
                f"documents during compaction; checked against the changelog through {TABLE_THROUGH}",
            ),
        ),
    }
)

#: The rows, oldest first; each holds from its ``since`` up to the next row's.
VERSIONS: tuple[ClaudeCodeVersion, ...] = (
    _V20,
    _V20_LATE,
    _V21_EARLY,
    _V21_PERSIST,
    _V21_BLOCK_EFFECTIVE,
    _V21_BLOCK_WINDOW,
    _V21_CAPPED,
    _V21_50K,
    _V21_BREAKER,
    _V2188,
    _V21_REFILL,
    _V21_NATIVE_1M,
    _V21_UNKNOWN_MODELS,
)


def newer_than_table(version: str | None) -> bool:
    """Whether ``version`` is newer than the changelog the table was checked against (`TABLE_THROUGH`)."""
    try:
        return version is not None and parse_version(version) > parse_version(TABLE_THROUGH)
    except ValueError:
        return False


@lru_cache(maxsize=256)
def version_constants(version: str | None) -> ClaudeCodeVersion:
    """The row for ``version`` (the reference row when None). ValueError for an unparseable version."""
    key = parse_version(version or REFERENCE_VERSION)
    row = VERSIONS[0]
    for candidate in VERSIONS:
        if parse_version(candidate.since) <= key:
            row = candidate
    return row


def version_table() -> list[dict[str, object]]:
    """The table as rows for a DataFrame or the docs: range, the main constants, and the evidence."""
    rows: list[dict[str, object]] = []
    for index, row in enumerate(VERSIONS):
        until = VERSIONS[index + 1].since if index + 1 < len(VERSIONS) else None
        rows.append(
            {
                "range": row.label,
                "since": row.since,
                "until": until,
                "output_reserve": "model max output"
                if row.output_reserve_cap is None
                else f"min(max output, {row.output_reserve_cap:,})",
                "threshold_200k_opus_4_5": 200_000 - row.output_reserve("claude-opus-4-5") - row.autocompact_buffer,
                "threshold_200k_default": 200_000 - row.output_reserve(None) - row.autocompact_buffer,
                "measure": row.measure,
                "blocking": f"{row.blocking_base} − {row.blocking_buffer:,}",
                "tool_result_budget": f"{row.max_result_chars:,} / {row.max_message_chars:,}"
                if row.tool_result_budget
                else "off",
                "legacy_microcompact": (
                    f"from {row.legacy_microcompact_since}" if row.legacy_microcompact_since else "on"
                )
                if row.legacy_microcompact
                else "off",
                "circuit_breaker": row.circuit_breaker,
                "refill_stop": row.refill_stop,
                "native_1m": ", ".join(row.native_1m) or "-",
                "unknown_models": "held to the assumed window" if row.unknown_models_compact else "never auto-compact",
                "evidence": [e.model_dump() for e in row.evidence],
            }
        )
    return rows
