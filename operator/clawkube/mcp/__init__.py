"""MCP servers this project gives agents (stdio, JSON-RPC 2.0): a benchmark task's tools, forwarded over HTTP."""
