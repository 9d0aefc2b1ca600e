"""``python -m mimirlib.audit``."""

import sys

from mimirlib.audit.cli import main

sys.exit(main())
