"""The `cake` command line (verify, analyze, compile, lower, fmt) and the in-process steps it shares with the MCP server."""
