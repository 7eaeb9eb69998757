"""Corpus studies built on the request view (`workbench.request`): the naive-cut study of Claude Code's
session-memory keep window (`naive_cut`: every cut point naive, repaired and adjusted; `validate_report`
and `invariants_report`, what `workbench validate` and `workbench invariants` print), computed in
near-linear time (`cuts`, checked against the direct computation in `cuts_oracle` and `reference`)."""
