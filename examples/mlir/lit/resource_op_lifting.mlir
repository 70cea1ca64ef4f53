// RUN: tf-opt %s -split-input-file -tf-resource-op-lifting
//
// Cases of TensorFlow's lit test
// tensorflow/compiler/mlir/tensorflow/tests/resource_op_lifting.mlir
// (https://github.com/tensorflow/tensorflow; Copyright The TensorFlow Authors;
// Apache License 2.0), their CHECK lines left out, their syntax brought up to
// date (func @ -> func.func @, !tf.resource -> !tf_type.resource, "( {" ->
// "({", the copy available to us being from 2020).  tfsem's corpus of lit
// inputs: docs/mlir.md, "TensorFlow's lit tests as a corpus".

func.func @only_resource_load() -> tensor<*xi32> {
  %0 = "tf.VarHandleOp"() {container = "c", shared_name = "v"} : () -> tensor<*x!tf_type.resource<tensor<*xi32>>>
  %1 = "tf_device.cluster"() ({
    %2 = "tf.ReadVariableOp"(%0) {dtype = i32} : (tensor<*x!tf_type.resource<tensor<*xi32>>>) -> tensor<*xi32>
    %3 = "tf.SomeComputation"(%2) : (tensor<*xi32>) -> (tensor<*xi32>)
    tf_device.return %3 : tensor<*xi32>
  }) {cluster_attr = "cluster_attr"} : () -> tensor<*xi32>
  func.return %1 : tensor<*xi32>
}

// -----

func.func @same_resource_load_and_store() -> tensor<*xi32> {
  %0 = "tf.VarHandleOp"() {container = "c", shared_name = "v"} : () -> tensor<*x!tf_type.resource<tensor<*xi32>>>
  %1 = "tf_device.cluster"() ({
    %2 = "tf.ReadVariableOp"(%0) {dtype = i32} : (tensor<*x!tf_type.resource<tensor<*xi32>>>) -> tensor<*xi32>
    %3 = "tf.SomeComputation"(%2) : (tensor<*xi32>) -> (tensor<*xi32>)
    "tf.AssignVariableOp"(%0, %3) {dtype = i32} : (tensor<*x!tf_type.resource<tensor<*xi32>>>, tensor<*xi32>) -> ()
    tf_device.return %3 : tensor<*xi32>
  }) {cluster_attr = "cluster_attr"} : () -> tensor<*xi32>
  func.return %1 : tensor<*xi32>
}

// -----

func.func @internal_resource() -> tensor<*xi32> {
  %0 = "tf_device.cluster"() ({
    %1 = "tf.VarHandleOp"() {container = "c", shared_name = "v"} : () -> tensor<*x!tf_type.resource<tensor<*xi32>>>
    %2 = "tf.ReadVariableOp"(%1) {dtype = i32} : (tensor<*x!tf_type.resource<tensor<*xi32>>>) -> tensor<*xi32>
    %3 = "tf.SomeComputation"(%2) : (tensor<*xi32>) -> (tensor<*xi32>)
    "tf.AssignVariableOp"(%1, %3) {dtype = i32} : (tensor<*x!tf_type.resource<tensor<*xi32>>>, tensor<*xi32>) -> ()
    tf_device.return %3 : tensor<*xi32>
  }) {cluster_attr = "cluster_attr"} : () -> tensor<*xi32>
  func.return %0 : tensor<*xi32>
}
