"""The array family's run-time shape functions, now defined with their ops in
oracle/opdefs/array.py; the names other modules use stay importable here."""

from .opdefs.array import (INDEX_DTYPES, KIND_ONLY, MAX_STITCH, OPERAND_FORMS,  # noqa: F401
                           VALUE_DEPENDENT, _index, constant_operand_form, result_dtype,
                           strided_slice_spec)
