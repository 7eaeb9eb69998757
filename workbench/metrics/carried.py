"""When a compaction's text carries a tool result's content, and when it only mentions the file or command:
the two text rules of the counterfactual recovery (`workbench.metrics.expected_recovery`) and of the
fidelity validation (`workbench.metrics.validation`), kept apart from the walk that applies them.

* **Carried** (`content_carried`): the carrier (a summary, re-attached file contents, a rewritten result)
  contains at least half of the result's content lines: lines of at least 20 characters after stripping
  the ``cat -n`` line-number gutter, compared whitespace-collapsed; a result without such lines is
  carried only if it appears whole (and is at least 8 characters).
* **Mentioned** (`mentions`): a summary naming ``lib/app/parser.py`` tells the agent the file exists, not
  what it says. A path is mentioned as written, by any trailing part (relative) or by its basename; a
  command, a search pattern, a URL, a web query or a sub-agent's description by its first line.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath

__all__ = ["CARRIED_SHARE", "MIN_LINE", "content_carried", "mentions"]

#: Shortest content line that counts (shorter lines are braces, blank-ish, too common to prove anything).
MIN_LINE = 20
#: Share of a result's content lines a carrier must hold.
CARRIED_SHARE = 0.5
_GUTTER = re.compile(r"^\s*\d+[→\t|:]\s?")


def _norm(text: str) -> str:
    """Whitespace runs collapsed to one space, the ends stripped (``re.sub(r"\\s+", " ", text).strip()``:
    `str.split` splits on exactly the characters ``\\s`` matches, a test checks every code point)."""
    return " ".join(text.split())


def _ungutter(line: str) -> str:
    """``line`` without a ``cat -n`` gutter; the pattern is tried only where one can start (a digit after
    the leading whitespace: ``\\d`` is `str.isdecimal`)."""
    return _GUTTER.sub("", line) if line.lstrip()[:1].isdecimal() else line


@lru_cache(maxsize=8192)
def _content_lines(text: str) -> tuple[str, ...]:
    lines = (_norm(_ungutter(line)) for line in text.splitlines())
    return tuple(line for line in lines if len(line) >= MIN_LINE)


@lru_cache(maxsize=512)
def _flat(carrier: str) -> str:
    """A carrier without gutters, whitespace collapsed (one summary is checked against many results)."""
    return _norm("\n".join(_ungutter(line) for line in carrier.splitlines()))


@lru_cache(maxsize=512)
def _words(carrier: str) -> frozenset[str]:
    """The space-separated words of the flat carrier."""
    return frozenset(_flat(carrier).split(" "))


def _may_hold(words: frozenset[str], line: str) -> bool:
    """False when the flat carrier cannot hold ``line``: a line inside the carrier has its inner words (all
    but the first and the last, which may be parts of the carrier's words) among the carrier's words, both
    being single-spaced. A quick test before a search of the whole carrier; True says nothing."""
    inner = line.split(" ")[1:-1]
    return all(word in words for word in inner)


def content_carried(content: str, carrier: str) -> bool:
    """True when ``carrier`` holds ``content`` (at least half of its content lines, or all of a short one)."""
    if not content.strip() or not carrier:
        return False
    return _carried(content, carrier)


@lru_cache(maxsize=65_536)
def _carried(content: str, carrier: str) -> bool:
    """`content_carried` of two non-empty texts, remembered: the configs of a tune that compact alike write
    the same summary, and each checks the same results against it."""
    flat = _flat(carrier)
    lines = _content_lines(content)
    if not lines:
        short = _norm(content)
        return len(short) >= 8 and short in flat
    need = CARRIED_SHARE * len(lines)
    words = _words(carrier)
    found = missing = 0
    for line in lines:  # stops as soon as the answer is known (a long result against a long summary)
        if _may_hold(words, line) and line in flat:
            found += 1
            if found >= need:
                return True
        else:
            missing += 1
            if len(lines) - missing < need:
                return False
    return found >= need


def mentions(key: str, kind: str, text: str) -> bool:
    """Whether ``text`` names ``key``: a path as written, by any trailing part (relative) or by basename;
    a command, search pattern, URL, query or sub-agent description (kinds ``command``, ``search``,
    ``fetch``, ``task``) as its first line."""
    if not text:
        return False
    if kind in ("command", "search", "fetch", "task"):
        first = key.strip().splitlines()[0] if key.strip() else ""
        return bool(first) and _norm(first) in _norm(text)
    parts = [p for p in PurePosixPath(key).parts if p not in ("/", ".", "..")]
    if not parts:
        return False
    if "." in parts[-1] and re.search(rf"(?<![\w.-]){re.escape(parts[-1])}(?![\w-])", text):
        return True
    return any("/".join(parts[-k:]) in text for k in range(2, len(parts) + 1))
