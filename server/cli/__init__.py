"""The `memvm` program, assembled: the one package that imports every other (the MCP server,
the hooks, the browser view, the engine's operations) to give each its command.

main.py is the console script; parser.py lists the commands and builds the command line without
importing any of them; each command's module (serve.py, ui.py, demo.py, doctor.py, export.py,
import_.py, gc.py, backup.py) adds its arguments and imports what it runs only when it runs.
`memvm hook` and `memvm hooks` parse their own lines, in the hooks package.
"""
