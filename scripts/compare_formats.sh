#!/usr/bin/env bash
# Replay the open SWE-agent and OpenHands recordings through six strategies and report (README table
# "per source format"). Their sessions are small (peaks of ~13k and ~6k tokens), so each format gets a
# window scaled to it: triggers at 40% of 16,000 (SWE-agent) and of 8,000 (OpenHands) tokens.
# Usage: scripts/compare_formats.sh [CORPUS] [OUT]   (defaults: $WORKBENCH_CORPUS or ../shared/corpus, results/formats)
set -euo pipefail
corpus="${1:-${WORKBENCH_CORPUS:-../shared/corpus}}"
out="${2:-results/formats}"
wb="${WB:-.venv/bin/workbench}"
for spec in "swe-agent 16000 2000 6000 1000 500" "openhands 8000 1000 3000 500 300"; do
  read -r fmt window min_tokens max_tokens init update <<<"$spec"
  trig=(--set "trigger.context_window=$window" --set trigger.pct_of_window=40)
  full=(--set "full_compact.trigger.context_window=$window" --set full_compact.trigger.pct_of_window=40)
  win=(--set "context_window=$window" --set trigger_fraction=0.4 --set keep_fraction=0.2)
  dir="$out/$fmt"
  rm -rf "$dir"
  "$wb" replay "$corpus/$fmt" -s none --out "$dir/none" --json >/dev/null
  "$wb" replay "$corpus/$fmt" -s full-compact "${trig[@]}" --out "$dir/full-compact" --json >/dev/null
  "$wb" replay "$corpus/$fmt" -s sm-compact "${trig[@]}" "${full[@]}" --set "min_tokens=$min_tokens" \
    --set "max_tokens=$max_tokens" --set "minimum_message_tokens_to_init=$init" \
    --set "minimum_tokens_between_update=$update" --out "$dir/sm-compact" --json >/dev/null
  "$wb" replay "$corpus/$fmt" -s observation-masking --set keep_last_turns=3 --out "$dir/observation-masking" --json >/dev/null
  "$wb" replay "$corpus/$fmt" -s recent-window "${win[@]}" --out "$dir/recent-window" --json >/dev/null
  "$wb" replay "$corpus/$fmt" -s truncate-oldest "${win[@]}" --out "$dir/truncate-oldest" --json >/dev/null
  "$wb" report "$dir" --json > "$dir/report.json"
  echo "$fmt: $dir/report.json"
done
