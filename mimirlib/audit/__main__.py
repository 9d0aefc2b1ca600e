"""``python -m mimirlib.audit``."""

import sys

from mimirlib.audit import main

sys.exit(main())
