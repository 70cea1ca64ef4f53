"""Descriptors of the TensorFlow protobuf messages tfsem reads.

Field numbers, types and declaration order are copied from TensorFlow's
.proto files (tensorflow/core/framework/{graph,node_def,attr_value,tensor,
tensor_shape,types,versions,function,op_def,resource_handle,full_type}.proto,
tensorflow/core/protobuf/{meta_graph,saved_model,saver}.proto). They are facts
of the wire format: a number here that differs from TensorFlow's would read
every graph wrong, so they were checked field by field against the descriptors
TensorFlow 2.21 ships (see docs/graphdef-format.md).

Fields are listed in .proto declaration order; `Message.fields_by_number`
is the order the binary encoder and the text printer write them in (as
protobuf's ListFields does).

A field of kind ``skip`` is known but not modelled (GraphDef.debug_info,
most of SavedObjectGraph's objects, TensorInfo.CompositeTensor.type_spec): binary
decoding skips it like an unknown field, text parsing skips its block, and it
never appears in a decoded dict.
"""

from __future__ import annotations

# kind -> protobuf wire type of one element
VARINT_KINDS = frozenset({"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool", "enum"})
FIXED64_KINDS = frozenset({"double", "fixed64", "sfixed64"})
FIXED32_KINDS = frozenset({"float", "fixed32", "sfixed32"})
LENGTH_KINDS = frozenset({"string", "bytes", "message", "map"})
SCALAR_KINDS = VARINT_KINDS | FIXED64_KINDS | FIXED32_KINDS | {"string", "bytes"}
PACKABLE_KINDS = VARINT_KINDS | FIXED64_KINDS | FIXED32_KINDS

WIRE_VARINT, WIRE_FIXED64, WIRE_LENGTH, WIRE_START_GROUP, WIRE_END_GROUP, WIRE_FIXED32 = 0, 1, 2, 3, 4, 5
WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 3: "start-group", 4: "end-group", 5: "32-bit"}


def wire_type_of(kind: str) -> int:
    if kind in VARINT_KINDS:
        return WIRE_VARINT
    if kind in FIXED64_KINDS:
        return WIRE_FIXED64
    if kind in FIXED32_KINDS:
        return WIRE_FIXED32
    return WIRE_LENGTH


class Field:
    """One field of a message.

    kind: a scalar kind ("int32", "string", "float", ...), "enum" (type_name
    names the enum), "message" (type_name names the message), "map"
    (key_kind is the key's scalar kind; value_kind and type_name the value's),
    or "skip" (known, not modelled).
    """

    __slots__ = ("name", "number", "kind", "type_name", "repeated", "oneof", "key_kind",
                 "value_kind", "wire_type", "packable", "entry")

    def __init__(self, name, number, kind, type_name=None, *, repeated=False, oneof=None,
                 key_kind=None, value_kind=None):
        self.name = name
        self.number = number
        self.kind = kind
        self.type_name = type_name
        self.repeated = repeated or kind == "map"
        self.oneof = oneof
        self.key_kind = key_kind
        self.value_kind = value_kind
        self.wire_type = wire_type_of(kind)
        self.packable = repeated and kind in PACKABLE_KINDS
        self.entry = None  # the synthetic entry Message of a map field, set by _link

    def __repr__(self):
        return f"Field({self.name!r}, {self.number}, {self.kind!r})"


class Message:
    __slots__ = ("name", "fields", "fields_by_number", "by_number", "by_name", "oneofs", "is_map_entry")

    def __init__(self, name, fields, *, is_map_entry=False):
        self.name = name
        self.fields = list(fields)  # declaration order
        self.fields_by_number = sorted(self.fields, key=lambda f: f.number)
        self.by_number = {f.number: f for f in self.fields}
        self.by_name = {f.name: f for f in self.fields}
        assert len(self.by_number) == len(self.fields), name
        assert len(self.by_name) == len(self.fields), name
        self.oneofs: dict[str, tuple[str, ...]] = {}
        for f in self.fields:
            if f.oneof:
                self.oneofs[f.oneof] = self.oneofs.get(f.oneof, ()) + (f.name,)
        self.is_map_entry = is_map_entry

    def __repr__(self):
        return f"Message({self.name!r})"


