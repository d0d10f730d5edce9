"""``python -m examples.cnclaim``: the demo harness's command line (:mod:`.demo.cli`)."""

import sys

from .demo.cli import main

sys.exit(main())
