"""`python -m predict MODEL IMAGES...`"""

import sys

from predict import cli

sys.exit(cli.main())