def F(name, number, kind, type_name=None, **kw):
    return Field(name, number, kind, type_name, **kw)


def R(name, number, kind, type_name=None, **kw):
    return Field(name, number, kind, type_name, repeated=True, **kw)


def M(name, number, key_kind, value):
    """A map field; `value` is a message name (capitalised) or a scalar kind."""
    if value in SCALAR_KINDS:
        return Field(name, number, "map", None, key_kind=key_kind, value_kind=value)
    return Field(name, number, "map", value, key_kind=key_kind, value_kind="message")


def SKIP(name, number):
    return Field(name, number, "skip")


ENUMS: dict[str, dict[int, str]] = {}

_DT = ["DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8",
       "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32",
       "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF",
       "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64", "DT_FLOAT8_E5M2",
       "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3B11FNUZ", "DT_FLOAT8_E5M2FNUZ",
       "DT_INT4", "DT_UINT4", "DT_INT2", "DT_UINT2", "DT_FLOAT4_E2M1FN"]
# types.proto: DT_x = n (0..33), and DT_x_REF = n + 100 for every n >= 1
ENUMS["DataType"] = {**dict(enumerate(_DT)), **{i + 100: f"{n}_REF" for i, n in enumerate(_DT) if i}}

ENUMS["FullTypeId"] = {
    0: "TFT_UNSET", 1: "TFT_VAR", 2: "TFT_ANY", 3: "TFT_PRODUCT", 4: "TFT_NAMED",
    20: "TFT_FOR_EACH", 100: "TFT_CALLABLE", 1000: "TFT_TENSOR", 1001: "TFT_ARRAY",
    1002: "TFT_OPTIONAL", 1003: "TFT_LITERAL", 1004: "TFT_ENCODED", 1005: "TFT_SHAPE_TENSOR",
    200: "TFT_BOOL", 201: "TFT_UINT8", 202: "TFT_UINT16", 203: "TFT_UINT32", 204: "TFT_UINT64",
    205: "TFT_INT8", 206: "TFT_INT16", 207: "TFT_INT32", 208: "TFT_INT64", 209: "TFT_HALF",
    210: "TFT_FLOAT", 211: "TFT_DOUBLE", 215: "TFT_BFLOAT16", 212: "TFT_COMPLEX64",
    213: "TFT_COMPLEX128", 214: "TFT_STRING", 10102: "TFT_DATASET", 10103: "TFT_RAGGED",
    10104: "TFT_ITERATOR", 10202: "TFT_MUTEX_LOCK", 10203: "TFT_LEGACY_VARIANT",
}
ENUMS["SaverDef.CheckpointFormatVersion"] = {0: "LEGACY", 1: "V1", 2: "V2"}

ENUM_NUMBERS: dict[str, dict[str, int]] = {
    enum: {name: number for number, name in values.items()} for enum, values in ENUMS.items()
}

