"""Where the tests find the real benchmarks: their data, and (optionally) a checkout of their code.

- Data (task specs, fixtures) of the three published repositories: `../shared/benchmarks/` beside the repo,
  or `$CLAWKUBE_BENCHMARKS_DATA`. Never copied into this repo.
- Code (graders, runners, the `claw_eval` package, mock services) is not in that data: tests that need it
  run against a local checkout named by `$CLAWKUBE_UPSTREAM_<NAME>` and skip with the reason otherwise.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CLAWKUBE_BENCHMARKS_DATA") or REPO.parent / "shared" / "benchmarks")

WILDCLAW = DATA / "wildclawbench"
CLAW_EVAL = DATA / "claw-eval"
EVOCLAW = DATA / "evoclawbench"

UPSTREAM_ENV = {"wildclawbench": "CLAWKUBE_UPSTREAM_WILDCLAWBENCH", "claw-eval": "CLAWKUBE_UPSTREAM_CLAWEVAL",
                "evoclawbench": "CLAWKUBE_UPSTREAM_EVOCLAWBENCH"}


def data(folder: Path) -> Path:
    """A benchmark's data folder, or skip the test with the reason."""
    if not folder.is_dir():
        pytest.skip(f"benchmark data {folder} not present (set CLAWKUBE_BENCHMARKS_DATA to ../shared/benchmarks)")
    return folder


def upstream(name: str) -> Path:
    """A local checkout of a benchmark's own repository (its code), or skip the test with the reason."""
    var = UPSTREAM_ENV[name]
    value = os.environ.get(var)
    if not value or not Path(value).is_dir():
        pytest.skip(f"needs a checkout of the {name} repository (its code is not in ../shared/benchmarks): "
                    f"set {var}")
    return Path(value)
