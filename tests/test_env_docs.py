"""docs/environment.md is the one table of every environment variable the project reads (or sets for the
processes it starts): checked against the operator's settings model and against the code itself.

- every `Settings` field has its `CLAWKUBE_<FIELD>` row, with the model's default;
- every environment variable the code reads or names is in the table: Python string constants that are a whole
  `CLAWKUBE_*` name (f-strings `CLAWKUBE_X_{..}_Y` as a `<NAME>` pattern), `os.environ[...]` / `os.environ.get(...)` /
  `os.getenv(...)` / `"X" in os.environ` of any name, `*_ENV = "X"` constants, each harness's `credential_env`, and in
  shell scripts `${NAME:-...}`-style reads and every `$CLAWKUBE_*`;
- every row of the table is still read somewhere (no stale rows).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from clawkube.settings import ENV_PREFIX, Settings

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "environment.md"
SCANNED = ("operator", "tests", "tools", "bench", "images", ".ci", "charts")
# set by the system or the shell, not configuration
# read by a library, not by clawkube's own code (boto3): documented, but the scanner cannot see the read
LIBRARY = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
STANDARD = {"PATH", "HOME", "PWD", "TMPDIR", "USER", "SECONDS", "HOSTNAME", "VERSION_CODENAME", "IFS", "PYTHONPATH", "LANG"}
NAME = re.compile(r"(?<![A-Za-z0-9_])CLAWKUBE_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::?[-?+=])")
ROW = re.compile(r"^\|\s*`([A-Z][A-Z0-9_<>]*)`")


def doc_rows() -> dict[str, str]:
    """{variable or pattern: its table row} from docs/environment.md."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} has two rows in {DOC}"
            rows[m.group(1)] = line
    return rows


def _matches(name: str, documented: str) -> bool:
    if "<" not in documented or name == documented:
        return name == documented
    return re.fullmatch(re.sub(r"<[A-Z_]+>", "[A-Z0-9_]+", documented), name) is not None


