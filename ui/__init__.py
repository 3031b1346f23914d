"""memvm's browser view: what is stored, what the model's context holds, and curation.

Imports the engine and the renderers only; the server mounts it, never the other way round.
"""
