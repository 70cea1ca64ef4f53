module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}, %arg1: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> (tensor<i64>, tensor<i64>) attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r_cluster,r_island"}} {
    %0:2 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %outputs_0, %control_1 = tf_executor.island {
        %1 = "tf.ReadVariableOp"(%arg1) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
        %2:2 = "tf_device.cluster"() ({
          tf_device.return %1, %outputs : tensor<i64>, tensor<i64>
        }) : () -> (tensor<i64>, tensor<i64>)
        "tf.AssignVariableOp"(%arg0, %2#1) <{validate_shape = false}> : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
        tf_executor.yield %2#0 : tensor<i64>
      }
      %outputs_2, %control_3 = tf_executor.island {
        "tf.AssignVariableOp"(%arg1, %outputs) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
        %1 = "tf.ReadVariableOp"(%arg0) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
        tf_executor.yield %1 : tensor<i64>
      }
      tf_executor.fetch %outputs_0, %outputs_2 : tensor<i64>, tensor<i64>
    }
    return %0#0, %0#1 : tensor<i64>, tensor<i64>
  }
}
