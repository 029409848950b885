"""The run's model API (`spec.agent.api` + `spec.agent.model`) as one endpoint every adapter maps to its harness.

The base URL an adapter gets is the one the agent process can reach: the lifecycle passes the URL the sandbox
provides for the allowed endpoint (the same URL where the sandbox forwards it unchanged). Adapters never read
the spec themselves.

Base URL conventions: OpenAI-style clients want the URL that ends in the API version (`.../v1`), Anthropic
clients want the URL before `/v1` (they append `/v1/messages`). `baseUrl` may be given either way:
`http://127.0.0.1:8765`, `http://127.0.0.1:8765/v1`, `https://openrouter.ai/api/v1` all work.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel

# The environment variable holding the key inside a cluster's agent pod (from spec.agent.api.apiKeySecret).
POD_KEY_ENV = "CLAWKUBE_MODEL_API_KEY"
# What harnesses get as key when the endpoint needs none (most refuse to start without one).
NO_KEY = "clawkube-no-key"
_VERSION_TAIL = re.compile(r"/v\d+[a-z0-9]*$")


class ModelEndpoint(BaseModel):
    base_url: str
    api_key: Optional[str] = None

    @property
    def key(self) -> str:
        return self.api_key or NO_KEY

    @property
    def openai_base(self) -> str:
        """`.../v1`: for OpenAI Chat Completions / Responses clients."""
        url = self.base_url.rstrip("/")
        return url if _VERSION_TAIL.search(url) else url + "/v1"

    @property
    def anthropic_base(self) -> str:
        """The URL before `/v1`: for Anthropic clients (they add /v1/messages)."""
        url = self.base_url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @property
    def host_port(self) -> tuple[str, int]:
        u = urlsplit(self.base_url)
        return u.hostname or "", u.port or (443 if u.scheme == "https" else 80)


class ApiError(ValueError):
    """spec.agent.api cannot be used (missing key variable, bad URL)."""


def endpoint_for(api: object, env: Mapping[str, str], base_url: Optional[str] = None) -> Optional[ModelEndpoint]:
    """The endpoint of `spec.agent.api` (a runspec.ModelApi or None), its key read from `env`.

    Locally the key is in the variable `apiKeyEnv`; in a cluster pod the Secret is mounted as POD_KEY_ENV.
    `base_url` overrides the spec's URL (the address the sandbox forwards the endpoint to)."""
    if api is None or not getattr(api, "base_url", None):
        return None
    url = base_url or api.base_url
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ApiError(f"spec.agent.api.baseUrl {url!r}: expected http(s)://host[:port][/path]")
    key_env = getattr(api, "api_key_env", None)
    key = env.get(key_env) if key_env else None
    if key_env and not key and not env.get(POD_KEY_ENV):
        raise ApiError(f"spec.agent.api.apiKeyEnv: the environment variable {key_env} is not set")
    return ModelEndpoint(base_url=url, api_key=key or env.get(POD_KEY_ENV) or None)


# The endpoint travels from the runner (or the pod's spec) to the agent phase as two variables of the trial env;
# the sandbox may rewrite BASE_URL_ENV to the address it forwards the endpoint to, before the agent context is
# built. `agent_context` takes them out of the agent's env and hands them to the adapter as `ctx.api`.
BASE_URL_ENV = "CLAWKUBE_MODEL_BASE_URL"
KEY_ENV = POD_KEY_ENV
MODEL_ENV = (BASE_URL_ENV, KEY_ENV)


def model_env(api: object, env: Mapping[str, str]) -> dict[str, str]:
    """The trial-env variables carrying spec.agent.api (empty when it is unset)."""
    ep = endpoint_for(api, env)
    if ep is None:
        return {}
    return {BASE_URL_ENV: ep.base_url, **({KEY_ENV: ep.api_key} if ep.api_key else {})}


def split_env(env: Mapping[str, str]) -> tuple[Optional[ModelEndpoint], dict[str, str]]:
    """(the endpoint carried in `env`, `env` without those variables)."""
    rest = {k: v for k, v in env.items() if k not in MODEL_ENV}
    if not env.get(BASE_URL_ENV):
        return None, rest
    return ModelEndpoint(base_url=env[BASE_URL_ENV], api_key=env.get(KEY_ENV) or None), rest
