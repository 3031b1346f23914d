"""The command-line flags for search by meaning, shared by the commands that search or embed."""

import argparse
from typing import Any

SEARCH_MODES = ("hybrid", "lexical")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--search",
        choices=SEARCH_MODES,
        default="hybrid",
        help="hybrid: search by words and by meaning (a local sentence encoder); lexical: by words alone",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="DIR",
        help="folder holding the sentence encoder's model.onnx (and tokenizer.json), checked against "
        "memvm's pinned digests (default: $MEMVM_EMBEDDING_MODEL, else the installed model)",
    )


def search_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The engine settings the flags give (EngineConfig's fields)."""
    return {"semantic_search": args.search != "lexical", "embedding_model": args.embedding_model}
