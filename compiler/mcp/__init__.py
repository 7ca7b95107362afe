"""The CAKE MCP server: the compiler's steps as tools and its documents as resources, for coding agents (docs/mcp.md)."""
