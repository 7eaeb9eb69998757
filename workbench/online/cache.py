"""On-disk response cache of the online pieces: a sweep never pays twice, re-runs are free.

One JSON file per response under ``workbench.util.cache.cache_root() / "anthropic"`` (so
``WORKBENCH_CACHE_DIR`` moves it), named by the SHA-256 of the canonical JSON of
``{"v", "endpoint", "request"}``; ``request`` is the full request body (model, system, messages,
tools, max_tokens and every other parameter), so any change to the prompt, the conversation, the model
or a parameter is a different entry. Writes are atomic (temporary file in the same folder, then
``os.replace``), so concurrent sweeps and interrupted runs never leave a half-written entry; a file that
does not parse is treated as a miss. Only the response body is stored (plus endpoint, model and the
key), never headers, so the API key cannot end up in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CACHE_VERSION", "ResponseCache", "request_key", "resolve_cache"]

#: Bump to invalidate every entry (changes the hash of every request).
CACHE_VERSION = 1


def request_key(endpoint: str, request: Mapping[str, Any]) -> str:
    """Content hash of ``(endpoint, request body)``: hex SHA-256 of canonical JSON (sorted keys)."""
    payload = {"v": CACHE_VERSION, "endpoint": endpoint, "request": request}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses by request hash. ``root`` defaults to ``cache_root() / "anthropic"``, resolved at first use."""

    def __init__(self, root: str | Path | None = None) -> None:
        self._root = Path(root) if root is not None else None

    @property
    def root(self) -> Path:
        if self._root is not None:
            return self._root
        from ..util.cache import cache_root

        return cache_root() / "anthropic"

    def key(self, endpoint: str, request: Mapping[str, Any]) -> str:
        return request_key(endpoint, request)

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        response = entry.get("response") if isinstance(entry, dict) else None
        return response if isinstance(response, dict) and entry.get("key") == key else None

    def put(self, key: str, response: Mapping[str, Any], *, endpoint: str, model: str) -> Path:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "endpoint": endpoint, "model": model, "response": response}
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __repr__(self) -> str:
        return f"ResponseCache(root={str(self._root) if self._root else '<cache_root>/anthropic'!r})"


def resolve_cache(cache: ResponseCache | bool | str | Path | None) -> ResponseCache | None:
    """``True`` → the default cache, ``False``/``None`` → no caching, a path → a cache there."""
    if cache is True:
        return ResponseCache()
    if cache is False or cache is None:
        return None
    if isinstance(cache, ResponseCache):
        return cache
    return ResponseCache(cache)
