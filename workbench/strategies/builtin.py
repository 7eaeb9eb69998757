"""Imports every built-in strategy module so each registers itself (`registry._BUILTIN_MODULES`)."""

import importlib

from .registry import _BUILTIN_MODULES

for _module in dict.fromkeys(_BUILTIN_MODULES.values()):
    importlib.import_module(f"{__package__}.{_module}")
