"""A local fake of the Anthropic Messages API for the online tests (no test touches the network).

`FakeAnthropic` is a threading ``http.server`` on 127.0.0.1 (port 0) implementing
``POST /v1/messages`` (non-streaming JSON) and ``POST /v1/messages/count_tokens``, with scripted error
responses in the API's error shape. Every request is recorded (path, lower-cased headers, JSON body).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic


@pytest.fixture()
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to something other than 127.0.0.1 fails the test: no test touches the network."""
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost") and self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"online test tried to reach {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own response cache (the suite-wide one would make later tests cache hits)."""
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "wb-cache"))
