"""``python -m synthgeo``."""

import sys

from synthgeo.cli.main import main

sys.exit(main())
