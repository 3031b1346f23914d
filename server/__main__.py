import sys

from memvm.server.cli import main

sys.exit(main())
