"""Per-trial results (the models result.json, score.json, usage.json hold) and the pure metrics over them;
the run-level views are in clawkube.reporting."""
