"""`memvm import --format ...`: memory from where users keep it today, added through the engine.

One module per format reads its files into notes or conversations; `notes` and `conversations`
write them, so that every import goes through the engine's write path (redaction included) and
is idempotent: importing the same file twice adds nothing the second time.
"""
