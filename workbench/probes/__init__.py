"""Judge probes that score a compaction event (docs/peers.md §2.4, Factory's probe evaluation): recall,
artifact, continuation and decision probes from the records a compaction dropped, answered from its
compacted context and scored 0–1 by a judge, through the Anthropic API (`workbench.online`), under a
hard budget priced before anything is sent (`workbench report --probes`).

* `probe_event` / `generate_probes` / `answer_probes` / `grade` (`workbench.probes.generate`);
* the probe texts (`workbench.probes.text`), their cost (`workbench.probes.cost`), one probe job per
  event (`workbench.probes.job`) and a report's probe run (`workbench.probes.run`).
"""

from __future__ import annotations

from .generate import (
    PROBE_KINDS,
    Answer,
    Grade,
    Probe,
    ProbeSet,
    answer_probes,
    generate_probes,
    grade,
    parse_json_reply,
    probe_event,
)

__all__ = [
    "PROBE_KINDS",
    "Answer",
    "Grade",
    "Probe",
    "ProbeSet",
    "answer_probes",
    "generate_probes",
    "grade",
    "parse_json_reply",
    "probe_event",
]
