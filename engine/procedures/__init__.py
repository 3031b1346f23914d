"""Procedural memory: tool outcomes, the errors and the argument changes that fixed them."""
