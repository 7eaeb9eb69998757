"""A hand-built session shared by the online tests (its records carry the session id ``SESSION``)."""

from __future__ import annotations

from record_builders import CWD, assistant, result, say, thinking, tool_use, user

from workbench.transcript.model import Record

SESSION = "sess-123"


def session() -> list[Record]:
    """Request, a read, a failing test, a fix, an answer; message ids per API response."""
    return [
        user("Fix the failing date parser tests in utils", session_id=SESSION),
        assistant(thinking("let me look"), message_id="m1"),
        assistant(tool_use("t1", "Read", file_path=f"{CWD}/utils/dates.py"), message_id="m1"),
        result("t1", "def parse_iso(s):\n    return s"),
        assistant(tool_use("t2", "Bash", command="pytest tests/test_dates.py"), message_id="m2"),
        result("t2", "FAILED tests/test_dates.py::test_iso - ValueError: bad month", is_error=True),
        assistant(
            tool_use("t3", "Edit", file_path=f"{CWD}/utils/dates.py", old_string="a", new_string="b"), message_id="m3"
        ),
        result("t3", "ok"),
        say("Fixed: parse_iso now validates the month.", message_id="m4"),
        user("Thanks. Now add a test for leap years", session_id=SESSION),
        assistant(tool_use("t4", "Read", file_path=f"{CWD}/tests/test_dates.py"), message_id="m5"),
    ]
