"""``python -m sparktide.cli``: the ``sparktide`` command."""

from sparktide.cli import main

raise SystemExit(main())
