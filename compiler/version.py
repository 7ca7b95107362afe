"""CAKE's version, in one place: the wheel's metadata, `cake --version` and the MCP server read it."""

VERSION = "0.1.0"
