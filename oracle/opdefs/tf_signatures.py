"""TensorFlow's OpDef signatures of the ops tfsem models or passes to kernels
(graphdef/signatures.py reads them).  Written by `python -m
tfsem.graphdef.signatures` from TensorFlow 2.21.0; do not edit.

ENTRIES: {op: the text of (input args, output args, attributes)}, decoded
when first used (graphdef/signatures.py OPS): an arg is (name, its DT_
type or type attribute, number attribute, list(type) attribute, is_ref);
an attribute {name: (kind, default or None, minimum or None, the types it
allows or None)}, the allowed types `_ALLOWED[k]`."""

TENSORFLOW_VERSION = '2.21.0'

_ALLOWED = [('DT_BFLOAT16',
  'DT_BOOL',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT16',
  'DT_QINT32',
  'DT_QINT8',
  'DT_QUINT16',
  'DT_QUINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_BOOL',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_STRING',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_BOOL',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_BOOL',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT16',
  'DT_QINT32',
  'DT_QINT8',
  'DT_QUINT16',
  'DT_QUINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16', 'DT_COMPLEX128', 'DT_COMPLEX64', 'DT_DOUBLE', 'DT_FLOAT', 'DT_HALF'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT16',
  'DT_QINT32',
  'DT_QINT8',
  'DT_QUINT16',
  'DT_QUINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT16',
  'DT_QINT32',
  'DT_QINT8',
  'DT_QUINT16',
  'DT_QUINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8',
  'DT_VARIANT'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_STRING',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT32',
  'DT_INT64'),
 ('DT_BFLOAT16',
  'DT_COMPLEX128',
  'DT_COMPLEX64',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT32',
  'DT_INT64',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16', 'DT_DOUBLE', 'DT_FLOAT', 'DT_HALF'),
 ('DT_BFLOAT16', 'DT_DOUBLE', 'DT_FLOAT', 'DT_HALF', 'DT_HALF', 'DT_INT32', 'DT_INT64'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT16',
  'DT_QINT32',
  'DT_QINT8',
  'DT_QUINT16',
  'DT_QUINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_QINT8',
  'DT_UINT16',
  'DT_UINT8'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64'),
 ('DT_BFLOAT16',
  'DT_DOUBLE',
  'DT_FLOAT',
  'DT_HALF',
  'DT_INT16',
  'DT_INT32',
  'DT_INT64',
  'DT_INT8',
  'DT_UINT16',
  'DT_UINT32',
  'DT_UINT64',
  'DT_UINT8'),
 ('DT_BFLOAT16', 'DT_DOUBLE', 'DT_FLOAT', 'DT_HALF', 'DT_INT32'),
 ('DT_BFLOAT16', 'DT_DOUBLE', 'DT_FLOAT', 'DT_HALF', 'DT_INT32', 'DT_INT64'),
 ('DT_BFLOAT16', 'DT_FLOAT'),
 ('DT_BFLOAT16', 'DT_FLOAT', 'DT_HALF'),
 ('DT_DOUBLE', 'DT_FLOAT'),
 ('DT_DOUBLE', 'DT_FLOAT', 'DT_HALF'),
 ('DT_DOUBLE', 'DT_FLOAT', 'DT_HALF', 'DT_INT32', 'DT_INT64'),
 ('DT_DOUBLE', 'DT_FLOAT', 'DT_HALF', 'DT_INT8', 'DT_QINT8'),
 ('DT_DOUBLE', 'DT_FLOAT', 'DT_INT16', 'DT_INT32', 'DT_INT64', 'DT_INT8', 'DT_UINT8'),
 ('DT_FLOAT',),
 ('DT_INT16', 'DT_INT32', 'DT_INT64'),
 ('DT_INT16', 'DT_INT32', 'DT_INT64', 'DT_UINT16'),
 ('DT_INT32', 'DT_INT64'),
 ('DT_INT32', 'DT_INT64', 'DT_INT8'),
 ('DT_INT32', 'DT_INT64', 'DT_INT8', 'DT_UINT8'),
 ('DT_INT32', 'DT_INT64', 'DT_UINT32', 'DT_UINT64'),
 ('EXPLICIT', 'SAME', 'VALID'),
 ('HWIO', 'OIHW', 'OIHW_VECT_I'),
 ('NCDHW', 'NCHW', 'NDHWC', 'NHWC'),
 ('NCHW', 'NCHW_VECT_C', 'NHWC'),
 ('NCHW', 'NHWC'),
 ('REFLECT', 'SYMMETRIC'),
 ('SAME', 'VALID')]

ENTRIES = {'Abs': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[17])})',
 'Acos': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'Acosh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'Add': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[9])})",
 'AddN': "((('inputs', 'T', 'N', '', False),), (('sum', 'T', '', '', False),), {'N': ('int', "
         "None, 1, None), 'T': ('type', None, None, _ALLOWED[8])})",
 'AddV2': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
          "{'T': ('type', None, None, _ALLOWED[10])})",
 'All': "((('input', 'DT_BOOL', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
        "(('output', 'DT_BOOL', '', '', False),), {'keep_dims': ('bool', None, None, None), "
        "'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'AnonymousIterator': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'output_types': "
                      "('list(type)', None, 1, None), 'output_shapes': ('list(shape)', None, 1, "
                      'None)})',
 'AnonymousIteratorV2': "((), (('handle', 'DT_RESOURCE', '', '', False), ('deleter', "
                        "'DT_VARIANT', '', '', False)), {'output_types': ('list(type)', None, 1, "
                        "None), 'output_shapes': ('list(shape)', None, 1, None)})",
 'AnonymousIteratorV3': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'output_types': "
                        "('list(type)', None, 1, None), 'output_shapes': ('list(shape)', None, 1, "
                        'None)})',
 'Any': "((('input', 'DT_BOOL', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
        "(('output', 'DT_BOOL', '', '', False),), {'keep_dims': ('bool', None, None, None), "
        "'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'ApplyAdaMax': "((('var', 'T', '', '', True), ('m', 'T', '', '', True), ('v', 'T', '', '', "
                "True), ('beta1_power', 'T', '', '', False), ('lr', 'T', '', '', False), "
                "('beta1', 'T', '', '', False), ('beta2', 'T', '', '', False), ('epsilon', 'T', "
                "'', '', False), ('grad', 'T', '', '', False)), (('out', 'T', '', '', True),), "
                "{'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, "
                'None)})',
 'ApplyAdadelta': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('accum_update', "
                  "'T', '', '', True), ('lr', 'T', '', '', False), ('rho', 'T', '', '', False), "
                  "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), (('out', 'T', "
                  "'', '', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                  "('bool', None, None, None)})",
 'ApplyAdagrad': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', '', '', "
                 "False), ('grad', 'T', '', '', False)), (('out', 'T', '', '', True),), {'T': "
                 "('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                 "'update_slots': ('bool', None, None, None)})",
 'ApplyAdagradDA': "((('var', 'T', '', '', True), ('gradient_accumulator', 'T', '', '', True), "
                   "('gradient_squared_accumulator', 'T', '', '', True), ('grad', 'T', '', '', "
                   "False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), ('l2', 'T', "
                   "'', '', False), ('global_step', 'DT_INT64', '', '', False)), (('out', 'T', "
                   "'', '', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                   "('bool', None, None, None)})",
 'ApplyAdagradV2': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', '', "
                   "'', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), "
                   "(('out', 'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
                   "'use_locking': ('bool', None, None, None), 'update_slots': ('bool', None, "
                   'None, None)})',
 'ApplyAdam': "((('var', 'T', '', '', True), ('m', 'T', '', '', True), ('v', 'T', '', '', True), "
              "('beta1_power', 'T', '', '', False), ('beta2_power', 'T', '', '', False), ('lr', "
              "'T', '', '', False), ('beta1', 'T', '', '', False), ('beta2', 'T', '', '', False), "
              "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), (('out', 'T', '', "
              "'', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', "
              "None, None, None), 'use_nesterov': ('bool', None, None, None)})",
 'ApplyAddSign': "((('var', 'T', '', '', True), ('m', 'T', '', '', True), ('lr', 'T', '', '', "
                 "False), ('alpha', 'T', '', '', False), ('sign_decay', 'T', '', '', False), "
                 "('beta', 'T', '', '', False), ('grad', 'T', '', '', False)), (('out', 'T', '', "
                 "'', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', "
                 'None, None, None)})',
 'ApplyCenteredRMSProp': "((('var', 'T', '', '', True), ('mg', 'T', '', '', True), ('ms', 'T', "
                         "'', '', True), ('mom', 'T', '', '', True), ('lr', 'T', '', '', False), "
                         "('rho', 'T', '', '', False), ('momentum', 'T', '', '', False), "
                         "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), "
                         "(('out', 'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
                         "'use_locking': ('bool', None, None, None)})",
 'ApplyFtrl': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('linear', 'T', '', "
              "'', True), ('grad', 'T', '', '', False), ('lr', 'T', '', '', False), ('l1', 'T', "
              "'', '', False), ('l2', 'T', '', '', False), ('lr_power', 'T', '', '', False)), "
              "(('out', 'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
              "'use_locking': ('bool', None, None, None), 'multiply_linear_by_lr': ('bool', None, "
              'None, None)})',
 'ApplyFtrlV2': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('linear', 'T', '', "
                "'', True), ('grad', 'T', '', '', False), ('lr', 'T', '', '', False), ('l1', 'T', "
                "'', '', False), ('l2', 'T', '', '', False), ('l2_shrinkage', 'T', '', '', "
                "False), ('lr_power', 'T', '', '', False)), (('out', 'T', '', '', True),), {'T': "
                "('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'ApplyMomentum': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', '', "
                  "'', False), ('grad', 'T', '', '', False), ('momentum', 'T', '', '', False)), "
                  "(('out', 'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
                  "'use_locking': ('bool', None, None, None), 'use_nesterov': ('bool', None, "
                  'None, None)})',
 'ApplyPowerSign': "((('var', 'T', '', '', True), ('m', 'T', '', '', True), ('lr', 'T', '', '', "
                   "False), ('logbase', 'T', '', '', False), ('sign_decay', 'T', '', '', False), "
                   "('beta', 'T', '', '', False), ('grad', 'T', '', '', False)), (('out', 'T', "
                   "'', '', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                   "('bool', None, None, None)})",
 'ApplyProximalAdagrad': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', "
                         "'', '', False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', False), "
                         "('grad', 'T', '', '', False)), (('out', 'T', '', '', True),), {'T': "
                         "('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, "
                         'None)})',
 'ApplyProximalGradientDescent': "((('var', 'T', '', '', True), ('alpha', 'T', '', '', False), "
                                 "('l1', 'T', '', '', False), ('l2', 'T', '', '', False), "
                                 "('delta', 'T', '', '', False)), (('out', 'T', '', '', True),), "
                                 "{'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                                 "('bool', None, None, None)})",
 'ApplyRMSProp': "((('var', 'T', '', '', True), ('ms', 'T', '', '', True), ('mom', 'T', '', '', "
                 "True), ('lr', 'T', '', '', False), ('rho', 'T', '', '', False), ('momentum', "
                 "'T', '', '', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', '', "
                 "False)), (('out', 'T', '', '', True),), {'T': ('type', None, None, "
                 "_ALLOWED[7]), 'use_locking': ('bool', None, None, None)})",
 'ArgMax': "((('input', 'T', '', '', False), ('dimension', 'Tidx', '', '', False)), (('output', "
           "'output_type', '', '', False),), {'T': ('type', None, None, _ALLOWED[3]), 'Tidx': "
           "('type', 'DT_INT32', None, _ALLOWED[33]), 'output_type': ('type', 'DT_INT64', None, "
           '_ALLOWED[34])})',
 'ArgMin': "((('input', 'T', '', '', False), ('dimension', 'Tidx', '', '', False)), (('output', "
           "'output_type', '', '', False),), {'T': ('type', None, None, _ALLOWED[3]), 'Tidx': "
           "('type', 'DT_INT32', None, _ALLOWED[35]), 'output_type': ('type', 'DT_INT64', None, "
           '_ALLOWED[35])})',
 'Asin': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'Asinh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'Assign': "((('ref', 'T', '', '', True), ('value', 'T', '', '', False)), (('output_ref', 'T', "
           "'', '', True),), {'T': ('type', None, None, None), 'validate_shape': ('bool', None, "
           "None, None), 'use_locking': ('bool', None, None, None)})",
 'AssignAdd': "((('ref', 'T', '', '', True), ('value', 'T', '', '', False)), (('output_ref', 'T', "
              "'', '', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', "
              'None, None, None)})',
 'AssignAddVariableOp': "((('resource', 'DT_RESOURCE', '', '', False), ('value', 'dtype', '', '', "
                        "False)), (), {'dtype': ('type', None, None, None)})",
 'AssignSub': "((('ref', 'T', '', '', True), ('value', 'T', '', '', False)), (('output_ref', 'T', "
              "'', '', True),), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', "
              'None, None, None)})',
 'AssignSubVariableOp': "((('resource', 'DT_RESOURCE', '', '', False), ('value', 'dtype', '', '', "
                        "False)), (), {'dtype': ('type', None, None, None)})",
 'AssignVariableOp': "((('resource', 'DT_RESOURCE', '', '', False), ('value', 'dtype', '', '', "
                     "False)), (), {'dtype': ('type', None, None, None), 'validate_shape': "
                     "('bool', None, None, None)})",
 'Atan': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'Atan2': "((('y', 'T', '', '', False), ('x', 'T', '', '', False)), (('z', 'T', '', '', False),), "
          "{'T': ('type', None, None, _ALLOWED[15])})",
 'Atanh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'AvgPool': "((('value', 'T', '', '', False),), (('output', 'T', '', '', False),), {'ksize': "
            "('list(int)', None, 4, None), 'strides': ('list(int)', None, 4, None), 'padding': "
            "('string', None, None, _ALLOWED[45]), 'data_format': ('string', None, None, "
            "_ALLOWED[43]), 'T': ('type', None, None, _ALLOWED[15])})",
 'AvgPoolGrad': "((('orig_input_shape', 'DT_INT32', '', '', False), ('grad', 'T', '', '', "
                "False)), (('output', 'T', '', '', False),), {'ksize': ('list(int)', None, 4, "
                "None), 'strides': ('list(int)', None, 4, None), 'padding': ('string', None, "
                "None, _ALLOWED[45]), 'data_format': ('string', None, None, _ALLOWED[43]), 'T': "
                "('type', None, None, _ALLOWED[15])})",
 'BatchMatMul': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('output', 'T', '', "
                "'', False),), {'T': ('type', None, None, _ALLOWED[13]), 'adj_x': ('bool', None, "
                "None, None), 'adj_y': ('bool', None, None, None), 'grad_x': ('bool', None, None, "
                "None), 'grad_y': ('bool', None, None, None)})",
 'BatchMatMulV2': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('output', 'T', '', "
                  "'', False),), {'T': ('type', None, None, _ALLOWED[12]), 'adj_x': ('bool', "
                  "None, None, None), 'adj_y': ('bool', None, None, None), 'grad_x': ('bool', "
                  "None, None, None), 'grad_y': ('bool', None, None, None)})",
 'BatchMatMulV3': "((('x', 'Ta', '', '', False), ('y', 'Tb', '', '', False)), (('output', 'Tout', "
                  "'', '', False),), {'Ta': ('type', None, None, _ALLOWED[11]), 'Tb': ('type', "
                  "None, None, _ALLOWED[11]), 'Tout': ('type', None, None, _ALLOWED[5]), 'adj_x': "
                  "('bool', None, None, None), 'adj_y': ('bool', None, None, None), 'grad_x': "
                  "('bool', None, None, None), 'grad_y': ('bool', None, None, None)})",
 'BiasAdd': "((('value', 'T', '', '', False), ('bias', 'T', '', '', False)), (('output', 'T', '', "
            "'', False),), {'T': ('type', None, None, _ALLOWED[7]), 'data_format': ('string', "
            'None, None, _ALLOWED[43])})',
 'BiasAddGrad': "((('out_backprop', 'T', '', '', False),), (('output', 'T', '', '', False),), "
                "{'T': ('type', None, None, _ALLOWED[7]), 'data_format': ('string', None, None, "
                '_ALLOWED[43])})',
 'BroadcastGradientArgs': "((('s0', 'T', '', '', False), ('s1', 'T', '', '', False)), (('r0', "
                          "'T', '', '', False), ('r1', 'T', '', '', False)), {'T': ('type', "
                          "'DT_INT32', None, _ALLOWED[35])})",
 'BroadcastTo': "((('input', 'T', '', '', False), ('shape', 'Tidx', '', '', False)), (('output', "
                "'T', '', '', False),), {'T': ('type', None, None, None), 'Tidx': ('type', "
                "'DT_INT32', None, _ALLOWED[35])})",
 'Case': "((('branch_index', 'DT_INT32', '', '', False), ('input', '', '', 'Tin', False)), "
         "(('output', '', '', 'Tout', False),), {'Tin': ('list(type)', None, 0, None), 'Tout': "
         "('list(type)', None, 0, None), 'branches': ('list(func)', None, 1, None), "
         "'output_shapes': ('list(shape)', None, None, None)})",
 'Cast': "((('x', 'SrcT', '', '', False),), (('y', 'DstT', '', '', False),), {'SrcT': ('type', "
         "None, None, None), 'DstT': ('type', None, None, None), 'Truncate': ('bool', None, None, "
         'None)})',
 'Ceil': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[15])})',
 'CheckNumerics': "((('tensor', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
                  "('type', None, None, _ALLOWED[15]), 'message': ('string', None, None, None)})",
 'ClipByValue': "((('t', 'T', '', '', False), ('clip_value_min', 'T', '', '', False), "
                "('clip_value_max', 'T', '', '', False)), (('output', 'T', '', '', False),), "
                "{'T': ('type', None, None, _ALLOWED[7])})",
 'ConcatV2': "((('values', 'T', 'N', '', False), ('axis', 'Tidx', '', '', False)), (('output', "
             "'T', '', '', False),), {'N': ('int', None, 2, None), 'T': ('type', None, None, "
             "None), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'ConjugateTranspose': "((('x', 'T', '', '', False), ('perm', 'Tperm', '', '', False)), (('y', "
                       "'T', '', '', False),), {'T': ('type', None, None, None), 'Tperm': "
                       "('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Const': "((), (('output', 'dtype', '', '', False),), {'value': ('tensor', None, None, None), "
          "'dtype': ('type', None, None, None)})",
 'ConsumeMutexLock': "((('mutex_lock', 'DT_VARIANT', '', '', False),), (), {})",
 'ControlTrigger': '((), (), {})',
 'Conv2D': "((('input', 'T', '', '', False), ('filter', 'T', '', '', False)), (('output', 'T', "
           "'', '', False),), {'T': ('type', None, None, _ALLOWED[23]), 'strides': ('list(int)', "
           "None, None, None), 'use_cudnn_on_gpu': ('bool', None, None, None), 'padding': "
           "('string', None, None, _ALLOWED[39]), 'explicit_paddings': ('list(int)', (), None, "
           "None), 'data_format': ('string', None, None, _ALLOWED[43]), 'dilations': "
           "('list(int)', (1, 1, 1, 1), None, None)})",
 'Conv2DBackpropFilter': "((('input', 'T', '', '', False), ('filter_sizes', 'DT_INT32', '', '', "
                         "False), ('out_backprop', 'T', '', '', False)), (('output', 'T', '', '', "
                         "False),), {'T': ('type', None, None, _ALLOWED[15]), 'strides': "
                         "('list(int)', None, None, None), 'use_cudnn_on_gpu': ('bool', None, "
                         "None, None), 'padding': ('string', None, None, _ALLOWED[39]), "
                         "'explicit_paddings': ('list(int)', (), None, None), 'data_format': "
                         "('string', None, None, _ALLOWED[43]), 'dilations': ('list(int)', (1, 1, "
                         '1, 1), None, None)})',
 'Conv2DBackpropInput': "((('input_sizes', 'DT_INT32', '', '', False), ('filter', 'T', '', '', "
                        "False), ('out_backprop', 'T', '', '', False)), (('output', 'T', '', '', "
                        "False),), {'T': ('type', None, None, _ALLOWED[23]), 'strides': "
                        "('list(int)', None, None, None), 'use_cudnn_on_gpu': ('bool', None, "
                        "None, None), 'padding': ('string', None, None, _ALLOWED[39]), "
                        "'explicit_paddings': ('list(int)', (), None, None), 'data_format': "
                        "('string', None, None, _ALLOWED[43]), 'dilations': ('list(int)', (1, 1, "
                        '1, 1), None, None)})',
 'Cos': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[4])})',
 'Cosh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'CountUpTo': "((('ref', 'T', '', '', True),), (('output', 'T', '', '', False),), {'limit': "
              "('int', None, None, None), 'T': ('type', None, None, _ALLOWED[35])})",
 'Cumprod': "((('x', 'T', '', '', False), ('axis', 'Tidx', '', '', False)), (('out', 'T', '', '', "
            "False),), {'exclusive': ('bool', None, None, None), 'reverse': ('bool', None, None, "
            "None), 'T': ('type', None, None, _ALLOWED[7]), 'Tidx': ('type', 'DT_INT32', None, "
            '_ALLOWED[35])})',
 'Cumsum': "((('x', 'T', '', '', False), ('axis', 'Tidx', '', '', False)), (('out', 'T', '', '', "
           "False),), {'exclusive': ('bool', None, None, None), 'reverse': ('bool', None, None, "
           "None), 'T': ('type', None, None, _ALLOWED[7]), 'Tidx': ('type', 'DT_INT32', None, "
           '_ALLOWED[35])})',
 'DeleteIterator': "((('handle', 'DT_RESOURCE', '', '', False), ('deleter', 'DT_VARIANT', '', '', "
                   'False)), (), {})',
 'DepthwiseConv2dNative': "((('input', 'T', '', '', False), ('filter', 'T', '', '', False)), "
                          "(('output', 'T', '', '', False),), {'T': ('type', None, None, "
                          "_ALLOWED[15]), 'strides': ('list(int)', None, None, None), 'padding': "
                          "('string', None, None, _ALLOWED[39]), 'explicit_paddings': "
                          "('list(int)', (), None, None), 'data_format': ('string', None, None, "
                          "_ALLOWED[43]), 'dilations': ('list(int)', (1, 1, 1, 1), None, None)})",
 'DepthwiseConv2dNativeBackpropFilter': "((('input', 'T', '', '', False), ('filter_sizes', "
                                        "'DT_INT32', '', '', False), ('out_backprop', 'T', '', "
                                        "'', False)), (('output', 'T', '', '', False),), {'T': "
                                        "('type', None, None, _ALLOWED[15]), 'strides': "
                                        "('list(int)', None, None, None), 'padding': ('string', "
                                        "None, None, _ALLOWED[39]), 'explicit_paddings': "
                                        "('list(int)', (), None, None), 'data_format': ('string', "
                                        "None, None, _ALLOWED[43]), 'dilations': ('list(int)', "
                                        '(1, 1, 1, 1), None, None)})',
 'DepthwiseConv2dNativeBackpropInput': "((('input_sizes', 'DT_INT32', '', '', False), ('filter', "
                                       "'T', '', '', False), ('out_backprop', 'T', '', '', "
                                       "False)), (('output', 'T', '', '', False),), {'T': "
                                       "('type', None, None, _ALLOWED[15]), 'strides': "
                                       "('list(int)', None, None, None), 'padding': ('string', "
                                       "None, None, _ALLOWED[39]), 'explicit_paddings': "
                                       "('list(int)', (), None, None), 'data_format': ('string', "
                                       "None, None, _ALLOWED[43]), 'dilations': ('list(int)', (1, "
                                       '1, 1, 1), None, None)})',
 'DeserializeIterator': "((('resource_handle', 'DT_RESOURCE', '', '', False), ('serialized', "
                        "'DT_VARIANT', '', '', False)), (), {})",
 'DestroyTemporaryVariable': "((('ref', 'T', '', '', True),), (('value', 'T', '', '', False),), "
                             "{'T': ('type', None, None, None), 'var_name': ('string', None, "
                             'None, None)})',
 'Digamma': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
            'None, _ALLOWED[15])})',
 'Div': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[10])})",
 'DivNoNan': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'DynamicStitch': "((('indices', 'DT_INT32', 'N', '', False), ('data', 'T', 'N', '', False)), "
                  "(('merged', 'T', '', '', False),), {'N': ('int', None, 1, None), 'T': ('type', "
                  'None, None, None)})',
 'Einsum': "((('inputs', 'T', 'N', '', False),), (('output', 'T', '', '', False),), {'equation': "
           "('string', None, None, None), 'N': ('int', None, 1, None), 'T': ('type', None, None, "
           'None)})',
 'Elu': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
        "('type', None, None, _ALLOWED[15])})",
 'EluGrad': "((('gradients', 'T', '', '', False), ('outputs', 'T', '', '', False)), "
            "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[15])})",
 'EmptyTensorList': "((('element_shape', 'shape_type', '', '', False), ('max_num_elements', "
                    "'DT_INT32', '', '', False)), (('handle', 'DT_VARIANT', '', '', False),), "
                    "{'element_dtype': ('type', None, None, None), 'shape_type': ('type', None, "
                    'None, _ALLOWED[35])})',
 'Enter': "((('data', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': ('type', "
          "None, None, None), 'frame_name': ('string', None, None, None), 'is_constant': ('bool', "
          "None, None, None), 'parallel_iterations': ('int', 10, None, None)})",
 'Equal': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', '', "
          "False),), {'T': ('type', None, None, None), 'incompatible_shape_error': ('bool', None, "
          'None, None)})',
 'Erf': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[15])})',
 'Erfc': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[15])})',
 'Exit': "((('data', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': ('type', "
         'None, None, None)})',
 'Exp': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[4])})',
 'ExpandDims': "((('input', 'T', '', '', False), ('dim', 'Tdim', '', '', False)), (('output', "
               "'T', '', '', False),), {'T': ('type', None, None, None), 'Tdim': ('type', "
               "'DT_INT32', None, _ALLOWED[35])})",
 'Expm1': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'FIFOQueueV2': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'component_types': "
                "('list(type)', None, 1, None), 'shapes': ('list(shape)', None, 0, None), "
                "'capacity': ('int', -1, None, None), 'container': ('string', None, None, None), "
                "'shared_name': ('string', None, None, None)})",
 'Fill': "((('dims', 'index_type', '', '', False), ('value', 'T', '', '', False)), (('output', "
         "'T', '', '', False),), {'T': ('type', None, None, None), 'index_type': ('type', "
         "'DT_INT32', None, _ALLOWED[35])})",
 'Floor': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[15])})',
 'FloorDiv': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[10])})",
 'FloorMod': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'FusedBatchNorm': "((('x', 'T', '', '', False), ('scale', 'T', '', '', False), ('offset', 'T', "
                   "'', '', False), ('mean', 'T', '', '', False), ('variance', 'T', '', '', "
                   "False)), (('y', 'T', '', '', False), ('batch_mean', 'T', '', '', False), "
                   "('batch_variance', 'T', '', '', False), ('reserve_space_1', 'T', '', '', "
                   "False), ('reserve_space_2', 'T', '', '', False)), {'T': ('type', None, None, "
                   "_ALLOWED[32]), 'epsilon': ('float', None, None, None), "
                   "'exponential_avg_factor': ('float', None, None, None), 'data_format': "
                   "('string', None, None, _ALLOWED[43]), 'is_training': ('bool', None, None, "
                   'None)})',
 'FusedBatchNormGrad': "((('y_backprop', 'T', '', '', False), ('x', 'T', '', '', False), "
                       "('scale', 'T', '', '', False), ('reserve_space_1', 'T', '', '', False), "
                       "('reserve_space_2', 'T', '', '', False)), (('x_backprop', 'T', '', '', "
                       "False), ('scale_backprop', 'T', '', '', False), ('offset_backprop', 'T', "
                       "'', '', False), ('reserve_space_3', 'T', '', '', False), "
                       "('reserve_space_4', 'T', '', '', False)), {'T': ('type', None, None, "
                       "_ALLOWED[32]), 'epsilon': ('float', None, None, None), 'data_format': "
                       "('string', None, None, _ALLOWED[43]), 'is_training': ('bool', None, None, "
                       'None)})',
 'FusedBatchNormGradV2': "((('y_backprop', 'T', '', '', False), ('x', 'T', '', '', False), "
                         "('scale', 'DT_FLOAT', '', '', False), ('reserve_space_1', 'U', '', '', "
                         "False), ('reserve_space_2', 'U', '', '', False)), (('x_backprop', 'T', "
                         "'', '', False), ('scale_backprop', 'U', '', '', False), "
                         "('offset_backprop', 'U', '', '', False), ('reserve_space_3', 'U', '', "
                         "'', False), ('reserve_space_4', 'U', '', '', False)), {'T': ('type', "
                         "None, None, _ALLOWED[26]), 'U': ('type', None, None, _ALLOWED[32]), "
                         "'epsilon': ('float', None, None, None), 'data_format': ('string', None, "
                         "None, _ALLOWED[43]), 'is_training': ('bool', None, None, None)})",
 'FusedBatchNormGradV3': "((('y_backprop', 'T', '', '', False), ('x', 'T', '', '', False), "
                         "('scale', 'DT_FLOAT', '', '', False), ('reserve_space_1', 'U', '', '', "
                         "False), ('reserve_space_2', 'U', '', '', False), ('reserve_space_3', "
                         "'U', '', '', False)), (('x_backprop', 'T', '', '', False), "
                         "('scale_backprop', 'U', '', '', False), ('offset_backprop', 'U', '', "
                         "'', False), ('reserve_space_4', 'U', '', '', False), "
                         "('reserve_space_5', 'U', '', '', False)), {'T': ('type', None, None, "
                         "_ALLOWED[26]), 'U': ('type', None, None, _ALLOWED[32]), 'epsilon': "
                         "('float', None, None, None), 'data_format': ('string', None, None, "
                         "_ALLOWED[41]), 'is_training': ('bool', None, None, None)})",
 'FusedBatchNormV2': "((('x', 'T', '', '', False), ('scale', 'U', '', '', False), ('offset', 'U', "
                     "'', '', False), ('mean', 'U', '', '', False), ('variance', 'U', '', '', "
                     "False)), (('y', 'T', '', '', False), ('batch_mean', 'U', '', '', False), "
                     "('batch_variance', 'U', '', '', False), ('reserve_space_1', 'U', '', '', "
                     "False), ('reserve_space_2', 'U', '', '', False)), {'T': ('type', None, "
                     "None, _ALLOWED[26]), 'U': ('type', None, None, _ALLOWED[32]), 'epsilon': "
                     "('float', None, None, None), 'exponential_avg_factor': ('float', None, "
                     "None, None), 'data_format': ('string', None, None, _ALLOWED[43]), "
                     "'is_training': ('bool', None, None, None)})",
 'FusedBatchNormV3': "((('x', 'T', '', '', False), ('scale', 'U', '', '', False), ('offset', 'U', "
                     "'', '', False), ('mean', 'U', '', '', False), ('variance', 'U', '', '', "
                     "False)), (('y', 'T', '', '', False), ('batch_mean', 'U', '', '', False), "
                     "('batch_variance', 'U', '', '', False), ('reserve_space_1', 'U', '', '', "
                     "False), ('reserve_space_2', 'U', '', '', False), ('reserve_space_3', 'U', "
                     "'', '', False)), {'T': ('type', None, None, _ALLOWED[26]), 'U': ('type', "
                     "None, None, _ALLOWED[25]), 'epsilon': ('float', None, None, None), "
                     "'exponential_avg_factor': ('float', None, None, None), 'data_format': "
                     "('string', None, None, _ALLOWED[41]), 'is_training': ('bool', None, None, "
                     'None)})',
 'Gather': "((('params', 'Tparams', '', '', False), ('indices', 'Tindices', '', '', False)), "
           "(('output', 'Tparams', '', '', False),), {'validate_indices': ('bool', None, None, "
           "None), 'Tparams': ('type', None, None, None), 'Tindices': ('type', None, None, "
           '_ALLOWED[35])})',
 'GatherNd': "((('params', 'Tparams', '', '', False), ('indices', 'Tindices', '', '', False)), "
             "(('output', 'Tparams', '', '', False),), {'Tparams': ('type', None, None, None), "
             "'Tindices': ('type', None, None, _ALLOWED[33]), 'bad_indices_policy': ('string', "
             'None, None, None)})',
 'GatherV2': "((('params', 'Tparams', '', '', False), ('indices', 'Tindices', '', '', False), "
             "('axis', 'Taxis', '', '', False)), (('output', 'Tparams', '', '', False),), "
             "{'batch_dims': ('int', 0, None, None), 'Tparams': ('type', None, None, None), "
             "'Tindices': ('type', None, None, _ALLOWED[33]), 'Taxis': ('type', None, None, "
             '_ALLOWED[35])})',
 'Greater': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', '', "
            "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'GreaterEqual': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', "
                 "'', False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'Identity': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
             "('type', None, None, None)})",
 'IdentityN': "((('input', '', '', 'T', False),), (('output', '', '', 'T', False),), {'T': "
              "('list(type)', None, 1, None)})",
 'If': "((('cond', 'Tcond', '', '', False), ('input', '', '', 'Tin', False)), (('output', '', '', "
       "'Tout', False),), {'Tcond': ('type', None, None, None), 'Tin': ('list(type)', None, 0, "
       "None), 'Tout': ('list(type)', None, 0, None), 'then_branch': ('func', None, None, None), "
       "'else_branch': ('func', None, None, None), 'output_shapes': ('list(shape)', None, None, "
       'None)})',
 'Inv': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[6])})',
 'InvertPermutation': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': "
                      "('type', 'DT_INT32', None, _ALLOWED[35])})",
 'IsFinite': "((('x', 'T', '', '', False),), (('y', 'DT_BOOL', '', '', False),), {'T': ('type', "
             'None, None, _ALLOWED[15])})',
 'IsInf': "((('x', 'T', '', '', False),), (('y', 'DT_BOOL', '', '', False),), {'T': ('type', "
          'None, None, _ALLOWED[15])})',
 'IsNan': "((('x', 'T', '', '', False),), (('y', 'DT_BOOL', '', '', False),), {'T': ('type', "
          'None, None, _ALLOWED[15])})',
 'IsVariableInitialized': "((('ref', 'dtype', '', '', True),), (('is_initialized', 'DT_BOOL', '', "
                          "'', False),), {'dtype': ('type', None, None, None)})",
 'Iterator': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'shared_name': ('string', None, "
             "None, None), 'container': ('string', None, None, None), 'output_types': "
             "('list(type)', None, 1, None), 'output_shapes': ('list(shape)', None, 1, None)})",
 'IteratorFromStringHandle': "((('string_handle', 'DT_STRING', '', '', False),), "
                             "(('resource_handle', 'DT_RESOURCE', '', '', False),), "
                             "{'output_types': ('list(type)', (), 0, None), 'output_shapes': "
                             "('list(shape)', None, 0, None)})",
 'IteratorFromStringHandleV2': "((('string_handle', 'DT_STRING', '', '', False),), "
                               "(('resource_handle', 'DT_RESOURCE', '', '', False),), "
                               "{'output_types': ('list(type)', (), 0, None), 'output_shapes': "
                               "('list(shape)', None, 0, None)})",
 'IteratorGetNext': "((('iterator', 'DT_RESOURCE', '', '', False),), (('components', '', '', "
                    "'output_types', False),), {'output_types': ('list(type)', None, 1, None), "
                    "'output_shapes': ('list(shape)', None, 1, None)})",
 'IteratorGetNextAsOptional': "((('iterator', 'DT_RESOURCE', '', '', False),), (('optional', "
                              "'DT_VARIANT', '', '', False),), {'output_types': ('list(type)', "
                              "None, 1, None), 'output_shapes': ('list(shape)', None, 1, None)})",
 'IteratorGetNextSync': "((('iterator', 'DT_RESOURCE', '', '', False),), (('components', '', '', "
                        "'output_types', False),), {'output_types': ('list(type)', None, 1, "
                        "None), 'output_shapes': ('list(shape)', None, 1, None)})",
 'IteratorToStringHandle': "((('resource_handle', 'DT_RESOURCE', '', '', False),), "
                           "(('string_handle', 'DT_STRING', '', '', False),), {})",
 'IteratorV2': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'shared_name': ('string', "
               "None, None, None), 'container': ('string', None, None, None), 'output_types': "
               "('list(type)', None, 1, None), 'output_shapes': ('list(shape)', None, 1, None)})",
 'L2Loss': "((('t', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': ('type', "
           'None, None, _ALLOWED[15])})',
 'LeakyRelu': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), "
              "{'alpha': ('float', None, None, None), 'T': ('type', 'DT_FLOAT', None, "
              '_ALLOWED[15])})',
 'LeakyReluGrad': "((('gradients', 'T', '', '', False), ('features', 'T', '', '', False)), "
                  "(('backprops', 'T', '', '', False),), {'alpha': ('float', None, None, None), "
                  "'T': ('type', 'DT_FLOAT', None, _ALLOWED[15])})",
 'Less': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', '', "
         "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'LessEqual': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', '', "
              "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'Lgamma': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
           'None, _ALLOWED[15])})',
 'Log': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[4])})',
 'Log1p': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'LogSoftmax': "((('logits', 'T', '', '', False),), (('logsoftmax', 'T', '', '', False),), {'T': "
               "('type', None, None, _ALLOWED[15])})",
 'LogicalAnd': "((('x', 'DT_BOOL', '', '', False), ('y', 'DT_BOOL', '', '', False)), (('z', "
               "'DT_BOOL', '', '', False),), {})",
 'LogicalNot': "((('x', 'DT_BOOL', '', '', False),), (('y', 'DT_BOOL', '', '', False),), {})",
 'LogicalOr': "((('x', 'DT_BOOL', '', '', False), ('y', 'DT_BOOL', '', '', False)), (('z', "
              "'DT_BOOL', '', '', False),), {})",
 'LoopCond': "((('input', 'DT_BOOL', '', '', False),), (('output', 'DT_BOOL', '', '', False),), "
             '{})',
 'MakeIterator': "((('dataset', 'DT_VARIANT', '', '', False), ('iterator', 'DT_RESOURCE', '', '', "
                 'False)), (), {})',
 'MatMul': "((('a', 'T', '', '', False), ('b', 'T', '', '', False)), (('product', 'T', '', '', "
           "False),), {'transpose_a': ('bool', None, None, None), 'transpose_b': ('bool', None, "
           "None, None), 'T': ('type', None, None, _ALLOWED[14]), 'grad_a': ('bool', None, None, "
           "None), 'grad_b': ('bool', None, None, None)})",
 'Max': "((('input', 'T', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
        "(('output', 'T', '', '', False),), {'keep_dims': ('bool', None, None, None), 'T': "
        "('type', None, None, _ALLOWED[18]), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'MaxPool': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': ('type', "
            "'DT_FLOAT', None, _ALLOWED[20]), 'ksize': ('list(int)', None, 4, None), 'strides': "
            "('list(int)', None, 4, None), 'padding': ('string', None, None, _ALLOWED[39]), "
            "'explicit_paddings': ('list(int)', (), None, None), 'data_format': ('string', None, "
            'None, _ALLOWED[42])})',
 'MaxPoolGrad': "((('orig_input', 'T', '', '', False), ('orig_output', 'T', '', '', False), "
                "('grad', 'T', '', '', False)), (('output', 'T', '', '', False),), {'ksize': "
                "('list(int)', None, 4, None), 'strides': ('list(int)', None, 4, None), "
                "'padding': ('string', None, None, _ALLOWED[39]), 'explicit_paddings': "
                "('list(int)', (), None, None), 'data_format': ('string', None, None, "
                "_ALLOWED[43]), 'T': ('type', 'DT_FLOAT', None, _ALLOWED[22])})",
 'MaxPoolGradV2': "((('orig_input', 'T', '', '', False), ('orig_output', 'T', '', '', False), "
                  "('grad', 'T', '', '', False), ('ksize', 'DT_INT32', '', '', False), "
                  "('strides', 'DT_INT32', '', '', False)), (('output', 'T', '', '', False),), "
                  "{'padding': ('string', None, None, _ALLOWED[45]), 'data_format': ('string', "
                  "None, None, _ALLOWED[43]), 'T': ('type', 'DT_FLOAT', None, _ALLOWED[22])})",
 'MaxPoolV2': "((('input', 'T', '', '', False), ('ksize', 'DT_INT32', '', '', False), ('strides', "
              "'DT_INT32', '', '', False)), (('output', 'T', '', '', False),), {'T': ('type', "
              "'DT_FLOAT', None, _ALLOWED[20]), 'padding': ('string', None, None, _ALLOWED[45]), "
              "'data_format': ('string', None, None, _ALLOWED[42])})",
 'Maximum': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
            "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'Mean': "((('input', 'T', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
         "(('output', 'T', '', '', False),), {'keep_dims': ('bool', None, None, None), 'T': "
         "('type', None, None, _ALLOWED[7]), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Merge': "((('inputs', 'T', 'N', '', False),), (('output', 'T', '', '', False), ('value_index', "
          "'DT_INT32', '', '', False)), {'T': ('type', None, None, None), 'N': ('int', None, 1, "
          'None)})',
 'Min': "((('input', 'T', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
        "(('output', 'T', '', '', False),), {'keep_dims': ('bool', None, None, None), 'T': "
        "('type', None, None, _ALLOWED[18]), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Minimum': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
            "False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'MirrorPad': "((('input', 'T', '', '', False), ('paddings', 'Tpaddings', '', '', False)), "
              "(('output', 'T', '', '', False),), {'T': ('type', None, None, None), 'Tpaddings': "
              "('type', 'DT_INT32', None, _ALLOWED[35]), 'mode': ('string', None, None, "
              '_ALLOWED[44])})',
 'Mod': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[16])})",
 'Mul': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[10])})",
 'MulNoNan': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'MultiDeviceIterator': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'devices': "
                        "('list(string)', None, 1, None), 'shared_name': ('string', None, None, "
                        "None), 'container': ('string', None, None, None), 'output_types': "
                        "('list(type)', None, 1, None), 'output_shapes': ('list(shape)', None, 1, "
                        'None)})',
 'MultiDeviceIteratorGetNextFromShard': "((('multi_device_iterator', 'DT_RESOURCE', '', '', "
                                        "False), ('shard_num', 'DT_INT32', '', '', False), "
                                        "('incarnation_id', 'DT_INT64', '', '', False)), "
                                        "(('components', '', '', 'output_types', False),), "
                                        "{'output_types': ('list(type)', None, 1, None), "
                                        "'output_shapes': ('list(shape)', None, 1, None)})",
 'Multinomial': "((('logits', 'T', '', '', False), ('num_samples', 'DT_INT32', '', '', False)), "
                "(('output', 'output_dtype', '', '', False),), {'seed': ('int', 0, None, None), "
                "'seed2': ('int', 0, None, None), 'T': ('type', None, None, _ALLOWED[22]), "
                "'output_dtype': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'MutexLock': "((('mutex', 'DT_RESOURCE', '', '', False),), (('mutex_lock', 'DT_VARIANT', '', '', "
              'False),), {})',
 'MutexV2': "((), (('resource', 'DT_RESOURCE', '', '', False),), {'container': ('string', None, "
            "None, None), 'shared_name': ('string', None, None, None)})",
 'Neg': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[6])})',
 'NextIteration': "((('data', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
                  "('type', None, None, None)})",
 'NoOp': '((), (), {})',
 'NonDeterministicInts': "((('shape', 'shape_dtype', '', '', False),), (('output', 'dtype', '', "
                         "'', False),), {'dtype': ('type', 'DT_INT64', None, None), "
                         "'shape_dtype': ('type', 'DT_INT64', None, None)})",
 'NotEqual': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'DT_BOOL', '', '', "
             "False),), {'T': ('type', None, None, None), 'incompatible_shape_error': ('bool', "
             'None, None, None)})',
 'OneHot': "((('indices', 'TI', '', '', False), ('depth', 'DT_INT32', '', '', False), "
           "('on_value', 'T', '', '', False), ('off_value', 'T', '', '', False)), (('output', "
           "'T', '', '', False),), {'axis': ('int', -1, None, None), 'T': ('type', None, None, "
           "None), 'TI': ('type', 'DT_INT64', None, _ALLOWED[37])})",
 'OneShotIterator': "((), (('handle', 'DT_RESOURCE', '', '', False),), {'dataset_factory': "
                    "('func', None, None, None), 'output_types': ('list(type)', None, 1, None), "
                    "'output_shapes': ('list(shape)', None, 1, None), 'container': ('string', "
                    "None, None, None), 'shared_name': ('string', None, None, None)})",
 'OnesLike': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
             'None, _ALLOWED[2])})',
 'OptionalFromValue': "((('components', '', '', 'Toutput_types', False),), (('optional', "
                      "'DT_VARIANT', '', '', False),), {'Toutput_types': ('list(type)', None, 1, "
                      'None)})',
 'OptionalGetValue': "((('optional', 'DT_VARIANT', '', '', False),), (('components', '', '', "
                     "'output_types', False),), {'output_types': ('list(type)', None, 1, None), "
                     "'output_shapes': ('list(shape)', None, 1, None)})",
 'OptionalHasValue': "((('optional', 'DT_VARIANT', '', '', False),), (('has_value', 'DT_BOOL', "
                     "'', '', False),), {})",
 'OptionalNone': "((), (('optional', 'DT_VARIANT', '', '', False),), {})",
 'Pack': "((('values', 'T', 'N', '', False),), (('output', 'T', '', '', False),), {'N': ('int', "
         "None, 1, None), 'T': ('type', None, None, None), 'axis': ('int', 0, None, None)})",
 'Pad': "((('input', 'T', '', '', False), ('paddings', 'Tpaddings', '', '', False)), (('output', "
        "'T', '', '', False),), {'T': ('type', None, None, None), 'Tpaddings': ('type', "
        "'DT_INT32', None, _ALLOWED[35])})",
 'PadV2': "((('input', 'T', '', '', False), ('paddings', 'Tpaddings', '', '', False), "
          "('constant_values', 'T', '', '', False)), (('output', 'T', '', '', False),), {'T': "
          "('type', None, None, None), 'Tpaddings': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'ParameterizedTruncatedNormal': "((('shape', 'T', '', '', False), ('means', 'dtype', '', '', "
                                 "False), ('stdevs', 'dtype', '', '', False), ('minvals', "
                                 "'dtype', '', '', False), ('maxvals', 'dtype', '', '', False)), "
                                 "(('output', 'dtype', '', '', False),), {'seed': ('int', 0, "
                                 "None, None), 'seed2': ('int', 0, None, None), 'dtype': ('type', "
                                 "None, None, _ALLOWED[15]), 'T': ('type', None, None, "
                                 '_ALLOWED[35])})',
 'PartitionedCall': "((('args', '', '', 'Tin', False),), (('output', '', '', 'Tout', False),), "
                    "{'Tin': ('list(type)', None, 0, None), 'Tout': ('list(type)', None, 0, "
                    "None), 'f': ('func', None, None, None), 'config': ('string', None, None, "
                    "None), 'config_proto': ('string', None, None, None), 'executor_type': "
                    "('string', None, None, None)})",
 'Placeholder': "((), (('output', 'dtype', '', '', False),), {'dtype': ('type', None, None, "
                "None), 'shape': ('shape', None, None, None)})",
 'Pow': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[6])})",
 'PreventGradient': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
                    "('type', None, None, None), 'message': ('string', None, None, None)})",
 'Prod': "((('input', 'T', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
         "(('output', 'T', '', '', False),), {'keep_dims': ('bool', None, None, None), 'T': "
         "('type', None, None, _ALLOWED[7]), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'QueueCloseV2': "((('handle', 'DT_RESOURCE', '', '', False),), (), {'cancel_pending_enqueues': "
                 "('bool', None, None, None)})",
 'QueueDequeueManyV2': "((('handle', 'DT_RESOURCE', '', '', False), ('n', 'DT_INT32', '', '', "
                       "False)), (('components', '', '', 'component_types', False),), "
                       "{'component_types': ('list(type)', None, 1, None), 'timeout_ms': ('int', "
                       '-1, None, None)})',
 'QueueDequeueV2': "((('handle', 'DT_RESOURCE', '', '', False),), (('components', '', '', "
                   "'component_types', False),), {'component_types': ('list(type)', None, 1, "
                   "None), 'timeout_ms': ('int', -1, None, None)})",
 'QueueEnqueueManyV2': "((('handle', 'DT_RESOURCE', '', '', False), ('components', '', '', "
                       "'Tcomponents', False)), (), {'Tcomponents': ('list(type)', None, 1, "
                       "None), 'timeout_ms': ('int', -1, None, None)})",
 'QueueEnqueueV2': "((('handle', 'DT_RESOURCE', '', '', False), ('components', '', '', "
                   "'Tcomponents', False)), (), {'Tcomponents': ('list(type)', None, 1, None), "
                   "'timeout_ms': ('int', -1, None, None)})",
 'QueueSizeV2': "((('handle', 'DT_RESOURCE', '', '', False),), (('size', 'DT_INT32', '', '', "
                'False),), {})',
 'RandomCrop': "((('image', 'T', '', '', False), ('size', 'DT_INT64', '', '', False)), "
               "(('output', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[31]), "
               "'seed': ('int', 0, None, None), 'seed2': ('int', 0, None, None)})",
 'RandomGamma': "((('shape', 'S', '', '', False), ('alpha', 'T', '', '', False)), (('output', "
                "'T', '', '', False),), {'seed': ('int', 0, None, None), 'seed2': ('int', 0, "
                "None, None), 'S': ('type', None, None, _ALLOWED[35]), 'T': ('type', None, None, "
                '_ALLOWED[28])})',
 'RandomGammaGrad': "((('alpha', 'T', '', '', False), ('sample', 'T', '', '', False)), "
                    "(('output', 'T', '', '', False),), {'T': ('type', None, None, "
                    '_ALLOWED[27])})',
 'RandomPoisson': "((('shape', 'S', '', '', False), ('rate', 'dtype', '', '', False)), "
                  "(('output', 'dtype', '', '', False),), {'seed': ('int', 0, None, None), "
                  "'seed2': ('int', 0, None, None), 'S': ('type', None, None, _ALLOWED[35]), "
                  "'dtype': ('type', None, None, _ALLOWED[28])})",
 'RandomPoissonV2': "((('shape', 'S', '', '', False), ('rate', 'R', '', '', False)), (('output', "
                    "'dtype', '', '', False),), {'seed': ('int', 0, None, None), 'seed2': ('int', "
                    "0, None, None), 'S': ('type', None, None, _ALLOWED[35]), 'R': ('type', "
                    "'DT_DOUBLE', None, _ALLOWED[29]), 'dtype': ('type', 'DT_INT64', None, "
                    '_ALLOWED[29])})',
 'RandomShuffle': "((('value', 'T', '', '', False),), (('output', 'T', '', '', False),), {'seed': "
                  "('int', 0, None, None), 'seed2': ('int', 0, None, None), 'T': ('type', None, "
                  'None, None)})',
 'RandomStandardNormal': "((('shape', 'T', '', '', False),), (('output', 'dtype', '', '', "
                         "False),), {'seed': ('int', 0, None, None), 'seed2': ('int', 0, None, "
                         "None), 'dtype': ('type', None, None, _ALLOWED[15]), 'T': ('type', None, "
                         'None, _ALLOWED[35])})',
 'RandomUniform': "((('shape', 'T', '', '', False),), (('output', 'dtype', '', '', False),), "
                  "{'seed': ('int', 0, None, None), 'seed2': ('int', 0, None, None), 'dtype': "
                  "('type', None, None, _ALLOWED[15]), 'T': ('type', None, None, _ALLOWED[35])})",
 'RandomUniformInt': "((('shape', 'T', '', '', False), ('minval', 'Tout', '', '', False), "
                     "('maxval', 'Tout', '', '', False)), (('output', 'Tout', '', '', False),), "
                     "{'seed': ('int', 0, None, None), 'seed2': ('int', 0, None, None), 'Tout': "
                     "('type', None, None, _ALLOWED[35]), 'T': ('type', None, None, "
                     '_ALLOWED[35])})',
 'Range': "((('start', 'Tidx', '', '', False), ('limit', 'Tidx', '', '', False), ('delta', "
          "'Tidx', '', '', False)), (('output', 'Tidx', '', '', False),), {'Tidx': ('type', "
          "'DT_INT32', None, _ALLOWED[21])})",
 'Rank': "((('input', 'T', '', '', False),), (('output', 'DT_INT32', '', '', False),), {'T': "
         "('type', None, None, None)})",
 'ReadVariableOp': "((('resource', 'DT_RESOURCE', '', '', False),), (('value', 'dtype', '', '', "
                   "False),), {'dtype': ('type', None, None, None)})",
 'RealDiv': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
            "False),), {'T': ('type', None, None, _ALLOWED[10])})",
 'Reciprocal': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
               'None, _ALLOWED[6])})',
 'ReciprocalGrad': "((('y', 'T', '', '', False), ('dy', 'T', '', '', False)), (('z', 'T', '', '', "
                   "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'RefEnter': "((('data', 'T', '', '', True),), (('output', 'T', '', '', True),), {'T': ('type', "
             "None, None, None), 'frame_name': ('string', None, None, None), 'is_constant': "
             "('bool', None, None, None), 'parallel_iterations': ('int', 10, None, None)})",
 'RefExit': "((('data', 'T', '', '', True),), (('output', 'T', '', '', True),), {'T': ('type', "
            'None, None, None)})',
 'RefIdentity': "((('input', 'T', '', '', True),), (('output', 'T', '', '', True),), {'T': "
                "('type', None, None, None)})",
 'RefMerge': "((('inputs', 'T', 'N', '', True),), (('output', 'T', '', '', True), ('value_index', "
             "'DT_INT32', '', '', False)), {'T': ('type', None, None, None), 'N': ('int', None, "
             '1, None)})',
 'RefNextIteration': "((('data', 'T', '', '', True),), (('output', 'T', '', '', True),), {'T': "
                     "('type', None, None, None)})",
 'RefSwitch': "((('data', 'T', '', '', True), ('pred', 'DT_BOOL', '', '', False)), "
              "(('output_false', 'T', '', '', True), ('output_true', 'T', '', '', True)), {'T': "
              "('type', None, None, None)})",
 'Relu': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
         "('type', None, None, _ALLOWED[19])})",
 'Relu6': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
          "('type', None, None, _ALLOWED[22])})",
 'Relu6Grad': "((('gradients', 'T', '', '', False), ('features', 'T', '', '', False)), "
              "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'ReluGrad': "((('gradients', 'T', '', '', False), ('features', 'T', '', '', False)), "
             "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[22])})",
 'Reshape': "((('tensor', 'T', '', '', False), ('shape', 'Tshape', '', '', False)), (('output', "
            "'T', '', '', False),), {'T': ('type', None, None, None), 'Tshape': ('type', "
            "'DT_INT32', None, _ALLOWED[35])})",
 'ResourceApplyAdaMax': "((('var', 'DT_RESOURCE', '', '', False), ('m', 'DT_RESOURCE', '', '', "
                        "False), ('v', 'DT_RESOURCE', '', '', False), ('beta1_power', 'T', '', "
                        "'', False), ('lr', 'T', '', '', False), ('beta1', 'T', '', '', False), "
                        "('beta2', 'T', '', '', False), ('epsilon', 'T', '', '', False), ('grad', "
                        "'T', '', '', False)), (), {'T': ('type', None, None, _ALLOWED[7]), "
                        "'use_locking': ('bool', None, None, None)})",
 'ResourceApplyAdadelta': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', "
                          "'', False), ('accum_update', 'DT_RESOURCE', '', '', False), ('lr', "
                          "'T', '', '', False), ('rho', 'T', '', '', False), ('epsilon', 'T', '', "
                          "'', False), ('grad', 'T', '', '', False)), (), {'T': ('type', None, "
                          "None, _ALLOWED[7]), 'use_locking': ('bool', None, None, None)})",
 'ResourceApplyAdagrad': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', "
                         "'', False), ('lr', 'T', '', '', False), ('grad', 'T', '', '', False)), "
                         "(), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', "
                         "None, None, None), 'update_slots': ('bool', None, None, None)})",
 'ResourceApplyAdagradDA': "((('var', 'DT_RESOURCE', '', '', False), ('gradient_accumulator', "
                           "'DT_RESOURCE', '', '', False), ('gradient_squared_accumulator', "
                           "'DT_RESOURCE', '', '', False), ('grad', 'T', '', '', False), ('lr', "
                           "'T', '', '', False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', "
                           "False), ('global_step', 'DT_INT64', '', '', False)), (), {'T': "
                           "('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, "
                           'None, None)})',
 'ResourceApplyAdagradV2': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', "
                           "'', False), ('lr', 'T', '', '', False), ('epsilon', 'T', '', '', "
                           "False), ('grad', 'T', '', '', False)), (), {'T': ('type', None, None, "
                           "_ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                           "'update_slots': ('bool', None, None, None)})",
 'ResourceApplyAdam': "((('var', 'DT_RESOURCE', '', '', False), ('m', 'DT_RESOURCE', '', '', "
                      "False), ('v', 'DT_RESOURCE', '', '', False), ('beta1_power', 'T', '', '', "
                      "False), ('beta2_power', 'T', '', '', False), ('lr', 'T', '', '', False), "
                      "('beta1', 'T', '', '', False), ('beta2', 'T', '', '', False), ('epsilon', "
                      "'T', '', '', False), ('grad', 'T', '', '', False)), (), {'T': ('type', "
                      "None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                      "'use_nesterov': ('bool', None, None, None)})",
 'ResourceApplyAdamWithAmsgrad': "((('var', 'DT_RESOURCE', '', '', False), ('m', 'DT_RESOURCE', "
                                 "'', '', False), ('v', 'DT_RESOURCE', '', '', False), ('vhat', "
                                 "'DT_RESOURCE', '', '', False), ('beta1_power', 'T', '', '', "
                                 "False), ('beta2_power', 'T', '', '', False), ('lr', 'T', '', "
                                 "'', False), ('beta1', 'T', '', '', False), ('beta2', 'T', '', "
                                 "'', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', "
                                 "'', False)), (), {'T': ('type', None, None, _ALLOWED[7]), "
                                 "'use_locking': ('bool', None, None, None)})",
 'ResourceApplyAddSign': "((('var', 'DT_RESOURCE', '', '', False), ('m', 'DT_RESOURCE', '', '', "
                         "False), ('lr', 'T', '', '', False), ('alpha', 'T', '', '', False), "
                         "('sign_decay', 'T', '', '', False), ('beta', 'T', '', '', False), "
                         "('grad', 'T', '', '', False)), (), {'T': ('type', None, None, "
                         "_ALLOWED[7]), 'use_locking': ('bool', None, None, None)})",
 'ResourceApplyCenteredRMSProp': "((('var', 'DT_RESOURCE', '', '', False), ('mg', 'DT_RESOURCE', "
                                 "'', '', False), ('ms', 'DT_RESOURCE', '', '', False), ('mom', "
                                 "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', False), "
                                 "('rho', 'T', '', '', False), ('momentum', 'T', '', '', False), "
                                 "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), "
                                 "(), {'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                                 "('bool', None, None, None)})",
 'ResourceApplyFtrl': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', '', "
                      "False), ('linear', 'DT_RESOURCE', '', '', False), ('grad', 'T', '', '', "
                      "False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), ('l2', "
                      "'T', '', '', False), ('lr_power', 'T', '', '', False)), (), {'T': ('type', "
                      "None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                      "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'ResourceApplyFtrlV2': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', "
                        "'', False), ('linear', 'DT_RESOURCE', '', '', False), ('grad', 'T', '', "
                        "'', False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), "
                        "('l2', 'T', '', '', False), ('l2_shrinkage', 'T', '', '', False), "
                        "('lr_power', 'T', '', '', False)), (), {'T': ('type', None, None, "
                        "_ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                        "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'ResourceApplyGradientDescent': "((('var', 'DT_RESOURCE', '', '', False), ('alpha', 'T', '', '', "
                                 "False), ('delta', 'T', '', '', False)), (), {'T': ('type', "
                                 "None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, "
                                 'None)})',
 'ResourceApplyKerasMomentum': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', "
                               "'', '', False), ('lr', 'T', '', '', False), ('grad', 'T', '', '', "
                               "False), ('momentum', 'T', '', '', False)), (), {'T': ('type', "
                               "None, None, _ALLOWED[7]), 'use_locking': ('bool', None, None, "
                               "None), 'use_nesterov': ('bool', None, None, None)})",
 'ResourceApplyMomentum': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', '', "
                          "'', False), ('lr', 'T', '', '', False), ('grad', 'T', '', '', False), "
                          "('momentum', 'T', '', '', False)), (), {'T': ('type', None, None, "
                          "_ALLOWED[7]), 'use_locking': ('bool', None, None, None), "
                          "'use_nesterov': ('bool', None, None, None)})",
 'ResourceApplyPowerSign': "((('var', 'DT_RESOURCE', '', '', False), ('m', 'DT_RESOURCE', '', '', "
                           "False), ('lr', 'T', '', '', False), ('logbase', 'T', '', '', False), "
                           "('sign_decay', 'T', '', '', False), ('beta', 'T', '', '', False), "
                           "('grad', 'T', '', '', False)), (), {'T': ('type', None, None, "
                           "_ALLOWED[7]), 'use_locking': ('bool', None, None, None)})",
 'ResourceApplyProximalAdagrad': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                 "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', False), "
                                 "('l1', 'T', '', '', False), ('l2', 'T', '', '', False), "
                                 "('grad', 'T', '', '', False)), (), {'T': ('type', None, None, "
                                 "_ALLOWED[7]), 'use_locking': ('bool', None, None, None)})",
 'ResourceApplyProximalGradientDescent': "((('var', 'DT_RESOURCE', '', '', False), ('alpha', 'T', "
                                         "'', '', False), ('l1', 'T', '', '', False), ('l2', 'T', "
                                         "'', '', False), ('delta', 'T', '', '', False)), (), "
                                         "{'T': ('type', None, None, _ALLOWED[7]), 'use_locking': "
                                         "('bool', None, None, None)})",
 'ResourceApplyRMSProp': "((('var', 'DT_RESOURCE', '', '', False), ('ms', 'DT_RESOURCE', '', '', "
                         "False), ('mom', 'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', "
                         "False), ('rho', 'T', '', '', False), ('momentum', 'T', '', '', False), "
                         "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False)), (), "
                         "{'T': ('type', None, None, _ALLOWED[7]), 'use_locking': ('bool', None, "
                         'None, None)})',
 'ResourceGather': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', '', "
                   "False)), (('output', 'dtype', '', '', False),), {'batch_dims': ('int', 0, "
                   "None, None), 'validate_indices': ('bool', None, None, None), 'dtype': "
                   "('type', None, None, None), 'Tindices': ('type', None, None, _ALLOWED[35])})",
 'ResourceGatherNd': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                     "'', False)), (('output', 'dtype', '', '', False),), {'dtype': ('type', "
                     "None, None, None), 'Tindices': ('type', None, None, _ALLOWED[35])})",
 'ResourceScatterAdd': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterDiv': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterMax': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterMin': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterMul': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterNdAdd': "((('ref', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                         "'', False), ('updates', 'T', '', '', False)), (), {'T': ('type', None, "
                         "None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                         "'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                         "('string', None, None, None)})",
 'ResourceScatterNdMax': "((('ref', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                         "'', False), ('updates', 'T', '', '', False)), (), {'T': ('type', None, "
                         "None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                         "'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                         "('string', None, None, None)})",
 'ResourceScatterNdMin': "((('ref', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                         "'', False), ('updates', 'T', '', '', False)), (), {'T': ('type', None, "
                         "None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                         "'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                         "('string', None, None, None)})",
 'ResourceScatterNdSub': "((('ref', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                         "'', False), ('updates', 'T', '', '', False)), (), {'T': ('type', None, "
                         "None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                         "'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                         "('string', None, None, None)})",
 'ResourceScatterNdUpdate': "((('ref', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                            "'', False), ('updates', 'T', '', '', False)), (), {'T': ('type', "
                            "None, None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                            "'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                            "('string', None, None, None)})",
 'ResourceScatterSub': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', '', "
                       "'', False), ('updates', 'dtype', '', '', False)), (), {'dtype': ('type', "
                       "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                       '_ALLOWED[35])})',
 'ResourceScatterUpdate': "((('resource', 'DT_RESOURCE', '', '', False), ('indices', 'Tindices', "
                          "'', '', False), ('updates', 'dtype', '', '', False)), (), {'dtype': "
                          "('type', None, None, None), 'Tindices': ('type', None, None, "
                          '_ALLOWED[35])})',
 'ResourceSparseApplyAdadelta': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                "'DT_RESOURCE', '', '', False), ('accum_update', 'DT_RESOURCE', "
                                "'', '', False), ('lr', 'T', '', '', False), ('rho', 'T', '', '', "
                                "False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', '', "
                                "False), ('indices', 'Tindices', '', '', False)), (), {'T': "
                                "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, "
                                "None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None)})",
 'ResourceSparseApplyAdagrad': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', "
                               "'', '', False), ('lr', 'T', '', '', False), ('grad', 'T', '', '', "
                               "False), ('indices', 'Tindices', '', '', False)), (), {'T': "
                               "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, "
                               "None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                               "'update_slots': ('bool', None, None, None)})",
 'ResourceSparseApplyAdagradDA': "((('var', 'DT_RESOURCE', '', '', False), "
                                 "('gradient_accumulator', 'DT_RESOURCE', '', '', False), "
                                 "('gradient_squared_accumulator', 'DT_RESOURCE', '', '', False), "
                                 "('grad', 'T', '', '', False), ('indices', 'Tindices', '', '', "
                                 "False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), "
                                 "('l2', 'T', '', '', False), ('global_step', 'DT_INT64', '', '', "
                                 "False)), (), {'T': ('type', None, None, _ALLOWED[7]), "
                                 "'Tindices': ('type', None, None, _ALLOWED[35]), 'use_locking': "
                                 "('bool', None, None, None)})",
 'ResourceSparseApplyAdagradV2': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                 "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', False), "
                                 "('epsilon', 'T', '', '', False), ('grad', 'T', '', '', False), "
                                 "('indices', 'Tindices', '', '', False)), (), {'T': ('type', "
                                 "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                                 "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                                 "'update_slots': ('bool', None, None, None)})",
 'ResourceSparseApplyCenteredRMSProp': "((('var', 'DT_RESOURCE', '', '', False), ('mg', "
                                       "'DT_RESOURCE', '', '', False), ('ms', 'DT_RESOURCE', '', "
                                       "'', False), ('mom', 'DT_RESOURCE', '', '', False), ('lr', "
                                       "'T', '', '', False), ('rho', 'T', '', '', False), "
                                       "('momentum', 'T', '', '', False), ('epsilon', 'T', '', "
                                       "'', False), ('grad', 'T', '', '', False), ('indices', "
                                       "'Tindices', '', '', False)), (), {'T': ('type', None, "
                                       "None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                                       "_ALLOWED[35]), 'use_locking': ('bool', None, None, "
                                       'None)})',
 'ResourceSparseApplyFtrl': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', "
                            "'', '', False), ('linear', 'DT_RESOURCE', '', '', False), ('grad', "
                            "'T', '', '', False), ('indices', 'Tindices', '', '', False), ('lr', "
                            "'T', '', '', False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', "
                            "False), ('lr_power', 'T', '', '', False)), (), {'T': ('type', None, "
                            "None, _ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                            "'use_locking': ('bool', None, None, None), 'multiply_linear_by_lr': "
                            "('bool', None, None, None)})",
 'ResourceSparseApplyFtrlV2': "((('var', 'DT_RESOURCE', '', '', False), ('accum', 'DT_RESOURCE', "
                              "'', '', False), ('linear', 'DT_RESOURCE', '', '', False), ('grad', "
                              "'T', '', '', False), ('indices', 'Tindices', '', '', False), "
                              "('lr', 'T', '', '', False), ('l1', 'T', '', '', False), ('l2', "
                              "'T', '', '', False), ('l2_shrinkage', 'T', '', '', False), "
                              "('lr_power', 'T', '', '', False)), (), {'T': ('type', None, None, "
                              "_ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                              "'use_locking': ('bool', None, None, None), "
                              "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'ResourceSparseApplyKerasMomentum': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                     "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', False), "
                                     "('grad', 'T', '', '', False), ('indices', 'Tindices', '', "
                                     "'', False), ('momentum', 'T', '', '', False)), (), {'T': "
                                     "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', "
                                     "None, None, _ALLOWED[35]), 'use_locking': ('bool', None, "
                                     "None, None), 'use_nesterov': ('bool', None, None, None)})",
 'ResourceSparseApplyMomentum': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', False), "
                                "('grad', 'T', '', '', False), ('indices', 'Tindices', '', '', "
                                "False), ('momentum', 'T', '', '', False)), (), {'T': ('type', "
                                "None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                                "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                                "'use_nesterov': ('bool', None, None, None)})",
 'ResourceSparseApplyProximalAdagrad': "((('var', 'DT_RESOURCE', '', '', False), ('accum', "
                                       "'DT_RESOURCE', '', '', False), ('lr', 'T', '', '', "
                                       "False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', "
                                       "False), ('grad', 'T', '', '', False), ('indices', "
                                       "'Tindices', '', '', False)), (), {'T': ('type', None, "
                                       "None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                                       "_ALLOWED[35]), 'use_locking': ('bool', None, None, "
                                       'None)})',
 'ResourceSparseApplyProximalGradientDescent': "((('var', 'DT_RESOURCE', '', '', False), "
                                               "('alpha', 'T', '', '', False), ('l1', 'T', '', "
                                               "'', False), ('l2', 'T', '', '', False), ('grad', "
                                               "'T', '', '', False), ('indices', 'Tindices', '', "
                                               "'', False)), (), {'T': ('type', None, None, "
                                               "_ALLOWED[7]), 'Tindices': ('type', None, None, "
                                               "_ALLOWED[35]), 'use_locking': ('bool', None, "
                                               'None, None)})',
 'ResourceSparseApplyRMSProp': "((('var', 'DT_RESOURCE', '', '', False), ('ms', 'DT_RESOURCE', "
                               "'', '', False), ('mom', 'DT_RESOURCE', '', '', False), ('lr', "
                               "'T', '', '', False), ('rho', 'T', '', '', False), ('momentum', "
                               "'T', '', '', False), ('epsilon', 'T', '', '', False), ('grad', "
                               "'T', '', '', False), ('indices', 'Tindices', '', '', False)), (), "
                               "{'T': ('type', None, None, _ALLOWED[7]), 'Tindices': ('type', "
                               "None, None, _ALLOWED[35]), 'use_locking': ('bool', None, None, "
                               'None)})',
 'ResourceStridedSliceAssign': "((('ref', 'DT_RESOURCE', '', '', False), ('begin', 'Index', '', "
                               "'', False), ('end', 'Index', '', '', False), ('strides', 'Index', "
                               "'', '', False), ('value', 'T', '', '', False)), (), {'T': "
                               "('type', None, None, None), 'Index': ('type', None, None, "
                               "_ALLOWED[35]), 'begin_mask': ('int', 0, None, None), 'end_mask': "
                               "('int', 0, None, None), 'ellipsis_mask': ('int', 0, None, None), "
                               "'new_axis_mask': ('int', 0, None, None), 'shrink_axis_mask': "
                               "('int', 0, None, None)})",
 'Reverse': "((('tensor', 'T', '', '', False), ('dims', 'DT_BOOL', '', '', False)), (('output', "
            "'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[1])})",
 'ReverseV2': "((('tensor', 'T', '', '', False), ('axis', 'Tidx', '', '', False)), (('output', "
              "'T', '', '', False),), {'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35]), 'T': "
              "('type', None, None, _ALLOWED[1])})",
 'Rint': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[15])})',
 'RngReadAndSkip': "((('resource', 'DT_RESOURCE', '', '', False), ('alg', 'DT_INT32', '', '', "
                   "False), ('delta', 'DT_UINT64', '', '', False)), (('value', 'DT_INT64', '', "
                   "'', False),), {})",
 'RngSkip': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', 'DT_INT64', '', '', "
            "False), ('delta', 'DT_INT64', '', '', False)), (), {})",
 'Round': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[6])})',
 'Rsqrt': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
          'None, _ALLOWED[4])})',
 'RsqrtGrad': "((('y', 'T', '', '', False), ('dy', 'T', '', '', False)), (('z', 'T', '', '', "
              "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'ScatterAdd': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterDiv': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterMax': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[24]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterMin': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[24]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterMul': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterNd': "((('indices', 'Tindices', '', '', False), ('updates', 'T', '', '', False), "
              "('shape', 'Tindices', '', '', False)), (('output', 'T', '', '', False),), {'T': "
              "('type', None, None, None), 'Tindices': ('type', None, None, _ALLOWED[33]), "
              "'bad_indices_policy': ('string', None, None, None)})",
 'ScatterNdAdd': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), "
                 "('updates', 'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': "
                 "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                 "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                 "('string', None, None, None)})",
 'ScatterNdSub': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), "
                 "('updates', 'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': "
                 "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                 "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), 'bad_indices_policy': "
                 "('string', None, None, None)})",
 'ScatterNdUpdate': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), "
                    "('updates', 'T', '', '', False)), (('output_ref', 'T', '', '', True),), "
                    "{'T': ('type', None, None, None), 'Tindices': ('type', None, None, "
                    "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                    "'bad_indices_policy': ('string', None, None, None)})",
 'ScatterSub': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), ('updates', "
               "'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': ('type', None, "
               "None, _ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
               "'use_locking': ('bool', None, None, None)})",
 'ScatterUpdate': "((('ref', 'T', '', '', True), ('indices', 'Tindices', '', '', False), "
                  "('updates', 'T', '', '', False)), (('output_ref', 'T', '', '', True),), {'T': "
                  "('type', None, None, None), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                  "'use_locking': ('bool', None, None, None)})",
 'SegmentMean': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', False)), "
                "(('output', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[7]), "
                "'Tindices': ('type', None, None, _ALLOWED[35])})",
 'SegmentSum': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', False)), "
               "(('output', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[7]), "
               "'Tindices': ('type', None, None, _ALLOWED[35])})",
 'Select': "((('condition', 'DT_BOOL', '', '', False), ('t', 'T', '', '', False), ('e', 'T', '', "
           "'', False)), (('output', 'T', '', '', False),), {'T': ('type', None, None, None)})",
 'SelectV2': "((('condition', 'DT_BOOL', '', '', False), ('t', 'T', '', '', False), ('e', 'T', "
             "'', '', False)), (('output', 'T', '', '', False),), {'T': ('type', None, None, "
             'None)})',
 'Selu': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
         "('type', None, None, _ALLOWED[15])})",
 'SeluGrad': "((('gradients', 'T', '', '', False), ('outputs', 'T', '', '', False)), "
             "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[15])})",
 'SerializeIterator': "((('resource_handle', 'DT_RESOURCE', '', '', False),), (('serialized', "
                      "'DT_VARIANT', '', '', False),), {'external_state_policy': ('int', 0, None, "
                      'None)})',
 'Shape': "((('input', 'T', '', '', False),), (('output', 'out_type', '', '', False),), {'T': "
          "('type', None, None, None), 'out_type': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'ShapeN': "((('input', 'T', 'N', '', False),), (('output', 'out_type', 'N', '', False),), {'N': "
           "('int', None, 1, None), 'T': ('type', None, None, None), 'out_type': ('type', "
           "'DT_INT32', None, _ALLOWED[35])})",
 'Sigmoid': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
            'None, _ALLOWED[4])})',
 'SigmoidGrad': "((('y', 'T', '', '', False), ('dy', 'T', '', '', False)), (('z', 'T', '', '', "
                "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'Sign': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[6])})',
 'Sin': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[4])})',
 'Sinh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'Size': "((('input', 'T', '', '', False),), (('output', 'out_type', '', '', False),), {'T': "
         "('type', None, None, None), 'out_type': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Slice': "((('input', 'T', '', '', False), ('begin', 'Index', '', '', False), ('size', 'Index', "
          "'', '', False)), (('output', 'T', '', '', False),), {'T': ('type', None, None, None), "
          "'Index': ('type', None, None, _ALLOWED[35])})",
 'Snapshot': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
             "('type', None, None, None)})",
 'Softmax': "((('logits', 'T', '', '', False),), (('softmax', 'T', '', '', False),), {'T': "
            "('type', None, None, _ALLOWED[15])})",
 'SoftmaxCrossEntropyWithLogits': "((('features', 'T', '', '', False), ('labels', 'T', '', '', "
                                  "False)), (('loss', 'T', '', '', False), ('backprop', 'T', '', "
                                  "'', False)), {'T': ('type', None, None, _ALLOWED[15])})",
 'Softplus': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
             "('type', None, None, _ALLOWED[15])})",
 'SoftplusGrad': "((('gradients', 'T', '', '', False), ('features', 'T', '', '', False)), "
                 "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, "
                 '_ALLOWED[15])})',
 'Softsign': "((('features', 'T', '', '', False),), (('activations', 'T', '', '', False),), {'T': "
             "('type', None, None, _ALLOWED[15])})",
 'SoftsignGrad': "((('gradients', 'T', '', '', False), ('features', 'T', '', '', False)), "
                 "(('backprops', 'T', '', '', False),), {'T': ('type', None, None, "
                 '_ALLOWED[15])})',
 'SparseApplyAdadelta': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), "
                        "('accum_update', 'T', '', '', True), ('lr', 'T', '', '', False), ('rho', "
                        "'T', '', '', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', "
                        "'', False), ('indices', 'Tindices', '', '', False)), (('out', 'T', '', "
                        "'', True),), {'T': ('type', None, None, _ALLOWED[7]), 'Tindices': "
                        "('type', None, None, _ALLOWED[35]), 'use_locking': ('bool', None, None, "
                        'None)})',
 'SparseApplyAdagrad': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', "
                       "'', '', False), ('grad', 'T', '', '', False), ('indices', 'Tindices', '', "
                       "'', False)), (('out', 'T', '', '', True),), {'T': ('type', None, None, "
                       "_ALLOWED[7]), 'Tindices': ('type', None, None, _ALLOWED[35]), "
                       "'use_locking': ('bool', None, None, None), 'update_slots': ('bool', None, "
                       'None, None)})',
 'SparseApplyAdagradDA': "((('var', 'T', '', '', True), ('gradient_accumulator', 'T', '', '', "
                         "True), ('gradient_squared_accumulator', 'T', '', '', True), ('grad', "
                         "'T', '', '', False), ('indices', 'Tindices', '', '', False), ('lr', "
                         "'T', '', '', False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', "
                         "False), ('global_step', 'DT_INT64', '', '', False)), (('out', 'T', '', "
                         "'', True),), {'T': ('type', None, None, _ALLOWED[7]), 'Tindices': "
                         "('type', None, None, _ALLOWED[35]), 'use_locking': ('bool', None, None, "
                         'None)})',
 'SparseApplyAdagradV2': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', "
                         "'', '', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', '', "
                         "False), ('indices', 'Tindices', '', '', False)), (('out', 'T', '', '', "
                         "True),), {'T': ('type', None, None, _ALLOWED[7]), 'Tindices': ('type', "
                         "None, None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                         "'update_slots': ('bool', None, None, None)})",
 'SparseApplyCenteredRMSProp': "((('var', 'T', '', '', True), ('mg', 'T', '', '', True), ('ms', "
                               "'T', '', '', True), ('mom', 'T', '', '', True), ('lr', 'T', '', "
                               "'', False), ('rho', 'T', '', '', False), ('momentum', 'T', '', "
                               "'', False), ('epsilon', 'T', '', '', False), ('grad', 'T', '', "
                               "'', False), ('indices', 'Tindices', '', '', False)), (('out', "
                               "'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
                               "'Tindices': ('type', None, None, _ALLOWED[35]), 'use_locking': "
                               "('bool', None, None, None)})",
 'SparseApplyFtrl': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('linear', 'T', "
                    "'', '', True), ('grad', 'T', '', '', False), ('indices', 'Tindices', '', '', "
                    "False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), ('l2', 'T', "
                    "'', '', False), ('lr_power', 'T', '', '', False)), (('out', 'T', '', '', "
                    "True),), {'T': ('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, "
                    "None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                    "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'SparseApplyFtrlV2': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('linear', "
                      "'T', '', '', True), ('grad', 'T', '', '', False), ('indices', 'Tindices', "
                      "'', '', False), ('lr', 'T', '', '', False), ('l1', 'T', '', '', False), "
                      "('l2', 'T', '', '', False), ('l2_shrinkage', 'T', '', '', False), "
                      "('lr_power', 'T', '', '', False)), (('out', 'T', '', '', True),), {'T': "
                      "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, None, "
                      "_ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                      "'multiply_linear_by_lr': ('bool', None, None, None)})",
 'SparseApplyMomentum': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), ('lr', 'T', "
                        "'', '', False), ('grad', 'T', '', '', False), ('indices', 'Tindices', "
                        "'', '', False), ('momentum', 'T', '', '', False)), (('out', 'T', '', '', "
                        "True),), {'T': ('type', None, None, _ALLOWED[7]), 'Tindices': ('type', "
                        "None, None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None), "
                        "'use_nesterov': ('bool', None, None, None)})",
 'SparseApplyProximalAdagrad': "((('var', 'T', '', '', True), ('accum', 'T', '', '', True), "
                               "('lr', 'T', '', '', False), ('l1', 'T', '', '', False), ('l2', "
                               "'T', '', '', False), ('grad', 'T', '', '', False), ('indices', "
                               "'Tindices', '', '', False)), (('out', 'T', '', '', True),), {'T': "
                               "('type', None, None, _ALLOWED[7]), 'Tindices': ('type', None, "
                               "None, _ALLOWED[35]), 'use_locking': ('bool', None, None, None)})",
 'SparseApplyProximalGradientDescent': "((('var', 'T', '', '', True), ('alpha', 'T', '', '', "
                                       "False), ('l1', 'T', '', '', False), ('l2', 'T', '', '', "
                                       "False), ('grad', 'T', '', '', False), ('indices', "
                                       "'Tindices', '', '', False)), (('out', 'T', '', '', "
                                       "True),), {'T': ('type', None, None, _ALLOWED[7]), "
                                       "'Tindices': ('type', None, None, _ALLOWED[35]), "
                                       "'use_locking': ('bool', None, None, None)})",
 'SparseApplyRMSProp': "((('var', 'T', '', '', True), ('ms', 'T', '', '', True), ('mom', 'T', '', "
                       "'', True), ('lr', 'T', '', '', False), ('rho', 'T', '', '', False), "
                       "('momentum', 'T', '', '', False), ('epsilon', 'T', '', '', False), "
                       "('grad', 'T', '', '', False), ('indices', 'Tindices', '', '', False)), "
                       "(('out', 'T', '', '', True),), {'T': ('type', None, None, _ALLOWED[7]), "
                       "'Tindices': ('type', None, None, _ALLOWED[35]), 'use_locking': ('bool', "
                       'None, None, None)})',
 'SparseSoftmaxCrossEntropyWithLogits': "((('features', 'T', '', '', False), ('labels', "
                                        "'Tlabels', '', '', False)), (('loss', 'T', '', '', "
                                        "False), ('backprop', 'T', '', '', False)), {'T': "
                                        "('type', None, None, _ALLOWED[15]), 'Tlabels': ('type', "
                                        "'DT_INT64', None, _ALLOWED[35])})",
 'Split': "((('split_dim', 'DT_INT32', '', '', False), ('value', 'T', '', '', False)), "
          "(('output', 'T', 'num_split', '', False),), {'num_split': ('int', None, 1, None), 'T': "
          "('type', None, None, None)})",
 'SplitV': "((('value', 'T', '', '', False), ('size_splits', 'Tlen', '', '', False), "
           "('split_dim', 'DT_INT32', '', '', False)), (('output', 'T', 'num_split', '', "
           "False),), {'num_split': ('int', None, 1, None), 'T': ('type', None, None, None), "
           "'Tlen': ('type', 'DT_INT64', None, _ALLOWED[36])})",
 'Sqrt': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'SqrtGrad': "((('y', 'T', '', '', False), ('dy', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'Square': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
           'None, _ALLOWED[10])})',
 'SquaredDifference': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', "
                      "'', False),), {'T': ('type', None, None, _ALLOWED[13])})",
 'Squeeze': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': ('type', "
            "None, None, None), 'squeeze_dims': ('list(int)', (), 0, None)})",
 'Stack': "((), (('handle', 'DT_STRING', '', '', True),), {'elem_type': ('type', None, None, "
          "None), 'stack_name': ('string', None, None, None)})",
 'StackClose': "((('handle', 'DT_STRING', '', '', True),), (), {})",
 'StackCloseV2': "((('handle', 'DT_RESOURCE', '', '', False),), (), {})",
 'StackPop': "((('handle', 'DT_STRING', '', '', True),), (('elem', 'elem_type', '', '', False),), "
             "{'elem_type': ('type', None, None, None)})",
 'StackPopV2': "((('handle', 'DT_RESOURCE', '', '', False),), (('elem', 'elem_type', '', '', "
               "False),), {'elem_type': ('type', None, None, None)})",
 'StackPush': "((('handle', 'DT_STRING', '', '', True), ('elem', 'T', '', '', False)), "
              "(('output', 'T', '', '', False),), {'T': ('type', None, None, None), "
              "'swap_memory': ('bool', None, None, None)})",
 'StackPushV2': "((('handle', 'DT_RESOURCE', '', '', False), ('elem', 'T', '', '', False)), "
                "(('output', 'T', '', '', False),), {'T': ('type', None, None, None), "
                "'swap_memory': ('bool', None, None, None)})",
 'StackV2': "((('max_size', 'DT_INT32', '', '', False),), (('handle', 'DT_RESOURCE', '', '', "
            "False),), {'elem_type': ('type', None, None, None), 'stack_name': ('string', None, "
            'None, None)})',
 'StatefulPartitionedCall': "((('args', '', '', 'Tin', False),), (('output', '', '', 'Tout', "
                            "False),), {'Tin': ('list(type)', None, 0, None), 'Tout': "
                            "('list(type)', None, 0, None), 'f': ('func', None, None, None), "
                            "'config': ('string', None, None, None), 'config_proto': ('string', "
                            "None, None, None), 'executor_type': ('string', None, None, None)})",
 'StatefulRandomBinomial': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', "
                           "'DT_INT64', '', '', False), ('shape', 'S', '', '', False), ('counts', "
                           "'T', '', '', False), ('probs', 'T', '', '', False)), (('output', "
                           "'dtype', '', '', False),), {'S': ('type', None, None, _ALLOWED[35]), "
                           "'T': ('type', 'DT_DOUBLE', None, _ALLOWED[29]), 'dtype': ('type', "
                           "'DT_INT64', None, _ALLOWED[29])})",
 'StatefulStandardNormal': "((('resource', 'DT_RESOURCE', '', '', False), ('shape', "
                           "'shape_dtype', '', '', False)), (('output', 'dtype', '', '', "
                           "False),), {'dtype': ('type', 'DT_FLOAT', None, None), 'shape_dtype': "
                           "('type', 'DT_INT64', None, None)})",
 'StatefulStandardNormalV2': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', "
                             "'DT_INT64', '', '', False), ('shape', 'shape_dtype', '', '', "
                             "False)), (('output', 'dtype', '', '', False),), {'dtype': ('type', "
                             "'DT_FLOAT', None, None), 'shape_dtype': ('type', 'DT_INT64', None, "
                             'None)})',
 'StatefulTruncatedNormal': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', "
                            "'DT_INT64', '', '', False), ('shape', 'shape_dtype', '', '', "
                            "False)), (('output', 'dtype', '', '', False),), {'dtype': ('type', "
                            "'DT_FLOAT', None, None), 'shape_dtype': ('type', 'DT_INT64', None, "
                            'None)})',
 'StatefulUniform': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', 'DT_INT64', '', "
                    "'', False), ('shape', 'shape_dtype', '', '', False)), (('output', 'dtype', "
                    "'', '', False),), {'dtype': ('type', 'DT_FLOAT', None, None), 'shape_dtype': "
                    "('type', 'DT_INT64', None, None)})",
 'StatefulUniformFullInt': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', "
                           "'DT_INT64', '', '', False), ('shape', 'shape_dtype', '', '', False)), "
                           "(('output', 'dtype', '', '', False),), {'dtype': ('type', "
                           "'DT_UINT64', None, None), 'shape_dtype': ('type', 'DT_INT64', None, "
                           'None)})',
 'StatefulUniformInt': "((('resource', 'DT_RESOURCE', '', '', False), ('algorithm', 'DT_INT64', "
                       "'', '', False), ('shape', 'shape_dtype', '', '', False), ('minval', "
                       "'dtype', '', '', False), ('maxval', 'dtype', '', '', False)), (('output', "
                       "'dtype', '', '', False),), {'dtype': ('type', 'DT_INT64', None, None), "
                       "'shape_dtype': ('type', 'DT_INT64', None, None)})",
 'StatelessCase': "((('branch_index', 'DT_INT32', '', '', False), ('input', '', '', 'Tin', "
                  "False)), (('output', '', '', 'Tout', False),), {'Tin': ('list(type)', None, 0, "
                  "None), 'Tout': ('list(type)', None, 0, None), 'branches': ('list(func)', None, "
                  "1, None), 'output_shapes': ('list(shape)', None, None, None)})",
 'StatelessIf': "((('cond', 'Tcond', '', '', False), ('input', '', '', 'Tin', False)), "
                "(('output', '', '', 'Tout', False),), {'Tcond': ('type', None, None, None), "
                "'Tin': ('list(type)', None, 0, None), 'Tout': ('list(type)', None, 0, None), "
                "'then_branch': ('func', None, None, None), 'else_branch': ('func', None, None, "
                "None), 'output_shapes': ('list(shape)', None, None, None)})",
 'StatelessMultinomial': "((('logits', 'T', '', '', False), ('num_samples', 'DT_INT32', '', '', "
                         "False), ('seed', 'Tseed', '', '', False)), (('output', 'output_dtype', "
                         "'', '', False),), {'T': ('type', None, None, _ALLOWED[22]), 'Tseed': "
                         "('type', 'DT_INT64', None, _ALLOWED[35]), 'output_dtype': ('type', "
                         "'DT_INT64', None, _ALLOWED[35])})",
 'StatelessParameterizedTruncatedNormal': "((('shape', 'S', '', '', False), ('seed', 'Tseed', '', "
                                          "'', False), ('means', 'dtype', '', '', False), "
                                          "('stddevs', 'dtype', '', '', False), ('minvals', "
                                          "'dtype', '', '', False), ('maxvals', 'dtype', '', '', "
                                          "False)), (('output', 'dtype', '', '', False),), {'S': "
                                          "('type', None, None, _ALLOWED[35]), 'Tseed': ('type', "
                                          "'DT_INT64', None, _ALLOWED[35]), 'dtype': ('type', "
                                          'None, None, _ALLOWED[28])})',
 'StatelessRandomBinomial': "((('shape', 'S', '', '', False), ('seed', 'Tseed', '', '', False), "
                            "('counts', 'T', '', '', False), ('probs', 'T', '', '', False)), "
                            "(('output', 'dtype', '', '', False),), {'S': ('type', None, None, "
                            "_ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35]), "
                            "'T': ('type', 'DT_DOUBLE', None, _ALLOWED[29]), 'dtype': ('type', "
                            "'DT_INT64', None, _ALLOWED[29])})",
 'StatelessRandomGammaV2': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False), "
                           "('alpha', 'dtype', '', '', False)), (('output', 'dtype', '', '', "
                           "False),), {'dtype': ('type', None, None, _ALLOWED[28]), 'T': ('type', "
                           "None, None, _ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', None, "
                           '_ALLOWED[35])})',
 'StatelessRandomGammaV3': "((('shape', 'shape_dtype', '', '', False), ('key', 'DT_UINT64', '', "
                           "'', False), ('counter', 'DT_UINT64', '', '', False), ('alg', "
                           "'DT_INT32', '', '', False), ('alpha', 'dtype', '', '', False)), "
                           "(('output', 'dtype', '', '', False),), {'dtype': ('type', None, None, "
                           "_ALLOWED[28]), 'shape_dtype': ('type', 'DT_INT32', None, "
                           '_ALLOWED[35])})',
 'StatelessRandomGetAlg': "((), (('alg', 'DT_INT32', '', '', False),), {})",
 'StatelessRandomGetKeyCounter': "((('seed', 'Tseed', '', '', False),), (('key', 'DT_UINT64', '', "
                                 "'', False), ('counter', 'DT_UINT64', '', '', False)), {'Tseed': "
                                 "('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomGetKeyCounterAlg': "((('seed', 'Tseed', '', '', False),), (('key', 'DT_UINT64', "
                                    "'', '', False), ('counter', 'DT_UINT64', '', '', False), "
                                    "('alg', 'DT_INT32', '', '', False)), {'Tseed': ('type', "
                                    "'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomNormal': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False)), "
                          "(('output', 'dtype', '', '', False),), {'dtype': ('type', 'DT_FLOAT', "
                          "None, _ALLOWED[15]), 'T': ('type', 'DT_INT32', None, _ALLOWED[35]), "
                          "'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomNormalV2': "((('shape', 'Tshape', '', '', False), ('key', 'DT_UINT64', '', '', "
                            "False), ('counter', 'DT_UINT64', '', '', False), ('alg', 'DT_INT32', "
                            "'', '', False)), (('output', 'dtype', '', '', False),), {'dtype': "
                            "('type', 'DT_FLOAT', None, _ALLOWED[15]), 'Tshape': ('type', "
                            "'DT_INT32', None, _ALLOWED[35])})",
 'StatelessRandomPoisson': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False), "
                           "('lam', 'Rtype', '', '', False)), (('output', 'dtype', '', '', "
                           "False),), {'Rtype': ('type', None, None, _ALLOWED[29]), 'dtype': "
                           "('type', None, None, _ALLOWED[29]), 'T': ('type', None, None, "
                           "_ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomUniform': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False)), "
                           "(('output', 'dtype', '', '', False),), {'dtype': ('type', 'DT_FLOAT', "
                           "None, _ALLOWED[15]), 'T': ('type', 'DT_INT32', None, _ALLOWED[35]), "
                           "'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomUniformFullInt': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', "
                                  "False)), (('output', 'dtype', '', '', False),), {'dtype': "
                                  "('type', 'DT_UINT64', None, _ALLOWED[38]), 'T': ('type', "
                                  "'DT_INT32', None, _ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', "
                                  'None, _ALLOWED[38])})',
 'StatelessRandomUniformFullIntV2': "((('shape', 'Tshape', '', '', False), ('key', 'DT_UINT64', "
                                    "'', '', False), ('counter', 'DT_UINT64', '', '', False), "
                                    "('alg', 'DT_INT32', '', '', False)), (('output', 'dtype', "
                                    "'', '', False),), {'dtype': ('type', 'DT_UINT64', None, "
                                    "_ALLOWED[38]), 'Tshape': ('type', 'DT_INT32', None, "
                                    '_ALLOWED[35])})',
 'StatelessRandomUniformInt': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False), "
                              "('minval', 'dtype', '', '', False), ('maxval', 'dtype', '', '', "
                              "False)), (('output', 'dtype', '', '', False),), {'dtype': ('type', "
                              "None, None, _ALLOWED[35]), 'T': ('type', None, None, "
                              "_ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessRandomUniformIntV2': "((('shape', 'Tshape', '', '', False), ('key', 'DT_UINT64', '', "
                                "'', False), ('counter', 'DT_UINT64', '', '', False), ('alg', "
                                "'DT_INT32', '', '', False), ('minval', 'dtype', '', '', False), "
                                "('maxval', 'dtype', '', '', False)), (('output', 'dtype', '', "
                                "'', False),), {'dtype': ('type', None, None, _ALLOWED[38]), "
                                "'Tshape': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'StatelessRandomUniformV2': "((('shape', 'Tshape', '', '', False), ('key', 'DT_UINT64', '', '', "
                             "False), ('counter', 'DT_UINT64', '', '', False), ('alg', "
                             "'DT_INT32', '', '', False)), (('output', 'dtype', '', '', False),), "
                             "{'dtype': ('type', 'DT_FLOAT', None, _ALLOWED[15]), 'Tshape': "
                             "('type', 'DT_INT32', None, _ALLOWED[35])})",
 'StatelessShuffle': "((('value', 'T', '', '', False), ('key', 'DT_UINT64', '', '', False), "
                     "('counter', 'DT_UINT64', '', '', False), ('alg', 'DT_INT32', '', '', "
                     "False)), (('output', 'T', '', '', False),), {'T': ('type', None, None, "
                     'None)})',
 'StatelessTruncatedNormal': "((('shape', 'T', '', '', False), ('seed', 'Tseed', '', '', False)), "
                             "(('output', 'dtype', '', '', False),), {'dtype': ('type', "
                             "'DT_FLOAT', None, _ALLOWED[15]), 'T': ('type', 'DT_INT32', None, "
                             "_ALLOWED[35]), 'Tseed': ('type', 'DT_INT64', None, _ALLOWED[35])})",
 'StatelessTruncatedNormalV2': "((('shape', 'Tshape', '', '', False), ('key', 'DT_UINT64', '', "
                               "'', False), ('counter', 'DT_UINT64', '', '', False), ('alg', "
                               "'DT_INT32', '', '', False)), (('output', 'dtype', '', '', "
                               "False),), {'dtype': ('type', 'DT_FLOAT', None, _ALLOWED[15]), "
                               "'Tshape': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'StatelessWhile': "((('input', '', '', 'T', False),), (('output', '', '', 'T', False),), {'T': "
                   "('list(type)', None, 0, None), 'cond': ('func', None, None, None), 'body': "
                   "('func', None, None, None), 'output_shapes': ('list(shape)', None, None, "
                   "None), 'parallel_iterations': ('int', 10, None, None)})",
 'StopGradient': "((('input', 'T', '', '', False),), (('output', 'T', '', '', False),), {'T': "
                 "('type', None, None, None)})",
 'StridedSlice': "((('input', 'T', '', '', False), ('begin', 'Index', '', '', False), ('end', "
                 "'Index', '', '', False), ('strides', 'Index', '', '', False)), (('output', 'T', "
                 "'', '', False),), {'T': ('type', None, None, None), 'Index': ('type', None, "
                 "None, _ALLOWED[33]), 'begin_mask': ('int', 0, None, None), 'end_mask': ('int', "
                 "0, None, None), 'ellipsis_mask': ('int', 0, None, None), 'new_axis_mask': "
                 "('int', 0, None, None), 'shrink_axis_mask': ('int', 0, None, None)})",
 'StridedSliceGrad': "((('shape', 'Index', '', '', False), ('begin', 'Index', '', '', False), "
                     "('end', 'Index', '', '', False), ('strides', 'Index', '', '', False), "
                     "('dy', 'T', '', '', False)), (('output', 'T', '', '', False),), {'T': "
                     "('type', None, None, None), 'Index': ('type', None, None, _ALLOWED[35]), "
                     "'begin_mask': ('int', 0, None, None), 'end_mask': ('int', 0, None, None), "
                     "'ellipsis_mask': ('int', 0, None, None), 'new_axis_mask': ('int', 0, None, "
                     "None), 'shrink_axis_mask': ('int', 0, None, None)})",
 'Sub': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
        "{'T': ('type', None, None, _ALLOWED[10])})",
 'Sum': "((('input', 'T', '', '', False), ('reduction_indices', 'Tidx', '', '', False)), "
        "(('output', 'T', '', '', False),), {'keep_dims': ('bool', None, None, None), 'T': "
        "('type', None, None, _ALLOWED[7]), 'Tidx': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Switch': "((('data', 'T', '', '', False), ('pred', 'DT_BOOL', '', '', False)), "
           "(('output_false', 'T', '', '', False), ('output_true', 'T', '', '', False)), {'T': "
           "('type', None, None, None)})",
 'Tan': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
        '_ALLOWED[4])})',
 'Tanh': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, None, "
         '_ALLOWED[4])})',
 'TanhGrad': "((('y', 'T', '', '', False), ('dy', 'T', '', '', False)), (('z', 'T', '', '', "
             "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'TemporaryVariable': "((), (('ref', 'dtype', '', '', True),), {'shape': ('shape', None, None, "
                      "None), 'dtype': ('type', None, None, None), 'var_name': ('string', None, "
                      'None, None)})',
 'TensorListElementShape': "((('input_handle', 'DT_VARIANT', '', '', False),), (('element_shape', "
                           "'shape_type', '', '', False),), {'shape_type': ('type', None, None, "
                           '_ALLOWED[35])})',
 'TensorListFromTensor': "((('tensor', 'element_dtype', '', '', False), ('element_shape', "
                         "'shape_type', '', '', False)), (('output_handle', 'DT_VARIANT', '', '', "
                         "False),), {'element_dtype': ('type', None, None, None), 'shape_type': "
                         "('type', None, None, _ALLOWED[35])})",
 'TensorListGetItem': "((('input_handle', 'DT_VARIANT', '', '', False), ('index', 'DT_INT32', '', "
                      "'', False), ('element_shape', 'Tshape', '', '', False)), (('item', "
                      "'element_dtype', '', '', False),), {'element_dtype': ('type', None, None, "
                      "None), 'Tshape': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'TensorListLength': "((('input_handle', 'DT_VARIANT', '', '', False),), (('length', 'DT_INT32', "
                     "'', '', False),), {})",
 'TensorListPopBack': "((('input_handle', 'DT_VARIANT', '', '', False), ('element_shape', "
                      "'DT_INT32', '', '', False)), (('output_handle', 'DT_VARIANT', '', '', "
                      "False), ('tensor', 'element_dtype', '', '', False)), {'element_dtype': "
                      "('type', None, None, None)})",
 'TensorListPushBack': "((('input_handle', 'DT_VARIANT', '', '', False), ('tensor', "
                       "'element_dtype', '', '', False)), (('output_handle', 'DT_VARIANT', '', "
                       "'', False),), {'element_dtype': ('type', None, None, None)})",
 'TensorListReserve': "((('element_shape', 'shape_type', '', '', False), ('num_elements', "
                      "'DT_INT32', '', '', False)), (('handle', 'DT_VARIANT', '', '', False),), "
                      "{'element_dtype': ('type', None, None, None), 'shape_type': ('type', None, "
                      'None, _ALLOWED[35])})',
 'TensorListSetItem': "((('input_handle', 'DT_VARIANT', '', '', False), ('index', 'DT_INT32', '', "
                      "'', False), ('item', 'element_dtype', '', '', False)), (('output_handle', "
                      "'DT_VARIANT', '', '', False),), {'element_dtype': ('type', None, None, "
                      "None), 'resize_if_index_out_of_bounds': ('bool', None, None, None)})",
 'TensorListStack': "((('input_handle', 'DT_VARIANT', '', '', False), ('element_shape', "
                    "'DT_INT32', '', '', False)), (('tensor', 'element_dtype', '', '', False),), "
                    "{'element_dtype': ('type', None, None, None), 'num_elements': ('int', -1, "
                    'None, None)})',
 'Tile': "((('input', 'T', '', '', False), ('multiples', 'Tmultiples', '', '', False)), "
         "(('output', 'T', '', '', False),), {'T': ('type', None, None, None), 'Tmultiples': "
         "('type', 'DT_INT32', None, _ALLOWED[35])})",
 'Transpose': "((('x', 'T', '', '', False), ('perm', 'Tperm', '', '', False)), (('y', 'T', '', "
              "'', False),), {'T': ('type', None, None, None), 'Tperm': ('type', 'DT_INT32', "
              'None, _ALLOWED[35])})',
 'TruncateDiv': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
                "False),), {'T': ('type', None, None, _ALLOWED[10])})",
 'TruncateMod': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
                "False),), {'T': ('type', None, None, _ALLOWED[24])})",
 'TruncatedNormal': "((('shape', 'T', '', '', False),), (('output', 'dtype', '', '', False),), "
                    "{'seed': ('int', 0, None, None), 'seed2': ('int', 0, None, None), 'dtype': "
                    "('type', None, None, _ALLOWED[15]), 'T': ('type', None, None, "
                    '_ALLOWED[35])})',
 'Unpack': "((('value', 'T', '', '', False),), (('output', 'T', 'num', '', False),), {'num': "
           "('int', None, 0, None), 'T': ('type', None, None, None), 'axis': ('int', 0, None, "
           'None)})',
 'UnsortedSegmentMax': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', "
                       "False), ('num_segments', 'Tnumsegments', '', '', False)), (('output', "
                       "'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[22]), "
                       "'Tindices': ('type', None, None, _ALLOWED[35]), 'Tnumsegments': ('type', "
                       "'DT_INT32', None, _ALLOWED[35])})",
 'UnsortedSegmentMin': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', "
                       "False), ('num_segments', 'Tnumsegments', '', '', False)), (('output', "
                       "'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[22]), "
                       "'Tindices': ('type', None, None, _ALLOWED[35]), 'Tnumsegments': ('type', "
                       "'DT_INT32', None, _ALLOWED[35])})",
 'UnsortedSegmentProd': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', "
                        "False), ('num_segments', 'Tnumsegments', '', '', False)), (('output', "
                        "'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[7]), "
                        "'Tindices': ('type', None, None, _ALLOWED[35]), 'Tnumsegments': ('type', "
                        "'DT_INT32', None, _ALLOWED[35])})",
 'UnsortedSegmentSum': "((('data', 'T', '', '', False), ('segment_ids', 'Tindices', '', '', "
                       "False), ('num_segments', 'Tnumsegments', '', '', False)), (('output', "
                       "'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[7]), "
                       "'Tindices': ('type', None, None, _ALLOWED[33]), 'Tnumsegments': ('type', "
                       "'DT_INT32', None, _ALLOWED[35])})",
 'VarHandleOp': "((), (('resource', 'DT_RESOURCE', '', '', False),), {'container': ('string', "
                "None, None, None), 'shared_name': ('string', None, None, None), 'debug_name': "
                "('string', None, None, None), 'dtype': ('type', None, None, None), 'shape': "
                "('shape', None, None, None), 'allowed_devices': ('list(string)', None, None, "
                'None)})',
 'VarIsInitializedOp': "((('resource', 'DT_RESOURCE', '', '', False),), (('is_initialized', "
                       "'DT_BOOL', '', '', False),), {})",
 'Variable': "((), (('ref', 'dtype', '', '', True),), {'shape': ('shape', None, None, None), "
             "'dtype': ('type', None, None, None), 'container': ('string', None, None, None), "
             "'shared_name': ('string', None, None, None)})",
 'VariableShape': "((('input', 'DT_RESOURCE', '', '', False),), (('output', 'out_type', '', '', "
                  "False),), {'out_type': ('type', 'DT_INT32', None, _ALLOWED[35])})",
 'VariableV2': "((), (('ref', 'dtype', '', '', True),), {'shape': ('shape', None, None, None), "
               "'dtype': ('type', None, None, None), 'container': ('string', None, None, None), "
               "'shared_name': ('string', None, None, None)})",
 'Where': "((('input', 'T', '', '', False),), (('index', 'DT_INT64', '', '', False),), {'T': "
          "('type', 'DT_BOOL', None, _ALLOWED[0])})",
 'While': "((('input', '', '', 'T', False),), (('output', '', '', 'T', False),), {'T': "
          "('list(type)', None, 0, None), 'cond': ('func', None, None, None), 'body': ('func', "
          "None, None, None), 'output_shapes': ('list(shape)', None, None, None), "
          "'parallel_iterations': ('int', 10, None, None)})",
 'Xdivy': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
          "{'T': ('type', None, None, _ALLOWED[4])})",
 'Xlog1py': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', "
            "False),), {'T': ('type', None, None, _ALLOWED[4])})",
 'Xlogy': "((('x', 'T', '', '', False), ('y', 'T', '', '', False)), (('z', 'T', '', '', False),), "
          "{'T': ('type', None, None, _ALLOWED[4])})",
 'ZerosLike': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': ('type', None, "
              'None, None)})',
 '_FusedBatchNormEx': "((('x', 'T', '', '', False), ('scale', 'U', '', '', False), ('offset', "
                      "'U', '', '', False), ('mean', 'U', '', '', False), ('variance', 'U', '', "
                      "'', False), ('side_input', 'T', 'num_side_inputs', '', False)), (('y', "
                      "'T', '', '', False), ('batch_mean', 'U', '', '', False), "
                      "('batch_variance', 'U', '', '', False), ('reserve_space_1', 'U', '', '', "
                      "False), ('reserve_space_2', 'U', '', '', False), ('reserve_space_3', 'U', "
                      "'', '', False)), {'T': ('type', None, None, _ALLOWED[26]), 'U': ('type', "
                      "None, None, _ALLOWED[32]), 'epsilon': ('float', None, None, None), "
                      "'exponential_avg_factor': ('float', None, None, None), 'num_side_inputs': "
                      "('int', 0, 0, None), 'activation_mode': ('string', None, None, None), "
                      "'data_format': ('string', None, None, _ALLOWED[43]), 'is_training': "
                      "('bool', None, None, None)})",
 '_FusedConv2D': "((('input', 'T', '', '', False), ('filter', 'T', '', '', False), ('args', '', "
                 "'', 'TArgs', False), ('host_args', 'DT_FLOAT', 'num_host_args', '', False)), "
                 "(('output', 'T', '', '', False),), {'T': ('type', None, None, _ALLOWED[30]), "
                 "'TArgs': ('list(type)', None, 1, None), 'num_args': ('int', None, 0, None), "
                 "'num_host_args': ('int', 0, 0, None), 'strides': ('list(int)', None, None, "
                 "None), 'padding': ('string', None, None, _ALLOWED[39]), 'explicit_paddings': "
                 "('list(int)', (), None, None), 'data_format': ('string', None, None, "
                 "_ALLOWED[42]), 'filter_format': ('string', None, None, _ALLOWED[40]), "
                 "'dilations': ('list(int)', (1, 1, 1, 1), None, None), 'use_cudnn_on_gpu': "
                 "('bool', None, None, None), 'fused_ops': ('list(string)', None, None, None), "
                 "'epsilon': ('float', None, None, None), 'leakyrelu_alpha': ('float', None, "
                 'None, None)})',
 '_FusedMatMul': "((('a', 'T', '', '', False), ('b', 'T', '', '', False), ('args', 'T', "
                 "'num_args', '', False)), (('product', 'T', '', '', False),), {'transpose_a': "
                 "('bool', None, None, None), 'transpose_b': ('bool', None, None, None), 'T': "
                 "('type', None, None, _ALLOWED[26]), 'num_args': ('int', None, 0, None), "
                 "'fused_ops': ('list(string)', None, None, None), 'epsilon': ('float', None, "
                 "None, None), 'leakyrelu_alpha': ('float', None, None, None)})",
 '_UnaryOpsComposition': "((('x', 'T', '', '', False),), (('y', 'T', '', '', False),), {'T': "
                         "('type', None, None, _ALLOWED[28]), 'op_names': ('list(string)', None, "
                         'None, None)})'}
