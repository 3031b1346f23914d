import sys

from memvm.server.cli.main import main

sys.exit(main())
