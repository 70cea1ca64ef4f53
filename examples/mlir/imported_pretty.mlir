module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> attributes {tf.entry_function = {control_outputs = "", inputs = "p", outputs = "s"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.Const"() <{value = dense<1.000000e+00> : tensor<f32>}> {device = ""} : () -> tensor<f32>
      %outputs_0, %control_1 = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<f32>>>
      %control_2 = tf_executor.island wraps "tf.AssignAddVariableOp"(%outputs_0, %outputs) {_has_manual_control_dependencies = true, device = ""} : (tensor<!tf_type.resource<tensor<f32>>>, tensor<f32>) -> ()
      %outputs_3, %control_4 = tf_executor.island(%control_2) wraps "tf.ReadVariableOp"(%outputs_0) {device = ""} : (tensor<!tf_type.resource<tensor<f32>>>) -> tensor<f32>
      %outputs_5, %control_6 = tf_executor.island wraps "tf.AddV2"(%outputs_3, %arg0) {device = ""} : (tensor<f32>, tensor<f32>) -> tensor<f32>
      %control_7 = tf_executor.island wraps "tf.AssignAddVariableOp"(%outputs_0, %outputs) {device = ""} : (tensor<!tf_type.resource<tensor<f32>>>, tensor<f32>) -> ()
      tf_executor.fetch %outputs_5 : tensor<f32>
    }
    return %0 : tensor<f32>
  }
}
