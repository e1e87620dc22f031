"""`python -m pipeline.inspect ...`"""

import sys

from pipeline.inspect import cli

sys.exit(cli.main())
