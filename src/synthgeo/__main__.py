"""``python -m synthgeo``."""

import sys

from synthgeo.cli import main

sys.exit(main())
