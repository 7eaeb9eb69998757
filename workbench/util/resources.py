"""Files shipped with the workbench: the embedded sessions (``data/``), the notebooks (``notebooks/``) and
the experiment specs (``experiments/``). From a checkout they are the repository's folders; an installed
wheel carries copies under ``workbench/_embedded/`` (`pyproject.toml`, hatch's ``force-include``).

Also the optional dependencies: which extra of the package installs a module the workbench imports only
when a feature needs it (`missing_extra`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXTRAS", "embedded", "missing_extra"]

_PACKAGE = Path(__file__).resolve().parents[1]
_CHECKOUT = _PACKAGE.parent

#: Top-level module → the extra that installs it (``pip install 'workbench[EXTRA]'``).
EXTRAS = {
    "anthropic": "online",
    "datasets": "hf",
    "dask": "sweeps",
    "distributed": "sweeps",
    "papermill": "sweeps",
    "nbclient": "sweeps",
    "ipykernel": "sweeps",
    "ipywidgets": "notebook",
    "nbformat": "notebook",
    "nbconvert": "notebook",
    "jupyterlab": "notebook",
}


def embedded(name: str) -> Path:
    """The shipped folder ``name`` (``data``, ``notebooks`` or ``experiments``): the checkout's own when the
    package runs from one, else the installed copy."""
    if name not in ("data", "notebooks", "experiments"):
        raise ValueError(f"no embedded folder named {name!r}")
    checkout = _CHECKOUT / name
    if (_CHECKOUT / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return _PACKAGE / "_embedded" / name


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """A one-line hint for an optional dependency that is not installed, or None for any other module."""
    top = (error.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return f"this needs the optional dependency {top!r}: pip install 'workbench[{extra}]' (or 'workbench[all]')"
