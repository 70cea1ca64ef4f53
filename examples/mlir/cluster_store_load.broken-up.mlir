module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}, %arg1: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> (tensor<i64>, tensor<i64>) attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r_cluster,r_island"}} {
    %0:2 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %outputs_0, %control_1 = tf_executor.island {
        %1 = "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%arg0, %outputs) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %2 = "tf.ReadVariableOp"(%arg1) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %2 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %1 : tensor<i64>
      }
      %control_2 = tf_executor.island wraps "tf.AssignVariableOp"(%arg1, %outputs) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      %outputs_3, %control_4 = tf_executor.island wraps "tf.ReadVariableOp"(%arg0) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
      %control_5 = tf_executor.island(%control_2, %control_4) wraps "tf.NoOp"() : () -> ()
      tf_executor.fetch %outputs_0, %outputs_3, %control_5 : tensor<i64>, tensor<i64>, !tf_executor.control
    }
    return %0#0, %0#1 : tensor<i64>, tensor<i64>
  }
}
