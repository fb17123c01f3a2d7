"""``python -m experiments.cli`` runs the ``memplan`` command line."""

import sys

from experiments.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
