"""`memvm embed` and doctor's line on search by meaning, on a real file, through memvm's own entry point."""

import json

import anyio
from memvm.engine import Engine, EngineConfig

from tests.commands import run
from tests.conftest import NS, user


def _stored(db, texts):
    async def write() -> None:
        engine = await Engine.open(db)
        try:
            await engine.session(NS, "s").ingest(messages=[user(text) for text in texts])
        finally:
            await engine.close()

    anyio.run(write)


def _search(db, query):
    async def read():
        engine = await Engine.open(db, EngineConfig(read_only=True))
        try:
            return await engine.session(NS, "s").search(query=query)
        finally:
            await engine.close()

    return anyio.run(read)


def test_embed_gives_every_waiting_page_its_vector_and_doctor_shows_the_progress(tmp_path):
    db = tmp_path / "memvm.db"
    _stored(db, ["We adopted a beagle puppy named Pixel.", "The report is due on Friday.", "Train at 7:40."])
    before = json.loads(run("doctor", "--db", db, "--json").stdout)
    assert (before["pages_embedded"], before["pages_waiting_embedding"]) == (0, 3)
    assert (
        "3 waiting (a server embeds them as it runs; memvm embed does them now)"
        in run("doctor", "--db", db).stdout
    )
    assert _search(db, "Do I have any pets?").results == []
    done = run("embed", "--db", db)
    assert done.status == 0, done.stderr
    assert done.stdout == f"embedded 3 pages in {db}\n"
    assert "embedding pages [" in done.stderr and "3/3" in done.stderr
    after = json.loads(run("doctor", "--db", db, "--json").stdout)
    assert (after["pages_embedded"], after["pages_waiting_embedding"], after["healthy"]) == (3, 0, True)
    assert _search(db, "Do I have any pets?").results[0].matched == "meaning"
    again = run("embed", "--db", db)
    assert again.status == 0 and again.stdout == f"embedded 0 pages in {db}\n"


def test_a_model_that_fails_its_digest_is_named_by_doctor_and_refused_by_embed(tmp_path):
    db = tmp_path / "memvm.db"
    _stored(db, ["We adopted a beagle puppy named Pixel."])
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.onnx").write_bytes(b"something else")
    doctor = run("doctor", "--db", db, "--embedding-model", model)
    # The database is healthy; the installation's encoder is what cannot run, on a line of its own.
    assert doctor.status == 0 and doctor.stdout.rstrip().endswith("healthy")
    off = "meaning     off: the embedding model's weights file model.onnx is not the pinned one"
    assert off in doctor.stdout
    found = json.loads(run("doctor", "--db", db, "--embedding-model", model, "--json").stdout)
    assert found["embedding_unavailable"].startswith("the embedding model's weights file")
    embed = run("embed", "--db", db, "--embedding-model", model)
    assert embed.status == 2 and embed.stdout == ""
    assert embed.stderr == (
        "memvm: search by meaning cannot run: the embedding model's weights file model.onnx is not the "
        "pinned one (its sha256 differs)\n"
    )


def test_embed_on_a_missing_database_says_so(tmp_path):
    done = run("embed", "--db", tmp_path / "none.db")
    assert done.status == 2 and done.stderr.startswith("memvm: there is no database at")
