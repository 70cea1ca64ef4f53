// tf-resource-op-lifting's output (TensorFlow 2.21) on lifting_forwards_past_update.mlir:
// the cluster returns the stored constant 5 (%outputs_0), not x after the AssignSubVariableOp.
module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} {
  func.func @main() -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "", outputs = "out"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<i64>>>
      %outputs_0, %control_1 = tf_executor.island wraps "tf.Const"() <{value = dense<5> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      %outputs_2, %control_3 = tf_executor.island wraps "tf.Const"() <{value = dense<2> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      %outputs_4, %control_5 = tf_executor.island {
        %1 = "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%outputs, %outputs_0) <{validate_shape = false}> {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          "tf.AssignSubVariableOp"(%outputs, %outputs_2) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          tf_device.return %outputs_0 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %1 : tensor<i64>
      }
      %outputs_6, %control_7 = tf_executor.island wraps "tf.Identity"(%outputs_4) {device = ""} : (tensor<i64>) -> tensor<i64>
      tf_executor.fetch %outputs_6 : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
