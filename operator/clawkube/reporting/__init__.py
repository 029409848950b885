"""Run-level views over trial results: `summary.py` (`summarize` -> RunSummary, summary.json and the
BenchmarkRun status) and `report.py` (the text tables). Above the benchmark plugins, whose sections they show."""
