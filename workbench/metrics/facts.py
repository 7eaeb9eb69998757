"""Facts: the strings a compaction must keep, pulled out of records with the uuids they came from.

The fact kinds, keys and the presence rule are documented in `workbench.metrics.fidelity` (the metric
that uses them); this module only extracts and indexes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..transcript.model import Block, Record

__all__ = ["DIRECTIVE_KINDS", "DIRECTIVE_THRESHOLD", "Fact", "FactIndex", "extract_facts", "render_record"]


DIRECTIVE_KINDS = frozenset({"directive", "correction"})
DIRECTIVE_THRESHOLD = 0.6
MAX_FACTS_PER_BLOCK = 50

_PATH = re.compile(r"(?<![\w@])(?:~|\.{1,2})?/?(?:[\w@+\-.]+/)+[\w@+\-]+\.[A-Za-z0-9]{1,8}\b")
_ATOM = re.compile(r"[\w][\w.\-/]*[\w]|\w")
_WORD = re.compile(r"[a-z][a-z0-9_']{3,}")
_DEF = re.compile(
    r"\b(?:def|defp|defmacro|defmodule|class|function|func|fn|interface|struct|enum|trait|impl)\s+([A-Za-z_][\w.]*[\w])"
)
_BACKTICK = re.compile(r"`([A-Za-z_][\w.:/]*[\w])(?:\([^`]*\))?`")
_NAMED = re.compile(r"\b([a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b")
_NUMBER = re.compile(
    r"\b(\d+(?:[.,]\d+)?)\s?(ms|s|sec|seconds|minutes|min|mb|kb|gb|k|%|tokens|tests?|passed|failed|failures?"
    r"|errors?|warnings?|lines|files|bytes)(?![\w])",
    re.IGNORECASE,
)
_SHA = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_URL = re.compile(r"https?://[^\s<>()\"'`\]]+")
_ISSUE = re.compile(r"(?<![\w&])#\d{2,}\b")
_ERROR_LINE = re.compile(
    r"^(?:\*\* \()?(?:[\w.]*(?:Error|Exception)\b|error\b|ERROR\b|Traceback|FAILED|FAIL\b|panic|fatal)"
    r"|\b(?:[Ee]rror|ERROR):"
)
_GUTTER = re.compile(r"^[\s\d│|>:.\-─└├┌→]*")
_TAGGED = re.compile(r"<([a-z][\w-]*)(?:\s[^>]*)?>.*?</\1>", re.DOTALL)
_CORRECTION = re.compile(
    r"(?:^|\b)(?:no[,.!]|nope|don'?t|do not|doesn'?t|instead|wrong|stop|never|not that|actually|revert|undo)\b",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_PARTS = re.compile(r"(?<![A-Za-z0-9])[0-9]+|([A-Z]?[a-z0-9]+|[A-Z]+(?![a-z]))")
LOOSE_MIN = 6
_STOP_WORDS = (
    "that this with from have will would should could there their them then than what when where "
    "which while about into your you're just like also make sure please want need some more other "
    "only each very been were does done here they these those being because after before over under "
    "again let's it's i'm can't don't "
)
_STOP = frozenset(_STOP_WORDS.split())


@dataclass(frozen=True)
class Fact:
    """One fact: its kind, the key that must survive, a readable text, the records it came from."""

    kind: str
    key: str
    text: str
    uuids: frozenset[str]
    words: tuple[str, ...] = ()


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _path_key(path: str) -> str:
    parts = [p for p in path.rstrip("/.,:;").split("/") if p and p not in (".", "..", "~")]
    return "/".join(parts[-2:])


def _path_suffixes(atom: str) -> Iterable[str]:
    parts = [p for p in atom.split("/") if p]
    for k in range(1, min(len(parts), 2) + 1):
        yield "/".join(parts[-k:])


def _loose(text: str) -> str:
    """An identifier without case or separators: ``SessionLive``, ``session_live`` → ``sessionlive``."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _loose_forms(text: str) -> set[str]:
    """Every run of 1-3 consecutive identifier parts of ``text`` in `_loose` form (``session live`` and
    ``SessionLive.mount`` give ``sessionlive``), so a summary that writes an identifier another way still
    contains it."""
    # one pass over the text: the parts `_CAMEL` finds inside each `_IDENT` word (a digit run that starts
    # no word is matched by the first alternative and skipped, as `_IDENT` skips it)
    parts = [part.lower() for part in _PARTS.findall(text) if part]
    out: set[str] = set()
    add = out.add
    padded = [*parts, "", ""]
    for i, one in enumerate(parts):
        two = one + padded[i + 1]
        three = two + padded[i + 2]
        if len(one) >= LOOSE_MIN:
            add(one)
        if i + 1 < len(parts) and len(two) >= LOOSE_MIN:
            add(two)
        if i + 2 < len(parts) and len(three) >= LOOSE_MIN:
            add(three)
    return out


