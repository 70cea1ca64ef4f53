// Found by tfsem fuzz --target mlir-cluster:tf-resource-op-lifting with the module generator
// (docs/mlir.md, finding F): in one cluster, x0 := a; x0 -= a; read x0.  Lifting forwards the
// stored a to the read past the AssignSubVariableOp it does not lift: the read gives a, not 0
// (no concurrency involved).  Sound when tf-device-decompose-resource-ops-in-cluster runs first.
//   tfsem mlir examples/mlir/lifting_forward_past_update.mlir --pipeline tf-resource-op-lifting
// is unsound in both modes, confirmed on TensorFlow.
module {
  func.func @main(%arg0: tensor<i64>) -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "a", outputs = "out0"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island {
        %1 = "tf.VarHandleOp"() <{container = "", shared_name = "x0"}> : () -> tensor<!tf_type.resource<tensor<i64>>>
        tf_executor.yield %1 : tensor<!tf_type.resource<tensor<i64>>>
      }
      %outputs_0, %control_1 = tf_executor.island {
        %1 = "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%outputs, %arg0) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          "tf.AssignSubVariableOp"(%outputs, %arg0) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %2 = "tf.ReadVariableOp"(%outputs) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %2 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %1 : tensor<i64>
      }
      tf_executor.fetch %outputs_0 : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
