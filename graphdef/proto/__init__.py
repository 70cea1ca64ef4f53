"""The protobuf wire and text formats of the TensorFlow messages tfsem reads.

No TensorFlow: `schema` holds descriptors of the few messages needed (field
numbers copied from TensorFlow's .proto files).  `runtime` decodes binary
messages with the `protobuf` package (its C implementation) from descriptors
built out of `schema`; `wire` is tfsem's own binary codec (the encoder, and
the decoder that names the field path and byte offset of what protobuf's
parser refused); `text` the text format (what ``tf.io.write_graph(...,
as_text=True)`` writes).

    parse(message, data) -> message      binary -> protobuf message (for the importer)
    decode(message, data) -> dict        binary -> dict
    encode(message, value) -> bytes      dict -> binary
    parse_text(message, text) -> dict    text format -> dict
    format_text(message, value) -> str   dict -> text format

`message` is a name such as "GraphDef", "MetaGraphDef", "SavedModel",
"NodeDef", "AttrValue", "TensorProto", "FunctionDef", "SignatureDef" (a
"tensorflow." prefix is accepted). The dict form is the same for binary and
text: .proto field names as keys, absent fields absent, repeated fields as
lists, map fields as dicts, enums as their value name (an unknown number as
int), `string` as str, `bytes` as bytes. Any malformed input raises
`ProtoError`, whose message names the field path and the byte offset or
line:column. See docs/graphdef-format.md.
"""

from __future__ import annotations


class ProtoError(ValueError):
    """Malformed protobuf input (or a dict that is not a valid message).

    The message names the field path (``GraphDef.node[3].attr["value"]...``)
    and the byte offset (binary) or line:column (text) where it went wrong.
    """


MAX_DEPTH = 100  # nested messages deeper than this are refused ("nested too deep")
MAX_SIZE = 2**31 - 1  # protobuf refuses messages of 2 GiB and more

from .schema import MESSAGES, ENUMS  # noqa: E402
from .wire import encode  # noqa: E402
from .runtime import decode, parse, to_dict  # noqa: E402
from .text import parse_text, format_text  # noqa: E402

__all__ = ["ProtoError", "decode", "parse", "to_dict", "encode", "parse_text", "format_text", "MESSAGES", "ENUMS",
           "MAX_DEPTH", "MAX_SIZE"]
