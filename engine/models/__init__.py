"""The engine's vocabulary, one module per capability: closed sets as enums, results as pydantic
models. These models are also the wire format: the tools' output schemas are generated from them,
and tests/server/snapshots/listing.json holds what clients receive.

pages        the page: its type, role, modality, levels and token counts; what a writer hands in
recall       search hits and results, standing notes, a session's transcript
writes       what remember, ingest, pin and forget take and return
working_set  mappings, the rendered working set, faults and evictions, the manifest, the mutation log
sessions     a session's turn and faults
guards       bound values, grounding, the checks on a proposed call
procedures   tool outcomes, fixes, hints and guidance
hosts        the host hook events handled before

Import a name from the module that owns it; this package re-exports nothing.
"""
