"""Metrics over replay results: savings, validity, fidelity, cost (one tidy DataFrame per family).

Every frame has one row per ``session_id × strategy × config_hash`` (× ``step`` or × ``event``). The
definitions, each with a worked example, are in the module docstrings: `workbench.metrics.savings`,
`workbench.metrics.validity`, `workbench.metrics.fidelity`, `workbench.metrics.cost` (with
`workbench.metrics.memory_cost`, session memory's extractions), `workbench.metrics.recovery` (measured after
recorded compactions), `workbench.metrics.expected_recovery` (per strategy), and
`workbench.metrics.uncertainty` (bootstrap intervals over sessions, paired differences).
"""

from ._common import KEYS, config_hash
from .cost import calibrate_cost, cost_sessions, cost_steps, load_pricing, price_for, simulate_cache
from .expected_recovery import expected_recovery, expected_recovery_events, expected_recovery_sessions
from .fidelity import (
    Fact,
    FactIndex,
    extract_facts,
    fidelity,
    fidelity_events,
    fidelity_sessions,
    reference_fidelity,
    section_coverage,
)
from .recovery import recovery
from .savings import BLOCKING_LIMIT, WINDOW, savings_events, savings_sessions, savings_steps
from .uncertainty import bootstrap_intervals, paired_differences
from .validity import validity_events, validity_rules, validity_sessions, validity_steps

__all__ = [
    "BLOCKING_LIMIT",
    "KEYS",
    "WINDOW",
    "Fact",
    "FactIndex",
    "bootstrap_intervals",
    "calibrate_cost",
    "config_hash",
    "cost_sessions",
    "cost_steps",
    "expected_recovery",
    "expected_recovery_events",
    "expected_recovery_sessions",
    "extract_facts",
    "fidelity",
    "fidelity_events",
    "fidelity_sessions",
    "load_pricing",
    "paired_differences",
    "price_for",
    "recovery",
    "reference_fidelity",
    "savings_events",
    "savings_sessions",
    "savings_steps",
    "section_coverage",
    "simulate_cache",
    "validity_events",
    "validity_rules",
    "validity_sessions",
    "validity_steps",
]
