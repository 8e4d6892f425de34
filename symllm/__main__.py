"""``python -m symllm`` (symllm.cli installs its signal handlers before its own imports: Ctrl-C while
they load is one line, not a traceback)."""
import sys

from symllm.cli import main

sys.exit(main())
