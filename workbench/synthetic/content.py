"""The generated text: a made-up project's vocabulary, prompts and errors, and the content drawn from them
(prose, code listings, tool calls with their results, tool-result lengths drawn from the calibration)."""

from __future__ import annotations

import math
import random
from typing import Any

from .writer import _Writer

__all__ = [
    "_ERRORS",
    "_LAYERS",
    "_MODULES",
    "_NOUNS",
    "_PROMPTS",
    "_VERBS",
    "_code",
    "_length",
    "_prose",
    "_tool_call",
    "_words",
]

_MODULES = ("cart", "checkout", "inventory", "payments", "users", "search", "shipping", "reviews", "auth", "catalog")
_LAYERS = ("models", "views", "services", "api", "tests")
_VERBS = ("load", "save", "validate", "compute", "render", "fetch", "update", "delete", "merge", "resolve")
_NOUNS = ("order", "item", "total", "price", "session", "token", "address", "discount", "stock", "invoice")
_PROMPTS = (
    "The {m} {n} {v} is wrong when the cart has more than one {n2}; find out why and fix it.",
    "Add a {v} endpoint for {n} in the {m} module, with tests.",
    "Refactor {m}/{l}.py so {v}_{n} no longer duplicates the logic in {m2}/{l2}.py.",
    "Tests in tests/test_{m}.py fail on CI with a KeyError on '{n}'. Investigate.",
    "Explain how {v}_{n} flows from the api layer to the database in {m}.",
    "Continue with the next task in TODO.md; keep the commits small.",
)
_ERRORS = (
    "KeyError: '{n}'",
    "AssertionError: expected {a} == {b}",
    "TypeError: {v}_{n}() missing 1 required positional argument: '{n2}'",
    "ModuleNotFoundError: No module named 'shop.{m}.{l}'",
)


def _words(rng: random.Random) -> dict[str, str]:
    return {
        "m": rng.choice(_MODULES),
        "m2": rng.choice(_MODULES),
        "l": rng.choice(_LAYERS),
        "l2": rng.choice(_LAYERS),
        "v": rng.choice(_VERBS),
        "n": rng.choice(_NOUNS),
        "n2": rng.choice(_NOUNS),
        "a": str(rng.randint(1, 99)),
        "b": str(rng.randint(1, 99)),
    }


def _length(rng: random.Random, quantiles: dict[str, float]) -> int:
    """A tool-result length drawn log-normally through the measured median and p90."""
    median = max(20.0, float(quantiles.get("p50", 700)))
    p90 = max(median * 1.5, float(quantiles.get("p90", 6000)))
    sigma = math.log(p90 / median) / 1.2816
    cap = float(quantiles.get("max", 40000))
    return int(min(cap, max(10.0, rng.lognormvariate(math.log(median), sigma))))


def _code(rng: random.Random, path: str, chars: int) -> str:
    lines, size, n = [], 0, 1
    while size < chars:
        w = _words(rng)
        template = rng.choice(
            (
                "def {v}_{n}(self, {n2}):",
                "    {n} = self.{v}_{n2}({n2})",
                "    if not {n}:",
                "        raise ValueError('invalid {n} for {m}')",
                "    return {n2}.{v}()",
                "class {N}{M}Service:",
                "from shop.{m}.{l} import {v}_{n}",
                "    # {v} the {n} before the {n2} is stored",
                "",
            )
        )
        text = template.format(**w, N=w["n"].title(), M=w["m"].title())
        lines.append(f"{n:>6}\u2192{text}")
        size += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)


def _tool_call(
    rng: random.Random, writer: _Writer, cal: dict[str, Any], fail: bool
) -> tuple[dict[str, Any], tuple[str, bool, Any]]:
    w = _words(rng)
    path = f"{writer.cwd}/shop/{w['m']}/{w['l']}.py"
    tool_id = writer.ident("toolu_01")
    kind = rng.choices(("Read", "Bash", "Grep", "Edit", "Glob"), weights=(40, 30, 12, 14, 4))[0]
    length = _length(rng, cal["tool_result_chars"])
    if kind == "Read":
        inputs = {"file_path": path}
        text = _code(rng, path, length)
        extra: Any = {"type": "text", "file": {"filePath": path, "numLines": text.count("\n") + 1}}
    elif kind == "Bash":
        command = rng.choice(
            (
                f"pytest tests/test_{w['m']}.py -q",
                f"git diff shop/{w['m']}",
                "make lint",
                f"python -m shop.{w['m']}.{w['l']} --check",
            )
        )
        inputs = {"command": command, "description": f"Run {command.split()[0]}"}
        if fail:
            text = f"Exit code 1\n{_ERRORS[rng.randrange(len(_ERRORS))].format(**w)}\n" + _code(
                rng, path, min(length, 800)
            )
        else:
            text = f"{rng.randint(3, 80)} passed in {rng.uniform(0.2, 9):.2f}s\n" + _code(
                rng, path, max(0, length - 40)
            )
        extra = {"stdout": text[:200], "stderr": "", "interrupted": False, "isImage": False}
    elif kind == "Grep":
        inputs = {"pattern": f"{w['v']}_{w['n']}", "path": "shop", "output_mode": "files_with_matches"}
        files = sorted({f"shop/{rng.choice(_MODULES)}/{rng.choice(_LAYERS)}.py" for _ in range(rng.randint(1, 12))})
        text = f"Found {len(files)} files\n" + "\n".join(files)
        extra = {"mode": "files_with_matches", "numFiles": len(files), "filenames": files}
    elif kind == "Glob":
        inputs = {"pattern": f"shop/{w['m']}/**/*.py"}
        files = sorted({f"{writer.cwd}/shop/{w['m']}/{rng.choice(_LAYERS)}.py" for _ in range(rng.randint(1, 6))})
        text = "\n".join(files)
        extra = {"filenames": files, "numFiles": len(files), "truncated": False}
    else:
        old = f"return {w['n2']}.{w['v']}()"
        inputs = {"file_path": path, "old_string": old, "new_string": f"return self.{w['v']}_{w['n2']}({w['n2']})"}
        text = (
            f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"
            if fail
            else f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet:\n"
            + _code(rng, path, min(length, 1200))
        )
        extra = {"filePath": path, "oldString": old, "newString": inputs["new_string"]}
    return {"type": "tool_use", "id": tool_id, "name": kind, "input": inputs}, (text, fail, extra)


def _prose(rng: random.Random, sentences: int) -> str:
    parts = []
    for _ in range(sentences):
        w = _words(rng)
        parts.append(
            rng.choice(
                (
                    "Let me look at how {v}_{n} is used in shop/{m}/{l}.py.",
                    "The failure comes from {m}/{l}.py: {n} is read before {n2} is set.",
                    "I'll run the {m} tests again to confirm the fix.",
                    "Now update the {n2} handling in the {m2} service so both paths agree.",
                    "Good, that works; next, the {n} {v} needs the same guard.",
                )
            ).format(**w)
        )
    return " ".join(parts)
