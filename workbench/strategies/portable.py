"""User strategies in worker processes: ship them by value, and fingerprint their code for cell ids.

A strategy class defined in a notebook cell lives in ``__main__``. A forked worker (the local executor
on Linux) inherits it, but a spawned worker or a dask worker has a different ``__main__`` and cannot
import it by reference. `pack` serialises such classes with cloudpickle (a dependency of dask), which
pickles ``__main__`` classes *by value* (their methods and the globals they use), and `install`
registers them in the worker before its cells run. Built-in strategies and those of installed packages
(entry points) travel by name: every process finds them in its own registry.

A sweep cell's id includes the code version of the package (`workbench.experiments.cells.code_version`),
which does not cover a user's class; `code_fingerprint` adds a hash of the class's own code (the
bytecode, constants and names of its methods, and its config schema), so editing the strategy in the
notebook recomputes its cells, and re-running an unchanged cell (a new class object) does not.
"""

from __future__ import annotations

import hashlib
import json
import types
from collections.abc import Iterable, Sequence
from typing import Any

from .base import Strategy
from .registry import get_strategy, register, strategy_origin

__all__ = ["code_fingerprint", "install", "is_builtin", "needs_shipping", "pack"]


def is_builtin(cls: type[Strategy]) -> bool:
    return cls.__module__.startswith("workbench.")


def needs_shipping(cls: type[Strategy]) -> bool:
    """True for classes a fresh worker process cannot find by name (not built in, not an entry point)."""
    return not is_builtin(cls) and not strategy_origin(cls.name).startswith("entry point")


def pack(names: Iterable[str]) -> tuple[tuple[str, bytes], ...]:
    """``(name, cloudpickle bytes)`` for each named strategy that `needs_shipping`."""
    import cloudpickle

    out = []
    for name in sorted(set(names)):
        cls = get_strategy(name)
        if needs_shipping(cls):
            out.append((name, cloudpickle.dumps(cls)))
    return tuple(out)


def install(packed: Sequence[tuple[str, bytes]]) -> None:
    """Register shipped classes in this process (a class already registered under the name is kept:
    a forked worker has the driver's own)."""
    if not packed:
        return
    import pickle

    from .registry import strategies

    known = strategies()
    for name, blob in packed:
        if name not in known:
            register(pickle.loads(blob))


def _code_digest(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    digest.update(repr(code.co_varnames).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_digest(const, digest)
        else:
            digest.update(repr(const).encode())


def code_fingerprint(cls: type[Strategy]) -> str:
    """12 hex digits over the code of ``cls`` and its non-built-in bases (see the module docstring);
    ``""`` for built-in strategies (the package's code version covers them)."""
    if is_builtin(cls):
        return ""
    digest = hashlib.blake2b(digest_size=6)
    for klass in cls.__mro__:
        if klass is object or klass.__module__.startswith("workbench."):
            continue
        digest.update(klass.__qualname__.encode())
        for key, value in sorted(vars(klass).items()):
            func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if isinstance(func, types.FunctionType):
                digest.update(key.encode())
                _code_digest(func.__code__, digest)
            elif isinstance(value, (frozenset, set)):
                digest.update(f"{key}={sorted(map(repr, value))!r}".encode())
            elif isinstance(value, (str, int, float, bool, tuple)):
                digest.update(f"{key}={value!r}".encode())
    digest.update(json.dumps(cls.Config.model_json_schema(), sort_keys=True, default=str).encode())
    return digest.hexdigest()
