"""`python -m inspector ...`"""

import sys

from inspector import commands

sys.exit(commands.main())
