"""Small utilities every layer may use: the package version (`version`), an ordered process pool (`pool`),
the cache folder (`cache`) and value classes (`value`)."""
