"""memvm as a host hook: one event on stdin, the host's answer on stdout.

Imports the engine only (never mcp or the server), so that a hook process starts fast: the host
waits for it on every tool call.
"""
