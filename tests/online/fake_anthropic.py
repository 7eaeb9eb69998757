"""A local stand-in for the Anthropic API on 127.0.0.1 (the real SDK talks to it in the online tests)."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic

FAKE_KEY = "sk-ant-test-LEAKCANARY-7f3a9c2e5b1d"

MESSAGES_PATH = "/v1/messages"
COUNT_PATH = "/v1/messages/count_tokens"


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test_err"}


def default_count(body: dict[str, Any]) -> int:
    """A deterministic stand-in tokenizer: characters of the request JSON / 4."""
    return len(json.dumps(body.get("messages"), sort_keys=True)) // 4 + 3


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.scripts: dict[str, deque[tuple[int, dict[str, Any], dict[str, str]]]] = {}
        self.reply: Callable[[dict[str, Any]], list[dict[str, Any]]] = lambda body: [{"type": "text", "text": "ok"}]
        self.count: Callable[[dict[str, Any]], int] = default_count
        #: Seconds to wait before answering (a server that never answers: longer than the test), and seconds
        #: between two bytes of the body (a server that drips its answer).
        self.hang = 0.0
        self.drip = 0.0
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # a hanging or dripping answer ends now
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def enqueue(self, path: str, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.scripts.setdefault(path, deque()).append((status, body, headers or {}))

    def fail(self, path: str, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        self.enqueue(path, status, error_body(kind, message), headers)

    def calls(self, path: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.requests if path is None or r["path"] == path]

    def client(self, api_key: str = FAKE_KEY) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=10)

    def _respond(self, path: str, body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], dict[str, str]]:
        queue = self.scripts.get(path)
        if queue:
            return queue.popleft()
        if path == MESSAGES_PATH:
            content = self.reply(body)
            stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
            return (
                200,
                {
                    "id": f"msg_test_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": default_count(body), "output_tokens": 7},
                },
                {},
            )
        if path == COUNT_PATH:
            return 200, {"input_tokens": self.count(body)}, {}
        return 404, error_body("not_found_error", f"no route {path}"), {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": headers, "body": body})
                    n = len(fake.requests)
                    authed = bool(headers.get("x-api-key")) or headers.get("authorization", "").startswith("Bearer ")
                    if not authed:
                        status, payload, extra = 401, error_body("authentication_error", "missing key"), {}
                    else:
                        status, payload, extra = fake._respond(self.path.split("?")[0], body, n)
                data = json.dumps(payload).encode()
                if fake.hang and fake._released.wait(fake.hang):
                    return
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_test_{n}")
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                if not fake.drip:
                    self.wfile.write(data)
                    return
                for index in range(len(data)):
                    if fake._released.wait(fake.drip):
                        return
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()

        return Handler


def sent_key(request: dict[str, Any]) -> str | None:
    """The credential a request carried (``x-api-key`` or ``Authorization: Bearer``)."""
    headers = request["headers"]
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
