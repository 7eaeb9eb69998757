"""Token counts of records: estimators (`estimators`: chars/4 as Claude Code rounds it, tiktoken, the
API's count_tokens through `workbench.online`), their on-disk cache (`cache`), Claude Code's own context
estimate (`context`), calibration against recorded usage (`calibration`) and counts as a dataset column
(`datasets`). Modules are imported on first use; this package imports nothing itself."""
