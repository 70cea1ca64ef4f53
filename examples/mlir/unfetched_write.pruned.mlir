module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}, %arg1: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.ReadVariableOp"(%arg1) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
      tf_executor.fetch %outputs : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
