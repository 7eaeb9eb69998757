"""``python -m workbench.synthetic {measure,write}``: the generator's command line (`workbench.synthetic._main`)."""

from workbench.synthetic import _main

if __name__ == "__main__":
    _main()
