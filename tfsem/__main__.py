"""`python -m tfsem`: the same as the `tfsem` command."""

import sys

from tfsem.cli import main

if __name__ == "__main__":  # a multiprocessing child importing this must not re-run the CLI
    sys.exit(main())
