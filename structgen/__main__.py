"""``python -m structgen``: the same commands as ``structgen`` (see :mod:`structgen.cli`)."""

from .cli import main

raise SystemExit(main())
