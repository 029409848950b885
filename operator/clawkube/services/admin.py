"""The admin endpoints every mock service serves (services/app.py) and the engine calls (services/client.py): one
place for the paths and the token header, importable without the web framework."""
from __future__ import annotations

HEALTH_PATH = "/health"
ADMIN_PREFIX = "/_admin/"
AUDIT_PATH = "/_admin/audit"
RESET_PATH = "/_admin/reset"
SHUTDOWN_PATH = "/_admin/shutdown"
TOKEN_HEADER = "X-Clawkube-Admin-Token"