_DEFS = [
    # graph.proto
    Message("GraphDef", [
        R("node", 1, "message", "NodeDef"),
        F("versions", 4, "message", "VersionDef"),
        F("version", 3, "int32"),  # deprecated
        F("library", 2, "message", "FunctionDefLibrary"),
        SKIP("debug_info", 5),
    ]),
    # node_def.proto
    Message("NodeDef", [
        F("name", 1, "string"),
        F("op", 2, "string"),
        R("input", 3, "string"),
        F("device", 4, "string"),
        M("attr", 5, "string", "AttrValue"),
        F("experimental_debug_info", 6, "message", "NodeDef.ExperimentalDebugInfo"),
        F("experimental_type", 7, "message", "FullTypeDef"),
    ]),
    Message("NodeDef.ExperimentalDebugInfo", [
        R("original_node_names", 1, "string"),
        R("original_func_names", 2, "string"),
    ]),
    # full_type.proto
    Message("FullTypeDef", [
        F("type_id", 1, "enum", "FullTypeId"),
        R("args", 2, "message", "FullTypeDef"),
        F("s", 3, "string", oneof="attr"),
        F("i", 4, "int64", oneof="attr"),
    ]),
    # attr_value.proto
    Message("AttrValue", [
        F("s", 2, "bytes", oneof="value"),
        F("i", 3, "int64", oneof="value"),
        F("f", 4, "float", oneof="value"),
        F("b", 5, "bool", oneof="value"),
        F("type", 6, "enum", "DataType", oneof="value"),
        F("shape", 7, "message", "TensorShapeProto", oneof="value"),
        F("tensor", 8, "message", "TensorProto", oneof="value"),
        F("list", 1, "message", "AttrValue.ListValue", oneof="value"),
        F("func", 10, "message", "NameAttrList", oneof="value"),
        F("placeholder", 9, "string", oneof="value"),
    ]),
    Message("AttrValue.ListValue", [
        R("s", 2, "bytes"),
        R("i", 3, "int64"),
        R("f", 4, "float"),
        R("b", 5, "bool"),
        R("type", 6, "enum", "DataType"),
        R("shape", 7, "message", "TensorShapeProto"),
        R("tensor", 8, "message", "TensorProto"),
        R("func", 9, "message", "NameAttrList"),
    ]),
    Message("NameAttrList", [
        F("name", 1, "string"),
        M("attr", 2, "string", "AttrValue"),
    ]),
    # tensor_shape.proto
    Message("TensorShapeProto", [
        R("dim", 2, "message", "TensorShapeProto.Dim"),
        F("unknown_rank", 3, "bool"),
    ]),
    Message("TensorShapeProto.Dim", [
        F("size", 1, "int64"),
        F("name", 2, "string"),
    ]),
    # tensor.proto
    Message("TensorProto", [
        F("dtype", 1, "enum", "DataType"),
        F("tensor_shape", 2, "message", "TensorShapeProto"),
        F("version_number", 3, "int32"),
        F("tensor_content", 4, "bytes"),
        R("half_val", 13, "int32"),
        R("float_val", 5, "float"),
        R("double_val", 6, "double"),
        R("int_val", 7, "int32"),
        R("string_val", 8, "bytes"),
        R("scomplex_val", 9, "float"),
        R("int64_val", 10, "int64"),
        R("bool_val", 11, "bool"),
        R("dcomplex_val", 12, "double"),
        R("resource_handle_val", 14, "message", "ResourceHandleProto"),
        R("variant_val", 15, "message", "VariantTensorDataProto"),
        R("uint32_val", 16, "uint32"),
        R("uint64_val", 17, "uint64"),
        F("float8_val", 18, "bytes"),
    ]),
    Message("VariantTensorDataProto", [
        F("type_name", 1, "string"),
        F("metadata", 2, "bytes"),
        R("tensors", 3, "message", "TensorProto"),
    ]),
    # resource_handle.proto
    Message("ResourceHandleProto", [
        F("device", 1, "string"),
        F("container", 2, "string"),
        F("name", 3, "string"),
        F("hash_code", 4, "uint64"),
        F("maybe_type_name", 5, "string"),
        R("dtypes_and_shapes", 6, "message", "ResourceHandleProto.DtypeAndShape"),
    ]),
    Message("ResourceHandleProto.DtypeAndShape", [
        F("dtype", 1, "enum", "DataType"),
        F("shape", 2, "message", "TensorShapeProto"),
    ]),
    # versions.proto
    Message("VersionDef", [
        F("producer", 1, "int32"),
        F("min_consumer", 2, "int32"),
        R("bad_consumers", 3, "int32"),
    ]),
    # function.proto
    Message("FunctionDefLibrary", [
        R("function", 1, "message", "FunctionDef"),
        R("gradient", 2, "message", "GradientDef"),
        R("registered_gradients", 3, "message", "RegisteredGradient"),
    ]),
    Message("FunctionDef", [
        F("signature", 1, "message", "OpDef"),
        M("attr", 5, "string", "AttrValue"),
        M("arg_attr", 7, "uint32", "FunctionDef.ArgAttrs"),
        M("resource_arg_unique_id", 8, "uint32", "uint32"),
        R("node_def", 3, "message", "NodeDef"),
        M("ret", 4, "string", "string"),
        M("control_ret", 6, "string", "string"),
    ]),
    Message("FunctionDef.ArgAttrs", [
        M("attr", 1, "string", "AttrValue"),
    ]),
    Message("GradientDef", [
        F("function_name", 1, "string"),
        F("gradient_func", 2, "string"),
    ]),
    Message("RegisteredGradient", [
        F("gradient_func", 1, "string"),
        F("registered_op_type", 2, "string"),
    ]),
    # op_def.proto
    Message("OpDef", [
        F("name", 1, "string"),
        R("input_arg", 2, "message", "OpDef.ArgDef"),
        R("output_arg", 3, "message", "OpDef.ArgDef"),
        R("control_output", 20, "string"),
        R("attr", 4, "message", "OpDef.AttrDef"),
        F("deprecation", 8, "message", "OpDeprecation"),
        F("summary", 5, "string"),
        F("description", 6, "string"),
        F("is_commutative", 18, "bool"),
        F("is_aggregate", 16, "bool"),
        F("is_stateful", 17, "bool"),
        F("allows_uninitialized_input", 19, "bool"),
        F("is_distributed_communication", 21, "bool"),
    ]),
    Message("OpDef.ArgDef", [
        F("name", 1, "string"),
        F("description", 2, "string"),
        F("type", 3, "enum", "DataType"),
        F("type_attr", 4, "string"),
        F("number_attr", 5, "string"),
        F("type_list_attr", 6, "string"),
        R("handle_data", 7, "message", "ResourceHandleProto.DtypeAndShape"),
        F("is_ref", 16, "bool"),
        F("experimental_full_type", 17, "message", "FullTypeDef"),
    ]),
    Message("OpDef.AttrDef", [
        F("name", 1, "string"),
        F("type", 2, "string"),
        F("default_value", 3, "message", "AttrValue"),
        F("description", 4, "string"),
        F("has_minimum", 5, "bool"),
        F("minimum", 6, "int64"),
        F("allowed_values", 7, "message", "AttrValue"),
    ]),
    Message("OpDeprecation", [
        F("version", 1, "int32"),
        F("explanation", 2, "string"),
    ]),
    Message("OpList", [
        R("op", 1, "message", "OpDef"),
    ]),
    # meta_graph.proto
    Message("MetaGraphDef", [
        F("meta_info_def", 1, "message", "MetaGraphDef.MetaInfoDef"),
        F("graph_def", 2, "message", "GraphDef"),
        F("saver_def", 3, "message", "SaverDef"),
        M("collection_def", 4, "string", "CollectionDef"),
        M("signature_def", 5, "string", "SignatureDef"),
        R("asset_file_def", 6, "message", "AssetFileDef"),
        F("object_graph_def", 7, "message", "SavedObjectGraph"),
    ]),
    # saved_object_graph.proto: only what names a SavedModel's variables
    # (a variable's name, and the objects a concrete function captures)
    Message("SavedObjectGraph", [
        R("nodes", 1, "message", "SavedObject"),
        M("concrete_functions", 2, "string", "SavedConcreteFunction"),
    ]),
    Message("SavedObject", [
        SKIP("children", 1),
        SKIP("dependencies", 15),
        SKIP("slot_variables", 3),
        SKIP("user_object", 4),
        SKIP("asset", 5),
        SKIP("function", 6),
        F("variable", 7, "message", "SavedVariable", oneof="kind"),
        SKIP("bare_concrete_function", 8),
        SKIP("constant", 9),
        SKIP("resource", 10),
        SKIP("captured_tensor", 12),
        SKIP("saveable_objects", 11),
        SKIP("registered_name", 13),
        SKIP("serialized_user_proto", 14),
        SKIP("registered_saver", 16),
    ]),
    Message("SavedVariable", [
        F("dtype", 1, "enum", "DataType"),
        F("shape", 2, "message", "TensorShapeProto"),
        F("trainable", 3, "bool"),
        SKIP("synchronization", 4),
        SKIP("aggregation", 5),
        F("name", 6, "string"),
        F("device", 7, "string"),
        SKIP("experimental_distributed_variable_components", 8),
    ]),
    Message("SavedConcreteFunction", [
        R("bound_inputs", 2, "int32"),
        SKIP("canonicalized_input_signature", 3),
        SKIP("output_signature", 4),
    ]),
    Message("MetaGraphDef.MetaInfoDef", [
        F("meta_graph_version", 1, "string"),
        F("stripped_op_list", 2, "message", "OpList"),
        F("any_info", 3, "message", "google.protobuf.Any"),
        R("tags", 4, "string"),
        F("tensorflow_version", 5, "string"),
        F("tensorflow_git_version", 6, "string"),
        F("stripped_default_attrs", 7, "bool"),
        M("function_aliases", 8, "string", "string"),
    ]),
    Message("google.protobuf.Any", [
        F("type_url", 1, "string"),
        F("value", 2, "bytes"),
    ]),
    Message("CollectionDef", [
        F("node_list", 1, "message", "CollectionDef.NodeList", oneof="kind"),
        F("bytes_list", 2, "message", "CollectionDef.BytesList", oneof="kind"),
        F("int64_list", 3, "message", "CollectionDef.Int64List", oneof="kind"),
        F("float_list", 4, "message", "CollectionDef.FloatList", oneof="kind"),
        F("any_list", 5, "message", "CollectionDef.AnyList", oneof="kind"),
    ]),
    Message("CollectionDef.NodeList", [R("value", 1, "string")]),
    Message("CollectionDef.BytesList", [R("value", 1, "bytes")]),
    Message("CollectionDef.Int64List", [R("value", 1, "int64")]),
    Message("CollectionDef.FloatList", [R("value", 1, "float")]),
    Message("CollectionDef.AnyList", [R("value", 1, "message", "google.protobuf.Any")]),
    Message("SignatureDef", [
        M("inputs", 1, "string", "TensorInfo"),
        M("outputs", 2, "string", "TensorInfo"),
        F("method_name", 3, "string"),
        M("defaults", 4, "string", "TensorProto"),
    ]),
    Message("TensorInfo", [
        F("name", 1, "string", oneof="encoding"),
        F("coo_sparse", 4, "message", "TensorInfo.CooSparse", oneof="encoding"),
        F("composite_tensor", 5, "message", "TensorInfo.CompositeTensor", oneof="encoding"),
        F("dtype", 2, "enum", "DataType"),
        F("tensor_shape", 3, "message", "TensorShapeProto"),
    ]),
    Message("TensorInfo.CooSparse", [
        F("values_tensor_name", 1, "string"),
        F("indices_tensor_name", 2, "string"),
        F("dense_shape_tensor_name", 3, "string"),
    ]),
    Message("TensorInfo.CompositeTensor", [
        SKIP("type_spec", 1),
        R("components", 2, "message", "TensorInfo"),
    ]),
    Message("AssetFileDef", [
        F("tensor_info", 1, "message", "TensorInfo"),
        F("filename", 2, "string"),
    ]),
    # saver.proto
    Message("SaverDef", [
        F("filename_tensor_name", 1, "string"),
        F("save_tensor_name", 2, "string"),
        F("restore_op_name", 3, "string"),
        F("max_to_keep", 4, "int32"),
        F("sharded", 5, "bool"),
        F("keep_checkpoint_every_n_hours", 6, "float"),
        F("version", 7, "enum", "SaverDef.CheckpointFormatVersion"),
    ]),
    # saved_model.proto
    Message("SavedModel", [
        F("saved_model_schema_version", 1, "int64"),
        R("meta_graphs", 2, "message", "MetaGraphDef"),
    ]),
]

