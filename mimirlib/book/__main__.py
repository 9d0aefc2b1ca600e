"""``python -m mimirlib.book build``: render the executed chapters to HTML."""

from mimirlib.book.build import main

raise SystemExit(main())
