"""The TensorList family, now defined with its ops in oracle/opdefs/lists.py;
the names other modules use stay importable here."""

from .opdefs.lists import (INVALID, LIST_OPS, ListFunction, TensorList,  # noqa: F401
                           compatible, merge, partial_from_tensor)
