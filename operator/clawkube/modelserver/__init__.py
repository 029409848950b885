"""The deterministic scripted model server (`clawkube model-server`): a fake LLM for harness dry runs and tests.

See docs/model-server.md for the script format.
"""
from .script import Match, Reply, Script, ToolCall, UsageSpec, load_script
from .server import LoggedRequest, ModelServer, ServerThread, serve

__all__ = ["Match", "Reply", "Script", "ToolCall", "UsageSpec", "load_script", "LoggedRequest", "ModelServer",
           "ServerThread", "serve"]
