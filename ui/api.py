"""The view's JSON: what the page's script reads and the curation it asks for.

Every answer is built from engine reads, one namespace (the view's); a failure is one sentence in
`{"error": ...}`, never a traceback, a path or SQL.
"""

import json
from collections.abc import Awaitable, Callable
from typing import Any

from memvm.engine import Engine, view
from memvm.engine.errors import (
    MemvmError,
    PageChanged,
    PageNotFound,
    StorageBusy,
    StorageError,
    StorageReadOnly,
)
from memvm.engine.models.pages import REMEMBERED_TYPES, NewPage, PageType
from memvm.engine.models.recall import SearchScope
from memvm.engine.namespace_view import SESSION_LOGS
from memvm.engine.paging.memory import MAX_TTL_SECONDS, fingerprint
from memvm.engine.storage.open import failure_types
from memvm.resources.context import render_context
from memvm.resources.manifest import render_manifest
from memvm.ui.exports import Download, ExportBusy, Exports, ExportTooLarge
from memvm.ui.security import NAMESPACE_KEY
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

# The session the view reads as when a read needs one (search ranks for a viewer).
VIEWER = "memvm-ui"
# What the view's own edits are recorded as.
PROVENANCE = "memvm ui"
MAX_NOTE_CHARS = 100_000
# The longest expiry a note written here may have: remember's.
MAX_TTL_DAYS = MAX_TTL_SECONDS // 86_400
# The best matches a search shows.
SEARCH_LIMIT = 50
# A request body past this is refused unread: the largest note, JSON-escaped, fits.
MAX_BODY_BYTES = 1_000_000
# SQLite's integers.
_INT_RANGE = range(-(2**63), 2**63)
# The routes that change a page; a GET on one is told so, not taken for a page id.
_CHANGES = ("/pin", "/forget", "/edit")

Handler = Callable[[Request, Engine, str], Awaitable[Any]]


class Refused(Exception):
    """A request the view cannot do, said in one sentence for the page."""


class Conflict(Refused):
    """A change based on what has changed since."""


