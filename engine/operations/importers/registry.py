"""Every format `memvm import` reads, by its `--format` name, and the module whose FORMAT reads it
(importers/source_format.py): the one list a new format joins. It imports nothing, so that the
command line can offer the names without loading the engine; formats.py loads the modules."""

# In the order their first bytes are tried: the first that recognises a source names it.
FORMAT_MODULES: dict[str, str] = {
    "markdown": "memvm.engine.operations.importers.markdown_notes",
    "jsonl": "memvm.engine.operations.importers.memvm_export",
    "server-memory": "memvm.engine.operations.importers.server_memory",
    "chatgpt": "memvm.engine.operations.importers.chatgpt",
    "claude": "memvm.engine.operations.importers.claude",
}
# memvm's own export: read by operations/transfer.py into an empty database, not by an importer.
MEMVM_EXPORT_NAME = "jsonl"
