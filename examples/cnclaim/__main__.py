"""``python -m examples.cnclaim``: see :mod:`examples.cnclaim.cli`."""

import sys

from .cli import main

sys.exit(main())
