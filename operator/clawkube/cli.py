"""`clawkube` command line: run, validate, report (local); pod agent|grade (inside cluster pods); operator;
model-server (a scripted model for dry runs and tests)."""
from __future__ import annotations

import argparse
import errno
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import yaml
from pydantic import ValidationError

from . import safeyaml

EXIT_OK, EXIT_TRIAL_FAILURES, EXIT_USAGE = 0, 3, 2


def _die(msg: str, code: int = EXIT_USAGE) -> int:
    print(f"clawkube: error: {msg}", file=sys.stderr)
    return code


def _kv(items: list[str]) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise ValueError(f"--arg {it!r}: expected KEY=VALUE")
        k, v = it.split("=", 1)
        out[k] = safeyaml.load(v)
    return out


def _read_limited(path: Path) -> str:
    size = path.stat().st_size
    if size > safeyaml.MAX_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {safeyaml.MAX_BYTES} a run file may have")
    return path.read_text()


def local_path(value: str) -> str:
    """A path argument, made absolute against the working directory once, here at the CLI edge: everything
    behind the CLI (runner, graders in other working directories, pods' subprocesses) sees absolute paths."""
    return str(Path(value).expanduser().resolve())


def path_or_url(value: str) -> str:
    """A local path (made absolute) or a URL such as s3://bucket/prefix (kept as given)."""
    return value if "://" in value else local_path(value)


def _modes(args: argparse.Namespace) -> Optional[list[str]]:
    """--mode all | MODE | MODE,MODE... as a list of modes (None when not given)."""
    from .local.runner import parse_modes

    return parse_modes(args.mode) if getattr(args, "mode", None) else None




def build_spec(args: argparse.Namespace):
    """A BenchmarkRunSpec from run.yaml (bare spec or BenchmarkRun manifest) with CLI flags on top."""
    from .runspec import BenchmarkRunSpec, RunFile

    data: dict = {}
    if args.run_file:
        raw = safeyaml.load(_read_limited(Path(args.run_file))) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"{args.run_file}: expected a mapping")
        data = RunFile.model_validate(raw).spec.model_dump(by_alias=True, exclude_none=True) if "spec" in raw else raw
    overrides = {
        ("tasks", "path"): args.tasks, ("agent", "harness"): args.agent, ("agent", "model"): args.model,
        ("trials",): args.trials, ("parallelism",): args.parallel, ("timeoutSeconds",): args.timeout,
        ("errorInjectionRate",): args.error_injection_rate, ("seed",): args.seed,
        ("selector", "ids"): args.ids, ("selector", "categories"): args.category, ("selector", "tags"): args.tag,
        ("budgets", "maxCostUsd"): args.max_cost, ("budgets", "maxTokens"): args.max_tokens,
        ("agent", "api", "baseUrl"): getattr(args, "api_base_url", None),
        ("agent", "api", "apiKeyEnv"): getattr(args, "api_key_env", None),
    }
    for path, value in overrides.items():
        if value is None or value == []:
            continue
        node = data
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = value
    modes = _modes(args)
    if modes:  # --mode wins over run.yaml's mode/modes
        data["mode"], data["modes"] = modes[0], modes if len(modes) > 1 else []
    agent_args = _kv(args.arg or [])
    if args.command:
        agent_args["commands"] = args.command
    if agent_args:
        data.setdefault("agent", {}).setdefault("args", {}).update(agent_args)
    data.setdefault("tasks", {})
    if not data["tasks"]:
        raise ValueError("no tasks: give --tasks DIR or tasks.path in run.yaml")
    spec = BenchmarkRunSpec.model_validate(data)
    if args.run_file and spec.tasks.path and not args.tasks:  # run.yaml's paths are relative to run.yaml
        spec.tasks.path = local_path(str(Path(args.run_file).parent / spec.tasks.path))
    return spec


