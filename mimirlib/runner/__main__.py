"""``python -m mimirlib.runner``."""

import sys

from mimirlib.runner import main

sys.exit(main())
