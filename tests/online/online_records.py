"""Hand-built records for the online tests."""

from __future__ import annotations

from typing import Any

import record_builders
from record_builders import CWD, assistant, call, result, say, thinking

from workbench.transcript.model import Record

SESSION = "sess-123"


def user(text: str, **kw: Any) -> Record:
    return record_builders.user(text, session_id=SESSION, **kw)


def session() -> list[Record]:
    """Request, a read, a failing test, a fix, an answer; message ids per API response."""
    return [
        user("Fix the failing date parser tests in utils"),
        assistant(thinking("let me look"), message_id="m1"),
        assistant(call("t1", "Read", file_path=f"{CWD}/utils/dates.py"), message_id="m1"),
        result("t1", "def parse_iso(s):\n    return s"),
        assistant(call("t2", "Bash", command="pytest tests/test_dates.py"), message_id="m2"),
        result("t2", "FAILED tests/test_dates.py::test_iso - ValueError: bad month", is_error=True),
        assistant(
            call("t3", "Edit", file_path=f"{CWD}/utils/dates.py", old_string="a", new_string="b"), message_id="m3"
        ),
        result("t3", "ok"),
        say("Fixed: parse_iso now validates the month.", message_id="m4"),
        user("Thanks. Now add a test for leap years"),
        assistant(call("t4", "Read", file_path=f"{CWD}/tests/test_dates.py"), message_id="m5"),
    ]