def routes(engine_of: Callable[[], Engine], exports: Exports) -> list[Route]:
    """The API over the engine `engine_of` gives, for the namespace the request's token is for;
    its downloads run within `exports`' bounds."""

    async def overview(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        memory = engine.view(namespace)
        sessions = await memory.sessions(before=_before(request))
        pages = await memory.page_count()
        return {
            "namespace": namespace,
            "pages": pages,
            # The view's own session (where its pins, edits and forgets are logged) once it acted.
            "viewer": VIEWER,
            "read_only": engine.config.read_only,
            "sessions": [row.model_dump() for row in sessions.rows],
            "next": sessions.next,
        }

    async def pages(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        query = request.query_params
        page_type = _page_type(query.get("type"))
        screen = await engine.view(namespace).pages(
            session=query.get("session") or None,
            page_type=page_type,
            pinned_only=_flag(query.get("pinned"), "pinned"),
            before=_before(request),
            limit=_int(query.get("limit"), "limit") or 50,
        )
        return _listed("pages", screen)

    async def notes(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        return _listed("notes", await engine.view(namespace).notes(before=_before(request)))

    async def conversations(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        return _listed("conversations", await engine.view(namespace).conversations(before=_before(request)))

    async def conversation(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        after = request.query_params.get("after") or None
        screen = await engine.view(namespace).thread(request.path_params["session"], after=after)
        return _listed("messages", screen)

    async def new_note(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        body = await _json(request)
        content = _note_text(body.get("content"))
        key, days = body.get("key"), body.get("expires_in_days")
        if key is not None and (not isinstance(key, str) or not key.strip()):
            raise Refused("A key is a short name for the note, or leave it out.")
        if key is not None and await _exists(engine, namespace, key.strip()):
            raise Refused("A note with that key exists: open it to edit it, or choose another key.")
        ttl = None
        if days is not None:
            if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_TTL_DAYS:
                raise Refused(f"expires_in_days is a whole number of days from 1 to {MAX_TTL_DAYS:,}.")
            ttl = days * 86_400.0
        # Through remember, as a model's note is: redacted, versioned, searchable; seen in every project.
        done = await engine.session(namespace, VIEWER).remember(
            page=NewPage(content=content, type=PageType.NOTE, provenance=PROVENANCE),
            key=key.strip() if key else None,
            ttl_seconds=ttl,
        )
        return {"page_id": done.page_id, "created": done.created}

    async def page(request: Request, engine: Engine, namespace: str) -> Any:
        if request.path_params["page_id"].endswith(_CHANGES):
            return JSONResponse({"error": "This address changes a page: POST to it."}, status_code=405)
        found = await engine.namespace(namespace).get_page(page_id=request.path_params["page_id"])
        levels = dict(zip(("full", "reduced", "abstract", "reference"), found.levels, strict=True))
        return {
            **found.model_dump(mode="json", exclude={"levels", "rowid"}),
            "levels": levels,
            "editable": found.type in REMEMBERED_TYPES and len(levels["full"]) <= MAX_NOTE_CHARS,
            # Quoted back by an edit, so that a note rewritten meanwhile is not overwritten unseen.
            "fingerprint": fingerprint(levels["full"]),
        }

    async def search(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        query = request.query_params
        text = query.get("q", "").strip()
        if not text:
            return {"results": [], "limit": SEARCH_LIMIT}
        # A session filter searches that session's pages (search_pages' scope=session).
        session = query.get("session") or None
        found = await engine.session(namespace, session or VIEWER).search(
            query=text,
            limit=SEARCH_LIMIT,
            page_type=_page_type(query.get("type")),
            scope=SearchScope.SESSION if session else SearchScope.ALL,
            pinned_only=_flag(query.get("pinned"), "pinned"),
        )
        pinned = await engine.view(namespace).pinned_among([hit.page_id for hit in found.results])
        hits = [{**hit.model_dump(mode="json"), "pinned": hit.page_id in pinned} for hit in found.results]
        # Ranked results are not paged: the best ones are shown, and the page says a search can narrow.
        return {"results": hits, "limit": SEARCH_LIMIT}

    async def context(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        session = request.path_params["session"]
        memory = await engine.session(namespace, session).memory_map()
        working = memory.view
        by_level = {str(level): 0 for level in range(4)}
        for entry in working.entries:
            by_level[str(entry.level)] = by_level.get(str(entry.level), 0) + entry.tokens
        return {
            "session": session,
            "turn": working.turn,
            "budget_tokens": working.budget_tokens,
            "reserved_tokens": working.reserved_tokens,
            "page_tokens": working.page_tokens,
            "tokens_by_level": by_level,
            "free_tokens": max(0, working.budget_tokens - working.reserved_tokens - working.page_tokens),
            "entries": [entry.model_dump(mode="json") for entry in working.entries],
            "context": render_context(working),
            "manifest": await render_manifest(engine.session(namespace, session)),
        }

    async def tools(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        screen = await engine.view(namespace).tools(before=_before(request))
        knowledge = await engine.namespace(namespace).procedural_knowledge()
        return {**_listed("tools", screen), "knowledge": knowledge.model_dump(mode="json")}

    async def version(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        return {"version": await engine.view(namespace).version()}

    async def pin(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        body = await _json(request)
        pinned = body.get("pinned")
        if not isinstance(pinned, bool):
            raise Refused('Send {"pinned": true} or {"pinned": false}.')
        # Pinned for the namespace, mapped into no session: every session's manifest lists it first.
        state = await engine.session(namespace, VIEWER).pin_page(
            page_id=request.path_params["page_id"], pinned=pinned, place=False
        )
        return state.model_dump(mode="json")

    async def forget(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        body = await _json(request)
        if body.get("confirm") is not True:
            raise Refused('Forgetting cannot be undone: send {"confirm": true}.')
        done = await engine.session(namespace, VIEWER).forget(page_id=request.path_params["page_id"])
        return done.model_dump(mode="json")

    async def edit(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        body = await _json(request)
        content, was = _note_text(body.get("content")), body.get("was")
        if not isinstance(was, str):
            raise Refused("Send the fingerprint of the text you started from as was.")
        page_id = request.path_params["page_id"]
        found = await engine.namespace(namespace).get_page(page_id=page_id)
        if found.type not in REMEMBERED_TYPES:
            raise Refused("Only remembered notes can be edited; transcripts and tool results are records.")
        new = NewPage(
            content=content,
            type=found.type,
            role=found.role,
            importance=found.importance,
            pinned=found.pinned,
            provenance=PROVENANCE,
            metadata=found.metadata,
        )
        # An edit keeps the note's expiry, where a rewrite by the model without one would end it.
        ttl = None if found.expires_at is None else max(1.0, found.expires_at - engine.clock.now())
        # Called as the view's own session: the page keeps its session, whose activity is its own.
        try:
            await engine.session(namespace, VIEWER).remember(
                page=new, key=page_id, unless_changed_from=was, ttl_seconds=ttl
            )
        except PageChanged as exc:
            raise Conflict(
                "This note changed since you opened it; your text is still in the box. Copy it, "
                "reopen the note, and apply your change to the new text."
            ) from exc
        return {"page_id": page_id, "edited": True}

    async def export(request: Request, engine: Engine, namespace: str) -> Response:
        # Counted from here until the download ends (see exports): refused at once when too many run.
        spool = exports.start(namespace)
        try:
            # Expired is gone for every read, a download included: what waits to be deleted goes first.
            await engine.collect_expired(purge=False)  # rows are read, never the index's segments
            async with exports.reading():
                await engine.view(namespace).export(spool.write)
            await spool.rewind()
        except BaseException:
            spool.release()
            raise
        return Download(spool, f"memvm-{namespace}.jsonl", exports.limits.stall_s)

    table: list[tuple[str, Handler, list[str]]] = [
        ("/api/overview", overview, ["GET"]),
        ("/api/pages", pages, ["GET"]),
        ("/api/notes", notes, ["GET"]),
        ("/api/notes", new_note, ["POST"]),
        ("/api/conversations", conversations, ["GET"]),
        ("/api/conversations/{session}", conversation, ["GET"]),
        ("/api/pages/{page_id:path}/pin", pin, ["POST"]),
        ("/api/pages/{page_id:path}/forget", forget, ["POST"]),
        ("/api/pages/{page_id:path}/edit", edit, ["POST"]),
        ("/api/pages/{page_id:path}", page, ["GET"]),
        ("/api/search", search, ["GET"]),
        ("/api/sessions/{session}/context", context, ["GET"]),
        *((f"/api/sessions/{{session}}/{log}", _session_list(log), ["GET"]) for log in SESSION_LOGS),
        ("/api/tools", tools, ["GET"]),
        ("/api/version", version, ["GET"]),
        ("/api/export", export, ["GET"]),
    ]
    return [Route(path, _answering(handler, engine_of), methods=methods) for path, handler, methods in table]


def _session_list(log: str) -> Handler:
    """The handler for one of a session's logs (mutations, bindings, verdicts), a screen at a time."""

    async def handler(request: Request, engine: Engine, namespace: str) -> dict[str, Any]:
        memory = engine.view(namespace)
        screen = await memory.session_log(log, request.path_params["session"], before=_before(request))
        return _listed(log, screen)

    return handler


def _answering(handler: Handler, engine_of: Callable[[], Engine]) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request, engine_of(), request.scope[NAMESPACE_KEY])
        except PageNotFound:
            return JSONResponse({"error": "No such page: it may have been forgotten."}, status_code=404)
        except Conflict as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        except ExportBusy as exc:
            return JSONResponse({"error": str(exc)}, status_code=429)
        except ExportTooLarge as exc:
            return JSONResponse({"error": str(exc)}, status_code=507)
        except Refused as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        # The engine's storage messages are written for a model; a person gets their own.
        except StorageReadOnly:
            return JSONResponse(
                {"error": "The view was started with --read-only: nothing can be changed here."},
                status_code=403,
            )
        except StorageBusy:
            return JSONResponse(
                {"error": "Another process is writing to the database; try again in a moment."},
                status_code=503,
            )
        except StorageError:
            return _storage_failed()
        except failure_types():  # the database itself said no, in its driver's words
            return _storage_failed()
        except MemvmError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        # Anything else (a row written by other means that breaks the rules) is said, not shown.
        except Exception:
            return JSONResponse(
                {"error": "The view could not read this; memvm doctor checks the database."}, status_code=500
            )
        return result if isinstance(result, Response) else JSONResponse(result)

    return endpoint


def _storage_failed() -> JSONResponse:
    return JSONResponse({"error": "The database could not do this; memvm doctor checks it."}, status_code=503)


async def _json(request: Request) -> dict[str, Any]:
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise Refused(f"Send at most {MAX_BODY_BYTES} bytes.")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Refused("Send a JSON object.") from exc
    if not isinstance(body, dict):
        raise Refused("Send a JSON object.")
    return body


async def _exists(engine: Engine, namespace: str, page_id: str) -> bool:
    try:
        await engine.namespace(namespace).get_page(page_id=page_id)
    except PageNotFound:
        return False
    return True


def _note_text(content: Any) -> str:
    if not isinstance(content, str) or not content.strip():
        raise Refused("The note cannot be empty; to remove it, forget it.")
    if len(content) > MAX_NOTE_CHARS:
        raise Refused(f"A note written here holds at most {MAX_NOTE_CHARS:,} characters.")
    return content


def _before(request: Request) -> str | None:
    """Where the screen starts: the `next` the previous screen gave, or the top."""
    return request.query_params.get("before") or None


def _listed(name: str, screen: view.Screen[Any]) -> dict[str, Any]:
    return {name: [row.model_dump() for row in screen.rows], "next": screen.next}


def _int(raw: str | None, name: str) -> int | None:
    if raw is None or raw == "":
        return None
    # ASCII digits only: int() would also take "１", "٣", "1_000" and spaces.
    if not raw.isascii() or not raw.lstrip("-").isdigit():
        raise Refused(f"{name} must be a whole number.")
    value = int(raw)
    if value not in _INT_RANGE:
        raise Refused(f"{name} is out of range.")
    return value


def _flag(raw: str | None, name: str) -> bool:
    if raw in (None, "", "0"):
        return False
    if raw == "1":
        return True
    raise Refused(f"{name} is 1 or 0.")


def _page_type(raw: str | None) -> PageType | None:
    if not raw:
        return None
    try:
        return PageType(raw)
    except ValueError as exc:
        raise Refused(f"type must be one of {', '.join(t.value for t in PageType)}.") from exc
