"""One module per `tfsem` command (see tfsem/cli.py)."""
