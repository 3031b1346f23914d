"""memvm's MCP server: the only package that imports mcp."""
