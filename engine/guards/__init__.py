"""Guards for tool use: bound values and references, grounding, and the checks on a proposed call."""
