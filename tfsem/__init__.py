"""tfsem: a verifier for graph rewrites of TensorFlow-style dataflow programs."""

__version__ = "0.1.0"
