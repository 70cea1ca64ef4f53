module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}, %arg1: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %control_0 = tf_executor.island wraps "tf.AssignVariableOp"(%arg0, %outputs) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      %outputs_1, %control_2 = tf_executor.island wraps "tf.ReadVariableOp"(%arg1) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
      tf_executor.fetch %outputs_1, %control_0, %control_2 : tensor<i64>, !tf_executor.control, !tf_executor.control
    }
    return %0 : tensor<i64>
  }
}
