module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}) {
    tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %control_0 = tf_executor.island {
        %0 = "tf.ReadVariableOp"(%arg0) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
        %1 = "tf_device.cluster"() ({
          %2 = "tf.AddV2"(%0, %outputs) : (tensor<i64>, tensor<i64>) -> tensor<i64>
          tf_device.return %2 : tensor<i64>
        }) : () -> tensor<i64>
        "tf.AssignVariableOp"(%arg0, %1) <{validate_shape = false}> : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
        tf_executor.yield
      }
      %control_1 = tf_executor.island wraps "tf.AssignAddVariableOp"(%arg0, %outputs) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      tf_executor.fetch %control_0, %control_1 : !tf_executor.control, !tf_executor.control
    }
    return
  }
}
