"""The package version (also `workbench.__version__`)."""

__version__ = "0.1.0"
