// An island that writes x, which no fetch reaches, beside one that reads y
// (fetched).  Every island runs, so deleting the write changes the final x.
module {
  func.func @main(%x: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"},
                  %y: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> tensor<i64>
      attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r"}} {
    %0 = tf_executor.graph {
      %one, %c1 = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %ctl = tf_executor.island wraps "tf.AssignVariableOp"(%x, %one) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      %r, %c2 = tf_executor.island wraps "tf.ReadVariableOp"(%y) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
      tf_executor.fetch %r : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
