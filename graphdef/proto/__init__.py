"""The protobuf wire and text formats of the TensorFlow messages tfsem reads."""
