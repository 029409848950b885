"""CLAW-Eval's file names and format id: what detecting a task needs, without the task schema (taskyaml.py, pydantic)
that every run would otherwise import while it detects formats."""

NAME = "claw-eval"  # the format id (TaskSpec.format)
TASK_FILE = "task.yaml"
GRADER_FILE = "grader.py"
