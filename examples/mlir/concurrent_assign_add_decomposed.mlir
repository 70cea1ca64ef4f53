module {
  func.func @main(%arg0: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"}) {
    tf_executor.graph {
      %c, %cc = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %ctl1 = tf_executor.island {
        %r = "tf.ReadVariableOp"(%arg0) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
        %s = "tf.AddV2"(%r, %c) : (tensor<i64>, tensor<i64>) -> tensor<i64>
        "tf.AssignVariableOp"(%arg0, %s) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
        tf_executor.yield
      }
      %ctl2 = tf_executor.island wraps "tf.AssignAddVariableOp"(%arg0, %c) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      tf_executor.fetch %ctl1, %ctl2 : !tf_executor.control, !tf_executor.control
    }
    return
  }
}
