"""``python -m workbench.cli``: the command line, as the ``workbench`` script runs it."""

from . import main

main()