MESSAGES: dict[str, Message] = {m.name: m for m in _DEFS}


def _link() -> None:
    """Check every reference and build the synthetic entry message of each map."""
    for message in list(MESSAGES.values()):
        for field in message.fields:
            if field.kind == "enum":
                assert field.type_name in ENUMS, (message.name, field.name)
            if field.kind == "message" or (field.kind == "map" and field.value_kind == "message"):
                assert field.type_name in MESSAGES, (message.name, field.name, field.type_name)
            if field.kind == "map":
                value = (F("value", 2, "message", field.type_name) if field.value_kind == "message"
                         else F("value", 2, field.value_kind))
                field.entry = Message(f"{message.name}.{field.name}", [F("key", 1, field.key_kind), value],
                                      is_map_entry=True)


_link()


def lookup(name: str) -> Message:
    """The message called `name` ("GraphDef", "tensorflow.GraphDef", "AttrValue.ListValue")."""
    from . import ProtoError

    if not isinstance(name, str):
        raise ProtoError(f"message name must be a string, got {type(name).__name__}")
    key = name[len("tensorflow."):] if name.startswith("tensorflow.") else name
    try:
        return MESSAGES[key]
    except KeyError:
        raise ProtoError(f"unknown message type {name!r}; known: {', '.join(sorted(MESSAGES))}") from None


