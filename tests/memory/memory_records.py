"""A hand-built debugging session shared by the memory and summary tests."""

from __future__ import annotations

from record_builders import CWD, assistant, result, say, tool_use, user

from workbench.transcript.model import Record


def debugging_session() -> list[Record]:
    """A small session: a request, reads, a failing test run, a correction, a fix, a final answer."""
    return [
        user("Fix the failing date parser tests in the utils package please"),
        assistant(tool_use("t1", "Read", file_path=f"{CWD}/README.md")),
        result("t1", "1→# Utils\n2→\n3→## Testing\n4→Run pytest."),
        assistant(tool_use("t2", "Bash", command="pytest tests/test_dates.py", description="run tests")),
        result("t2", "FAILED tests/test_dates.py::test_iso - ValueError: bad month\n1 failed", is_error=True),
        assistant(
            tool_use(
                "t3",
                "Edit",
                file_path=f"{CWD}/utils/dates.py",
                old_string="a",
                new_string="def parse_iso(s):\n    return s",
            )
        ),
        result("t3", "ok"),
        user("No, don't change parse_iso, fix the month table instead"),
        assistant(tool_use("t4", "Grep", pattern="MONTHS", path=f"{CWD}/utils")),
        result("t4", "utils/dates.py:3:MONTHS = [...]"),
        assistant(
            tool_use(
                "t5",
                "Edit",
                file_path=f"{CWD}/utils/dates.py",
                old_string="b",
                new_string="MONTHS = list(range(1, 13))",
            )
        ),
        result("t5", "ok"),
        assistant(tool_use("t6", "Bash", command="pytest tests/test_dates.py")),
        result("t6", "3 passed"),
        say("All 3 date tests pass now: the month table was off by one."),
    ]
