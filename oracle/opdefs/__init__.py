"""One place per op: the TensorFlow ops tfsem models, declared by family.

`registry` holds :class:`OpDef` (every facet of one op: TensorFlow name and
attributes, import, value semantics, Z3 encoding or uninterpreted, export,
effect) and :func:`define`; each family is a module that defines its ops:
`math` (element-wise arithmetic, casts, reductions, matrix products,
comparisons), `nn` (Relu, BiasAdd and their gradients), `array` (data movement and shapes, constant or computed at run
time), `lists` (TensorFlow's TensorList values and ops), `state` (resource
variables, gathers, scatters, optimizer updates), `random` (stateful
random ops with their generator's state in σ, stateless ones uninterpreted),
`control` (Switch, Merge, Enter, Exit, NextIteration, LoopCond; If, While,
Case and calls, lowered when a graph is read), `queues` (a session's FIFO
queues and critical sections), `data` (tf.data iterators and Optionals) and
`stacks` (TensorFlow 1's step-local stacks).
"""

from . import math, nn, array, lists, state, random, stacks  # noqa: F401  (each module defines its family's ops)
from . import control, queues, data  # noqa: F401  (control flow, sessions' queues, tf.data)
from .registry import (FOLDS_ON_CONSTANTS, Elementwise, FoldsOnConstants, KnownOp, OpDef,
                       define, elementwise_of, encoding, export_as, export_of, families,
                       flushed, folds_on_constants, function, function_names, generation,
                       index_dtype, int_list, kernel_ops, kernel_reason, kernels_are_functions,
                       known, known_ops, lookup, node_export_of, one_function, ops_where,
                       problems, refuse, table, type_default, uninterpreted,
                       unmodelled_output_args)
from .. import kernels as _kernels

# The kernel path (oracle/kernels.py, a layer below) reads which ops'
# kernels are functions from the entries here.
_kernels.supply(kernel_ops)

__all__ = ["FOLDS_ON_CONSTANTS", "Elementwise", "FoldsOnConstants", "KnownOp", "OpDef",
           "define", "elementwise_of", "encoding", "export_as", "export_of", "families",
           "flushed", "folds_on_constants", "function", "function_names", "generation",
           "index_dtype", "int_list", "kernel_ops", "kernel_reason", "kernels_are_functions",
           "known", "known_ops", "lookup", "node_export_of", "one_function", "ops_where",
           "problems", "refuse", "table", "type_default", "uninterpreted",
           "unmodelled_output_args"]
