"""Score parity with each benchmark's own runner: one script for every benchmark.

    python bench/conformance.py wildclawbench [--upstream DIR]
    python bench/conformance.py claw-eval --upstream DIR
    python bench/conformance.py evoclawbench [--upstream DIR]
    python bench/conformance.py all

Each benchmark module (`bench/conformance_<name>.py`) runs scripted agent behaviours (right, partial, none, ...)
through this project and, given a local checkout of the benchmark's repository (`--upstream DIR`), through the
benchmark's own grading path for the same workspace and transcript, and prints one table row per task and
behaviour. Rows must match to 1e-6. Without a checkout it prints this project's scores and says parity was not
checked. Exit code 1 when any row differs.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODULES = {"wildclawbench": "conformance_wildclaw", "claw-eval": "conformance_claweval",
           "evoclawbench": "conformance_evoclaw"}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("benchmark", choices=[*MODULES, "all"])
    ap.add_argument("--upstream", type=Path, help="a checkout of the benchmark's own repository")
    ap.add_argument("--data", type=Path, help="the benchmark's data folder (default ../shared/benchmarks/<name>)")
    args, rest = ap.parse_known_args(argv)
    names = list(MODULES) if args.benchmark == "all" else [args.benchmark]
    rc = 0
    for name in names:
        try:
            mod = importlib.import_module(MODULES[name])
        except ModuleNotFoundError as e:
            print(f"== {name}: no conformance module yet ({e})")
            rc = 1
            continue
        rc |= mod.main(args, rest)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
