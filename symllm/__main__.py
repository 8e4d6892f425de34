"""``python -m symllm``."""
import sys

from symllm.cli import main

sys.exit(main())
