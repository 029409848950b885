"""EvoClawBench's evaluation modes (run setting `spec.mode` / `spec.modes`), as its paper and runner define them;
used by `lifecycle/trial.py` (local) and `pod.py` (cluster stages).

- baseline:  one execution (prompt: the baseline prefix + the task prompt); no authored skills.
- preskill:  a skill-writing phase in a fresh copy of the task workspace (the authoring prefix; `skill-creator`
             seeded), then a fresh execution with only the skills it wrote (the skill-reuse prefix).
- postskill: a first execution (graded), a summary phase that reads `.evoclawbench/first_run_context.json` (the
             prompt, the first run's grade, output previews, a transcript summary) and writes skills, then a fresh
             second execution with only those skills; the second execution is the trial's score.
Skill reuse executions must leave the skills as they found them (hashes before and after: a skill mutation
violation otherwise).

| module | what it does |
|---|---|
| `protocol.py` | the modes' phases and the prompt prefix of each phase |
| `writing.py` | the skill-writing phases (shared by the local runner and the pods) |
| `first_run.py` / `context.py` | the first-run context, and building it from a first run's artifacts |
| `scan.py` | the skills a phase created, and their quality score |
| `hashing.py` | skill-file hashes before/after reuse and the mutations between them |
| `metrics.py` | the run's three-mode metrics (mean scores, ratios, execution-only vs end-to-end usage) |
| `phase_args.py` | per-phase adapter options (`authoring_commands` / `summary_commands` for scripted agents) |
"""