def cmd_run(args: argparse.Namespace) -> int:
    from .local.runner import LocalRunner, RunError
    from .reporting.report import render

    try:
        spec = build_spec(args)
    except (ValueError, ValidationError, OSError, yaml.YAMLError) as e:
        return _die(str(e))
    if args.grader_timeout is not None and not args.grader_timeout > 0:
        return _die(f"--grader-timeout {args.grader_timeout:g}: must be above 0 seconds")
    out = Path(args.out)
    try:
        runner = LocalRunner(spec, out, sandbox_mode=args.sandbox, fresh=args.fresh,
                             progress=None if args.quiet else sys.stderr, grader_timeout=args.grader_timeout)
        if runner.mode == "none":
            print("clawkube: warning: sandbox backend 'none': agents and graders run on this machine without the "
                  "firewall (bwrap needs root and bubblewrap); results record firewall=none", file=sys.stderr)
        outcome = runner.run()
    except RunError as e:
        return _die(str(e))
    for err in outcome.task_errors:
        what = "task unavailable here" if err.get("unavailable") else "task error"
        print(f"clawkube: {what}: {err['path']}: field '{err['field']}': {err['problem']}", file=sys.stderr)
    print(render(outcome.summary))
    if outcome.skipped_budget:
        print(f"budget reached: {outcome.skipped_budget} trial(s) not started")
    shown = os.path.relpath(out) if out.is_relative_to(Path.cwd()) else str(out)  # as the user would type it
    print(f"results: {shown}/summary.json, {shown}/trials/")
    failed = sum(r.score is None for r in outcome.results)
    malformed = [e for e in outcome.task_errors if not e.get("unavailable")]  # unavailable: listed, not a failure
    return EXIT_TRIAL_FAILURES if failed or malformed else EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from .benchmarks.loader import load_tasks
    from .benchmarks.registry import missing_requirements
    from .local.validate import check_oracle_nop

    report = load_tasks(Path(args.path))
    problems = 0
    malformed = [e for e in report.errors if not e.unavailable]
    for e in report.errors:
        if e.unavailable:  # well-formed, but a file it names is not on this machine: listed, not a problem
            print(f"UNAVAIL  {e.path}: field '{e.field}': {e.problem}")
            continue
        print(f"INVALID  {e.path}: field '{e.field}': {e.problem}")
        problems += 1
    for s in report.skipped:
        print(f"skipped  {s.path}: {s.reason}")
    for t in report.tasks:
        print(f"ok       {t.id:<32} {t.format:<14} {t.category}")
        for w in t.load_warnings:
            print(f"  warning: {w}")
        if t.setup_error:
            print(f"  cannot run here: {t.setup_error}")
    for line in missing_requirements(sorted({t.format for t in report.tasks})):
        print(f"PROBLEM  {line}")
        problems += 1
    ready = [t for t in report.tasks if not t.setup_error]
    if not args.no_run and ready:
        with tempfile.TemporaryDirectory(prefix="clawkube-validate-") as tmp:
            for line, ok in check_oracle_nop(Path(args.path), ready, Path(tmp), args.sandbox):
                print(line)
                problems += not ok
    not_ready = len(report.tasks) - len(ready)
    unavailable = len(report.errors) - len(malformed)
    print(f"{len(report.tasks)} task(s) loaded, {len(malformed)} malformed, "
          + (f"{unavailable} unavailable (a file it names is missing, see UNAVAIL), " if unavailable else "")
          + f"{len(report.skipped)} template(s) skipped, {not_ready} cannot run here (see 'cannot run here'), "
          f"{problems} problem(s)")
    return 1 if problems else 0


def cmd_report(args: argparse.Namespace) -> int:
    from .local.trial import load_result
    from .reporting.report import render
    from .reporting.summary import summarize

    out = Path(args.results)
    run_file = out / "run.json"
    if not run_file.exists():
        return _die(f"{out} holds no run.json: not a clawkube results folder")
    run = json.loads(run_file.read_text())
    results = [r for f in sorted((out / "trials").glob("*/*")) if (r := load_result(f)) is not None]
    summary = summarize(results, run["spec"]["trials"], planned_tasks=run["tasks"])
    print(summary.model_dump_json(indent=1) if args.json else render(summary))
    return 0


def cmd_pod(args: argparse.Namespace) -> int:
    from . import pod

    if args.pod_phase == "warmup":
        from .lifecycle import warmup_sidecar

        port = {"relay_port": args.relay_port} if args.relay_port is not None else {}
        return warmup_sidecar.serve(Path(args.bundle), Path(args.control), **port)
    return pod.main_agent(args) if args.pod_phase == "agent" else pod.main_grade(args)


def cmd_operator(args: argparse.Namespace) -> int:
    from .k8s.operator import main as operator_main
    from .settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as e:
        return _die(str(e))
    operator_main(settings)
    return 0


