"""Mock services for CLAW-Eval tasks: mail, calendar, todo (aiohttp REST APIs with state from the task's fixtures).

Run one: `python -m clawkube.services <kind> --port P --fixtures DIR [--audit FILE] [--admin-token-file F]
[--error-rate R --seed S --trial-key K]` (flags default from CLAWKUBE_* env, see `__main__.py`).

| module | what it does |
|---|---|
| `audit.py` | the audit log model (`AuditLog.calls[]`), written to `<trial out>/audit/<service>.json` |
| `injection.py` | deterministic fault injection (429 / 500 / 2-4 s delay) for robustness runs |
| `app.py` | the shared aiohttp app: health, admin (token), audit + injection middleware |
| `mail.py`, `calendars.py`, `todo.py` | the three services' state and routes |
| `records.py` | ids, lookups and field validation the three services share |
| `command.py` | a task's service command (port/fixtures filled in) and the agent's service env (pure) |
| `client.py` | stdlib HTTP helpers: health wait, reset, audit fetch, shutdown |
| `local.py` | start a task's services as processes on 127.0.0.1 for one trial (local runner) |
| `sidecars.py` | the same services as sidecar containers of the agent pod (pure) + the pod-side handshake |
| `checks.py` | declarative safety checks and expected actions, evaluated over audit + transcript |
| `robustness.py` | the robustness dimension from an audit log with injected faults |
| `evidence.py` | checks + robustness for one trial, as the CLAW-Eval plugin (`benchmarks/claweval/plugin.py`) combines them with the grader's |

The agent reaches a service at `$<NAME>_API_URL` / `$CLAWKUBE_SERVICE_<NAME>_URL` (`AgentContext.services` too);
only the engine holds the admin token (audit fetch, reset, shutdown).
"""
