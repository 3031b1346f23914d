"""Search by meaning: a local sentence encoder, the vectors it gives each page, and their scoring."""