def _content_words(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _STOP:
            seen.setdefault(word, None)
    return tuple(seen)[:30]


def _command_keys(command: str) -> list[str]:
    first = command.strip().splitlines()[0] if command.strip() else ""
    keys = []
    for part in re.split(r"&&|\|\||;|\|", first):
        words = part.strip().split()
        if not words or words[0] in ("cd", "echo", "true", "false", "export", "set"):
            continue
        keys.append(" ".join(words[:3]))
    return keys


def _error_key(line: str) -> str:
    return _norm(_GUTTER.sub("", line))[:60]


def _user_text(record: Record) -> str:
    if record.kind != "user" or record.is_meta or record.is_compact_summary:
        return ""
    text = "\n".join(b.text for b in record.blocks if b.kind == "text")
    text = _TAGGED.sub(" ", text).strip()
    if not text or text.startswith("[Request interrupted") or text.startswith("Caveat:"):
        return ""
    return text


def _input_text(value: Any) -> str:
    """String values of a tool input, newline-joined (no JSON escaping)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_input_text(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return "\n".join(_input_text(v) for v in value)
    return ""


def render_record(record: Record, *, results: bool = True) -> str:
    """All text of a record as the fact extractors and the presence index read it."""
    parts: list[str] = []
    for block in record.blocks:
        if block.kind in ("text", "thinking"):
            parts.append(block.text)
        elif block.kind in ("tool_use", "server_tool_use"):
            parts.append(f"{block.name or ''}\n{_input_text(block.input)}")
        elif block.kind == "tool_result" and results:
            parts.append(block.result_text())
    return "\n".join(p for p in parts if p)


def _text_facts(text: str, *, prose: bool) -> list[tuple[str, str, str]]:
    """(kind, key, text) facts found in free text; ``prose`` adds the looser symbol patterns."""
    found: list[tuple[str, str, str]] = []
    for m in _PATH.findall(text)[:MAX_FACTS_PER_BLOCK]:
        key = _path_key(m)
        if "/" in key:
            found.append(("path", key, m))
    for m in _DEF.findall(text)[:MAX_FACTS_PER_BLOCK]:
        found.append(("symbol", m, m))
    if prose:
        for m in _BACKTICK.findall(text)[:MAX_FACTS_PER_BLOCK]:
            if "/" not in m and len(m) >= 3:
                found.append(("symbol", m, m))
        for m in _NAMED.findall(text)[:MAX_FACTS_PER_BLOCK]:
            if len(m) >= 5:
                found.append(("symbol", m, m))
    for number, unit in _NUMBER.findall(text)[:MAX_FACTS_PER_BLOCK]:
        found.append(("number", f"{number}{unit.lower()}", f"{number} {unit}"))
    for pattern in (_UUID, _SHA, _URL, _ISSUE):
        for m in pattern.findall(text)[:MAX_FACTS_PER_BLOCK]:
            found.append(("identifier", m.rstrip(".,;:"), m))
    return found


def _record_facts(record: Record) -> list[tuple[str, str, str, tuple[str, ...]]]:
    facts: list[tuple[str, str, str, tuple[str, ...]]] = []
    if record.kind not in ("user", "assistant"):
        return facts
    user = _user_text(record)
    if user:
        words = _content_words(user)
        if words:
            kind = "correction" if _CORRECTION.search(user) else "directive"
            facts.append((kind, _norm(user)[:200], _norm(user)[:200], words))
    for block in record.blocks:
        facts.extend((*f, ()) for f in _block_facts(record, block))
    return facts


def _block_facts(record: Record, block: Block) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if block.kind in ("text", "thinking"):
        if record.kind == "user" and not _user_text(record):
            return _text_facts(block.text, prose=False)
        return _text_facts(block.text, prose=True)
    if block.kind in ("tool_use", "server_tool_use"):
        data = block.input if isinstance(block.input, Mapping) else {}
        for field in ("file_path", "path", "notebook_path"):
            value = data.get(field)
            if isinstance(value, str) and value:
                out.append(("path", _path_key(value), value))
        command = data.get("command")
        if isinstance(command, str):
            out.extend(("command", key, key) for key in _command_keys(command))
        pattern = data.get("pattern")
        if isinstance(pattern, str) and re.fullmatch(r"[A-Za-z_][\w.]{3,}", pattern):
            out.append(("symbol", pattern, pattern))
        out.extend(_text_facts(_input_text(data), prose=False))
        return out
    if block.kind == "tool_result":
        text = block.result_text()
        lines = [line for line in text.splitlines() if line.strip()]
        errors = [lines[0]] if block.is_error and lines else []
        errors += [line for line in lines if _ERROR_LINE.search(_GUTTER.sub("", line))][:3]
        for line in errors:
            key = _error_key(line)
            if len(key) >= 8:
                out.append(("error", key, line.strip()[:200]))
        out.extend(_text_facts(text, prose=False))
    return out


def extract_facts(records: Sequence[Record]) -> list[Fact]:
    """Facts in ``records``, one per (kind, key), each with the uuids of every record it occurs in."""
    merged: dict[tuple[str, str], list[Any]] = {}
    for record in records:
        for kind, key, text, words in _record_facts(record):
            if not key:
                continue
            entry = merged.setdefault((kind, key), [text, set(), words])
            if record.uuid is not None:
                entry[1].add(record.uuid)
    return [Fact(kind, key, text, frozenset(uuids), words) for (kind, key), (text, uuids, words) in merged.items()]


class FactIndex:
    """What a text contains, in the form `Fact` keys are checked against.

    `FactIndex.combine` builds the index of several texts from their own indexes (a union: the patterns
    never match across the newline that joins texts), so a replay's many compacted contexts, which
    share most records, index each record once.
    """

    def __init__(self, texts: Iterable[str]):
        text = "\n".join(t for t in texts if t)
        self.flat = _norm(text)
        self.atoms: set[str] = set()
        for atom in _ATOM.findall(text):
            atom = atom.rstrip(".-/")
            self.atoms.add(atom)
            if "/" in atom:
                self.atoms.update(_path_suffixes(atom))
            if "." in atom:
                self.atoms.update(atom.split("."))
        self.atoms.update(_path_key(m) for m in _PATH.findall(text))
        self.atoms.update(f"{n}{u.lower()}" for n, u in _NUMBER.findall(text))
        self.atoms.update(m.rstrip(".,;:") for m in _URL.findall(text))
        self.atoms.update(_ISSUE.findall(text))
        self.words = set(_WORD.findall(text.lower()))
        self.loose = _loose_forms(text)

    @classmethod
    def combine(cls, parts: Iterable[FactIndex]) -> FactIndex:
        """The index of the newline-joined texts of ``parts``."""
        out = cls(())
        flats = []
        for part in parts:
            if part.flat:
                flats.append(part.flat)
            out.atoms |= part.atoms
            out.words |= part.words
            out.loose |= part.loose
        out.flat = " ".join(flats)
        return out

    def __contains__(self, fact: Fact) -> bool:
        if fact.kind in DIRECTIVE_KINDS:
            if not fact.words:
                return True
            return sum(w in self.words for w in fact.words) / len(fact.words) >= DIRECTIVE_THRESHOLD
        if fact.kind in ("command", "error"):
            return fact.key in self.flat
        if fact.key in self.atoms:
            return True
        if fact.kind == "path":  # named by its basename alone (``annotation.ex`` for ``spotter/annotation.ex``)
            base = fact.key.rsplit("/", 1)[-1]
            return "." in base and base in self.atoms
        if fact.kind == "symbol":  # the same identifier in another form: SessionLive, session_live, session live
            loose = _loose(fact.key)
            return len(loose) >= LOOSE_MIN and loose in self.loose
        return False
