"""Read-only views over the engine: the manifest, the packed working set, the developer message
and the rules. Plain functions from engine state to text; never imports mcp."""
