"""EvoClawBench evaluation modes (run setting `spec.mode`), used by `local/trial.py`.

- baseline:  one execution; the skills dir holds only what the task itself ships (no authored skills).
- preskill:  an authoring phase writes skills from the task prompt only; a fresh execution then gets only them.
- postskill: a first execution (graded), a summary phase that sees a compact first-run context (prompt, grade
             summary, output previews, transcript summary) and writes skills, then a fresh second execution
             (services reset) that gets only those skills; the second execution is the trial's score.
Authoring/summary phases run the same agent adapter with another prompt in a fresh, sandboxed, empty
workspace (discarded) and a fresh skills dir, which is their only kept output.

| module | what it does |
|---|---|
| `phase_args.py` | per-phase adapter options (`authoring_commands` / `summary_commands` for scripted agents) |
| `prompts.py` | the authoring and summary prompts |
| `context.py` | the compact first-run context the summary phase sees |
| `hashing.py` | skill-file hashes before/after reuse and the mutations between them |
"""
