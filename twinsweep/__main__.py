"""``python -m twinsweep`` = the ``twinsweep`` command."""

import sys

from twinsweep.sweep.cli import main

if __name__ == "__main__":
    sys.exit(main())