def _environ(node: ast.AST) -> bool:
    """`os.environ` (a WSGI handler's `environ` argument is not the process environment)."""
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def python_names(source: str, constants: bool = True) -> set[str]:
    """Environment variable names a Python module reads or names (see the module docstring); `constants`: also
    every string constant that is a whole CLAWKUBE_* name (the package's own modules: names it sets for others)."""
    found: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a deliberately malformed sample (tests/data)
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
            if constants:
                found.add(node.value)
        elif constants and isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            parts = ["<NAME>" if isinstance(v, ast.FormattedValue) else str(v.value) for v in node.values]
            text = "".join(parts)
            if re.fullmatch(r"CLAWKUBE_[A-Z0-9_<>]+", text):
                found.add(text)
        elif isinstance(node, ast.Subscript) and _environ(node.value) and isinstance(node.slice, ast.Constant):
            if isinstance(node.ctx, ast.Load):
                found.add(node.slice.value)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "get" and _environ(f.value)) or \
                    (isinstance(f, ast.Attribute) and f.attr == "getenv") or (isinstance(f, ast.Name) and f.id == "getenv"):
                found.add(node.args[0].value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(_environ(c) for c in node.comparators):
            found.add(node.left.value)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.upper().endswith("_ENV")
                                                  for t in node.targets):  # X_ENV = "NAME" / ("A", "B") / {k: "C"}
            found.update(c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", c.value))
    return {n for n in found if isinstance(n, str) and n != ENV_PREFIX.rstrip("_")}


def shell_names(text: str) -> set[str]:
    """`${NAME:-...}` reads of names the script did not assign before, and every CLAWKUBE_* it mentions."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    body = "\n".join(lines)
    found = set(NAME.findall(body))
    for m in SHELL_READ.finditer(body):
        assigned = re.search(rf"(^|[\s;(])(local\s+|export\s+)?{m.group(1)}=", body[:m.start()], re.M)
        if assigned is None:
            found.add(m.group(1))
    return found


def code_names() -> dict[str, set[str]]:
    """{name: files reading or naming it} over the scanned folders."""
    out: dict[str, set[str]] = {}
    for top in SCANNED:
        for f in sorted((REPO / top).rglob("*")):
            if not f.is_file() or "__pycache__" in f.parts or f.name == Path(__file__).name:
                continue
            rel = str(f.relative_to(REPO))
            if f.suffix == ".py":
                names = python_names(f.read_text(), constants=top == "operator")
            elif f.suffix == ".sh" or (f.suffix == "" and f.read_bytes()[:2] == b"#!"):
                names = shell_names(f.read_text())
            else:
                continue
            for n in names - STANDARD:
                out.setdefault(n, set()).add(rel)
    from clawkube.agents.registry import get_agent, known_agents

    for name in known_agents():
        for n in getattr(get_agent(name), "credential_env", ()):
            out.setdefault(n, set()).add(f"harness {name} (credential_env)")
    return out


def settings_rows() -> dict[str, str]:
    """{CLAWKUBE_<FIELD>: default as the table shows it} from the settings model."""
    out = {}
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, list):
            shown = ",".join(default)
        elif isinstance(default, dict):
            shown = ",".join(f"{k}={v}" for k, v in default.items())
        elif isinstance(default, bool):
            shown = str(default).lower()
        else:
            shown = "" if default is None else str(default)
        out[ENV_PREFIX + name.upper()] = shown
    return out


def test_every_operator_setting_has_its_row_with_the_models_default():
    rows = doc_rows()
    problems = []
    for var, default in settings_rows().items():
        if var not in rows:
            problems.append(f"{var}: no row")
            continue
        cells = [c.strip() for c in rows[var].strip("|").split("|")]
        shown = cells[2].strip("`") if len(cells) > 2 else None
        if shown != (default or "-").replace("|", "\\|"):
            problems.append(f"{var}: the table's default {shown!r} is not the model's {default or '-'!r}")
    assert not problems, f"{DOC} vs operator/clawkube/settings.py:\n" + "\n".join(problems)


def test_every_variable_the_code_reads_is_documented_and_every_row_is_read():
    rows = doc_rows()
    code = code_names()
    undocumented = {n: sorted(files) for n, files in code.items() if not any(_matches(n, d) for d in rows)}
    assert not undocumented, (f"environment variables read in the code but missing from {DOC}:\n" +
                              "\n".join(f"  {n}: {', '.join(f)}" for n, f in sorted(undocumented.items())))
    settings = set(settings_rows())
    stale = [d for d in rows if d not in settings | LIBRARY and not any(_matches(n, d) for n in code)]
    assert not stale, f"rows of {DOC} for variables nothing reads any more: {stale}"


def test_the_scanner_finds_reads_of_every_kind():
    src = '''
import os
A = os.environ.get("AWS_ENDPOINT_URL")
B = os.environ["CLAWKUBE_X"]
os.environ["WRITTEN_ONLY"] = "1"
C = os.getenv("GETENV_NAME", "d")
if "IN_ENV" in os.environ: pass
SKILLS_ENV = "SOME_DIR"
UPSTREAM_ENV = {"x": "MAPPED_NAME", "y": "lower"}
fixed_env = {"SET_FOR_HARNESS": "1"}
D = f"CLAWKUBE_SERVICE_{n}_URL"
E = "CLAWKUBE_TRIAL"
"""a docstring naming CLAWKUBE_FOO_BAR is not a read"""
'''
    assert python_names(src) == {"AWS_ENDPOINT_URL", "CLAWKUBE_X", "GETENV_NAME", "IN_ENV", "SOME_DIR", "MAPPED_NAME",
                                 "SET_FOR_HARNESS",
                                 "CLAWKUBE_SERVICE_<NAME>_URL", "CLAWKUBE_TRIAL"}
    assert python_names(src, constants=False) == {"AWS_ENDPOINT_URL", "CLAWKUBE_X", "GETENV_NAME", "IN_ENV",
                                                  "SOME_DIR", "MAPPED_NAME", "SET_FOR_HARNESS"}
    sh = ('K=${CLAWKUBE_K8S_BIN:-x}\n# ${COMMENTED:-x}\nW=${WORK:-}\necho "$CLAWKUBE_DEBIAN_MIRROR" $LOCAL\n'
          'MIRROR=$(guess)\nM=${MIRROR:-deb.debian.org}\n')
    assert shell_names(sh) == {"CLAWKUBE_K8S_BIN", "WORK", "CLAWKUBE_DEBIAN_MIRROR"}
    assert _matches("CLAWKUBE_SERVICE_MAIL_URL", "CLAWKUBE_SERVICE_<NAME>_URL")
    assert not _matches("CLAWKUBE_SERVICE_MAIL", "CLAWKUBE_SERVICE_<NAME>_URL")
