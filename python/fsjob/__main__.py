"""``python3 -m fsjob``: see fsjob.cli."""

import sys

from .cli import run

sys.exit(run(prog="python3 -m fsjob"))