def cmd_model_server(args: argparse.Namespace) -> int:
    from .modelserver import load_script, serve

    try:
        script = load_script(args.script)
    except (OSError, ValueError, ValidationError, yaml.YAMLError) as e:
        return _die(f"{args.script}: {e}")
    try:
        serve(script, args.host, args.port, Path(args.log) if args.log else None,
              Path(args.port_file) if args.port_file else None)
    except OSError as e:  # the port is taken, the host is not this machine's, the log cannot be written
        where = f"{args.host}:{args.port}"
        return _die(f"model server on {where}: {e.strerror or e}"
                    + (" (another process listens there: pick another --port, or 0 for a free one)"
                       if e.errno == errno.EADDRINUSE else ""))
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_harness_install(args: argparse.Namespace) -> int:
    from .agents import install

    names = args.names or list(install.PACKAGES)
    unknown = [n for n in names if n not in install.PACKAGES]
    if unknown:
        return _die(f"unknown harness {', '.join(unknown)} (known: {', '.join(install.PACKAGES)})")
    home = Path(args.home) if args.home else install.harness_home()
    failed = 0
    for name in names:
        try:
            print(install.install(name, home), flush=True)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"clawkube: error: {name}: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .agents import doctor, install

    unknown = [n for n in args.names if n not in install.PACKAGES]
    if unknown:
        return _die(f"unknown harness {', '.join(unknown)} (known: {', '.join(install.PACKAGES)})")
    rep = doctor.diagnose(args.names or None, Path(args.home) if args.home else None)
    print(rep.model_dump_json(indent=1) if args.json else doctor.render(rep))
    return 0 if rep.ok else 1


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="clawkube", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run a benchmark on this machine")
    r.add_argument("run_file", nargs="?", type=local_path, help="run.yaml: a BenchmarkRun manifest or its bare spec")
    r.add_argument("--tasks", type=local_path, help="folder of task files (any of the three formats)")
    r.add_argument("--agent", help="harness: oracle, nop, script, openclaw, claude-code, codex, hermes, nanobot")
    r.add_argument("--model")
    r.add_argument("--api-base-url", help="the model API the harness talks to (spec.agent.api.baseUrl), e.g. "
                                          "http://127.0.0.1:8765 for `clawkube model-server`")
    r.add_argument("--api-key-env", help="environment variable holding that API's key (spec.agent.api.apiKeyEnv)")
    r.add_argument("--trials", type=int)
    r.add_argument("--parallel", type=int)
    r.add_argument("--timeout", type=int, help="override every task's agent time budget (s)")
    r.add_argument("--mode", help="EvoClawBench mode: baseline, preskill, postskill; several comma-separated, or all "
                                  "(each mode runs every trial; the summary compares them with baseline)")
    r.add_argument("--seed", type=int, help="run seed (fault injection)")
    r.add_argument("--error-injection-rate", type=float)
    r.add_argument("--ids", nargs="*", default=[])
    r.add_argument("--category", nargs="*", default=[])
    r.add_argument("--tag", nargs="*", default=[])
    r.add_argument("--max-cost", type=float)
    r.add_argument("--max-tokens", type=int)
    r.add_argument("--arg", action="append", help="agent adapter option KEY=VALUE (repeatable)")
    r.add_argument("--command", action="append", help="a shell command for the script agent (repeatable)")
    r.add_argument("--grader-timeout", type=float, help="override every task's grader time limit (s)")
    r.add_argument("--out", type=local_path, default="results")
    r.add_argument("--sandbox", default="auto", help="execution backend: auto (bwrap when available, else none), "
                   "bwrap, none, or a registered backend")
    r.add_argument("--fresh", action="store_true", help="discard results already in --out")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--claw-eval", type=local_path, metavar="CHECKOUT",
                   help="a checkout of claw-eval/claw-eval: the code CLAW-Eval tasks run with "
                        "(default: the checkout the tasks are in; $CLAWKUBE_CLAWEVAL_CHECKOUT)")
    r.set_defaults(fn=cmd_run)

    v = sub.add_parser("validate", help="parse and check every task; oracle must pass, nop must fail")
    v.add_argument("path", type=local_path)
    v.add_argument("--no-run", action="store_true", help="only parse, do not run oracle/nop")
    v.add_argument("--sandbox", default="auto", help="execution backend (as for run)")
    v.add_argument("--claw-eval", type=local_path, metavar="CHECKOUT", help="a checkout of claw-eval/claw-eval")
    v.set_defaults(fn=cmd_validate)

    rep = sub.add_parser("report", help="summarise a results folder")
    rep.add_argument("results", type=local_path)
    rep.add_argument("--json", action="store_true")
    rep.set_defaults(fn=cmd_report)

    pod = sub.add_parser("pod", help="the phases run inside cluster pods")
    podsub = pod.add_subparsers(dest="pod_phase", required=True)
    pa = podsub.add_parser("agent", help="setup -> agent -> capture, in the agent pod")
    pa.add_argument("--bundle", required=True, type=local_path, help="folder holding the extracted agent bundle or bundle.tar.gz")
    pa.add_argument("--workspace", required=True, type=local_path,
                    help="the workspace folder (the pod mounts it at the benchmark's mount point)")
    pa.add_argument("--scratch", type=local_path,
                    help="the pod's own folder for the agent's HOME and skills (default: the workspace's parent)")
    pa.add_argument("--out", required=True, type=local_path)
    pa.add_argument("--harness")
    pa.add_argument("--model")
    pa.add_argument("--args-json", default="{}", help="adapter options as JSON")
    pa.add_argument("--timeout", type=int)
    pa.add_argument("--stage", default="execution", choices=["execution", "authoring", "first_run", "summary"],
                    help="EvoClawBench stage: a PreSkill/PostSkill skill-writing phase or first run "
                         "(default: execution)")
    pg = podsub.add_parser("grade", help="firewall -> grade, in the grading pod")
    pg.add_argument("--grading", required=True, type=local_path, help="folder holding the extracted grading bundle or bundle.tar.gz")
    pg.add_argument("--agent-artifacts", required=True, type=path_or_url, help="s3://... prefix or a local folder")
    pg.add_argument("--out", required=True, type=local_path)
    pg.add_argument("--workspace", type=local_path, help="an empty folder to grade the workspace in (the pod mounts "
                                                         "it at the benchmark's mount point)")
    for sp in (pa, pg):
        sp.add_argument("--termination-log", type=local_path, default="/dev/termination-log")
    pw = podsub.add_parser("warmup", help="the task's warmup as root, in the agent pod's svc-warmup sidecar; then "
                                          "relays the servers it started to the grading pod")
    pw.add_argument("--bundle", required=True, type=local_path, help="folder holding the extracted agent bundle")
    pw.add_argument("--control", required=True, type=local_path, help="holds request/ and status/ (contracts/warmup.py)")
    pw.add_argument("--relay-port", type=int, help="the port the relay serves on (default: execution/relay.py RELAY_PORT)")
    pod.set_defaults(fn=cmd_pod)

    ms = sub.add_parser("model-server", help="a deterministic scripted model (OpenAI Chat/Responses, Anthropic "
                                             "Messages) for dry runs and tests (docs/model-server.md)")
    ms.add_argument("--script", required=True, help="YAML or JSON script: what the model answers")
    ms.add_argument("--host", default="127.0.0.1")
    ms.add_argument("--port", type=int, default=8765, help="0 picks a free port (see --port-file)")
    ms.add_argument("--log", help="append one JSON line per request to this file")
    ms.add_argument("--port-file", help="write the bound port here once listening")
    ms.set_defaults(fn=cmd_model_server)

    hs = sub.add_parser("harness", help="the real agent harnesses (claude-code, codex, openclaw, hermes, nanobot)")
    hsub = hs.add_subparsers(dest="harness_cmd", required=True)
    hi = hsub.add_parser("install", help="install the tested version of each harness from npm / PyPI (idempotent)")
    hi.add_argument("names", nargs="*", help="harnesses to install (default: all five)")
    hi.add_argument("--home", help="install folder (default: $CLAWKUBE_HARNESS_HOME, else /opt/clawkube/harnesses "
                                   "as root, else ~/.local/share/clawkube/harnesses)")
    hi.set_defaults(fn=cmd_harness_install)

    dr = sub.add_parser("doctor", help="which harnesses are installed, their versions vs the tested ranges, whether "
                                       "the sandbox user can run them, Node for OpenClaw, the sandbox backend")
    dr.add_argument("names", nargs="*", help="harnesses to check (default: all five)")
    dr.add_argument("--home", help="harness home to check (default as for `harness install`)")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(fn=cmd_doctor)

    op = sub.add_parser("operator", help="run the Kubernetes operator (settings from CLAWKUBE_* env)")
    op.set_defaults(fn=cmd_operator)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    from .benchmarks.registry import BrokenPlugin

    args = parser().parse_args(argv)
    if getattr(args, "claw_eval", None):  # read where CLAW-Eval tasks load and run (benchmarks/claweval/checkout.py)
        os.environ["CLAWKUBE_CLAWEVAL_CHECKOUT"] = str(args.claw_eval)
    try:
        return args.fn(args)
    except BrokenPlugin as e:
        return _die(str(e))


if __name__ == "__main__":
    sys.exit(main())
