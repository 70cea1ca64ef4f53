import sys

from tfsem.cli import main

sys.exit(main())
