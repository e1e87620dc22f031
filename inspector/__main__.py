"""`python -m inspector ...`"""

import sys

from inspector import cli

sys.exit(cli.main())