def differences_from_tensorflow() -> list[str]:
    """Where this schema differs from the descriptors of the installed TensorFlow.

    Needs TensorFlow (and so its protobuf); tests call it where TensorFlow is
    installed and skip it elsewhere. Compares, for every message here, each
    field's number, type, label and referenced message or enum, and every
    enum's (name, number) pairs; fields TensorFlow has that are not here are
    reported unless the message lists them as `skip`.
    """
    from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: PLC0415
    from tensorflow.core.framework import graph_pb2, types_pb2  # noqa: PLC0415
    from tensorflow.core.protobuf import saved_model_pb2  # noqa: PLC0415

    names = {getattr(FD, k): k[len("TYPE_"):].lower() for k in dir(FD) if k.startswith("TYPE_")}
    pool = graph_pb2.GraphDef.DESCRIPTOR.file.pool
    del saved_model_pb2, types_pb2  # imported so that the pool holds their messages
    problems: list[str] = []

    def tf_name(name: str) -> str:
        return name if name.startswith("google.") else "tensorflow." + name

    for message in MESSAGES.values():
        try:
            desc = pool.FindMessageTypeByName(tf_name(message.name))
        except KeyError:
            problems.append(f"{message.name}: not in TensorFlow")
            continue
        for tf_field in desc.fields:
            field = message.by_name.get(tf_field.name)
            if field is None:
                problems.append(f"{message.name}.{tf_field.name} ({tf_field.number}): missing")
                continue
            if field.number != tf_field.number:
                problems.append(f"{message.name}.{field.name}: number {field.number}, TensorFlow {tf_field.number}")
            if field.kind == "skip":
                continue
            tf_kind = names[tf_field.type]
            tf_map = tf_field.message_type is not None and tf_field.message_type.GetOptions().map_entry
            if tf_map:
                key = tf_field.message_type.fields_by_name["key"]
                value = tf_field.message_type.fields_by_name["value"]
                got = (field.kind, field.key_kind, field.value_kind,
                       field.type_name if field.value_kind == "message" else None)
                want = ("map", names[key.type], names[value.type],
                        value.message_type.full_name.removeprefix("tensorflow.") if value.message_type else None)
            else:
                ref = tf_field.message_type or tf_field.enum_type
                got = (field.kind, field.repeated, field.type_name, field.oneof)
                want = (tf_kind, tf_field.is_repeated if hasattr(tf_field, "is_repeated")
                        else tf_field.label == FD.LABEL_REPEATED,
                        ref.full_name.removeprefix("tensorflow.") if ref else None,
                        tf_field.containing_oneof.name if tf_field.containing_oneof else None)
            if got != want:
                problems.append(f"{message.name}.{field.name}: {got}, TensorFlow {want}")
        for field in message.fields:
            if field.name not in desc.fields_by_name:
                problems.append(f"{message.name}.{field.name}: not in TensorFlow")
    for enum, values in ENUMS.items():
        desc = pool.FindEnumTypeByName("tensorflow." + enum)
        tf_values = {v.number: v.name for v in desc.values}
        if tf_values != values:
            problems.append(f"enum {enum}: differs: {sorted(set(tf_values.items()) ^ set(values.items()))}")
    return problems
