"""Per-module mutation score from a finished `make mutation` run (mutmut 3 writes ``mutants/**/*.py.meta``).

Killed = killed + timeout (mutmut's own score); the denominator is every mutant mutmut generated for the
module, so mutants no selected test reaches ("no tests") and surviving ones count against the score.
``--json`` prints the numbers for scripts; ``--survivors`` lists the surviving and untested mutants.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", None: "not checked", 36: "timeout"}
STATUS.update(dict.fromkeys((-24, 24, 152, 255), "timeout"))


def scores(root: Path) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for meta in sorted(root.glob("**/*.py.meta")):
        module = str(meta.relative_to(root)).removesuffix(".meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts = Counter(STATUS.get(code, "suspicious") for code in codes.values())
        killed = counts["killed"] + counts["timeout"]
        out[module] = {
            "killed": killed,
            "total": len(codes),
            "score": killed / len(codes) if codes else 1.0,
            "counts": dict(counts),
            "survivors": sorted(k for k, c in codes.items() if STATUS.get(c) in ("survived", "no tests")),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("mutants"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--survivors", action="store_true")
    args = parser.parse_args()
    if not args.root.is_dir():
        print(f"{args.root}: no mutmut results (run `make mutation` first)", file=sys.stderr)
        return 1
    result = scores(args.root)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    killed = sum(int(r["killed"]) for r in result.values())  # type: ignore[call-overload]
    total = sum(int(r["total"]) for r in result.values())  # type: ignore[call-overload]
    print(f"{'module':45} {'killed':>7} {'total':>6} {'score':>7}  other")
    for module, r in result.items():
        other = {k: v for k, v in r["counts"].items() if k not in ("killed", "timeout")}  # type: ignore[union-attr]
        print(f"{module:45} {r['killed']:>7} {r['total']:>6} {float(r['score']):>7.1%}  {other or ''}")  # type: ignore[arg-type]
        if args.survivors:
            for name in r["survivors"]:  # type: ignore[union-attr]
                print(f"    {name}")
    print(f"{'all':45} {killed:>7} {total:>6} {killed / total if total else 1:>7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
