"""The operator's commands against a file a running server is writing: nothing waits, nothing breaks.

While four clients write through `memvm serve`, `memvm backup`, `memvm export` and `memvm doctor`
run as their own processes. The backup and the export must each hold every write acknowledged
before they started, pass the integrity checks, and cost the writers no error.
"""

import sys
from pathlib import Path

import anyio
import pytest

from tests.e2e.test_http import START_LIMIT, http_server
from tests.e2e.writes import Acked, check_file, write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WRITERS = 4


async def memvm(*argv: str | Path) -> tuple[int, str]:
    done = await anyio.run_process([sys.executable, "-m", "memvm.server", *map(str, argv)], check=False)
    return done.returncode, (done.stdout + done.stderr).decode()


def snapshot(acked: Acked) -> Acked:
    return Acked(keys=set(acked.keys), page_ids=set(acked.page_ids), call_ids=set(acked.call_ids))


async def test_backup_export_and_doctor_run_while_the_server_writes(tmp_path, report_figure):
    db, copy, export, restored = (tmp_path / name for name in ("live.db", "b.db", "e.jsonl", "r.db"))
    acked = Acked()
    with http_server(db, None, "--tools", "all") as url, anyio.fail_after(START_LIMIT * 3):
        await write(url, "first", acked, 20)  # memory to copy before the commands start
        async with anyio.create_task_group() as group:
            for w in range(WRITERS):
                group.start_soon(write, url, f"w{w}", acked, 100_000)
            before_backup = snapshot(acked)
            backed_up = await memvm("backup", copy, "--db", db)
            before_export = snapshot(acked)
            exported = await memvm("export", "--db", db, "--out", export)
            doctor = await memvm("doctor", "--db", db)
            during = len(acked) - len(before_backup)
            group.cancel_scope.cancel()  # the writers stop here, mid-call or not
    assert (backed_up[0], exported[0], doctor[0]) == (0, 0, 0), (backed_up, exported, doctor)
    assert during > 0  # the server went on acknowledging writes while the commands ran
    assert acked.errors == []
    backup_lost, backup_sound = check_file(copy, before_backup)
    assert await memvm("import", export, "--db", restored) == (
        0,
        f"imported {exported[1].split()[1]} rows into {restored}\n",
    )
    export_lost, export_sound = check_file(restored, before_export)
    report_figure(
        f"online: writes={len(acked)} during_commands={during} errors={len(acked.errors)} backup_lost={backup_lost} "
        f"export_lost={export_lost} sound={backup_sound and export_sound}"
    )
    assert (backup_lost, export_lost) == (0, 0)
    assert backup_sound and export_sound
    assert (await memvm("doctor", "--db", copy))[0] == 0
