"""TensorFlow graphs in and out: GraphDef, MetaGraphDef and SavedModel import,
export of tfsem programs as GraphDefs, and the op table between the two.

Reading a graph needs no TensorFlow: `graphdef.proto` decodes the protobuf
wire and text formats from descriptors of the few messages tfsem reads.
"""
