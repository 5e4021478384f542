"""``python -m ai_agent.cli``."""

import sys

from ai_agent.cli import main

sys.exit(main())
