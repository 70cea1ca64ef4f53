// Store buffering: the cluster writes x then reads y; another island writes
// y then reads x.  Under every interleaving at least one read sees the
// other's write (r_cluster = 1 or r_island = 1).  Lifting reads out of the
// cluster and sinking its write after it loses that (docs/mlir.md).
module {
  func.func @main(%x: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "x"},
                  %y: tensor<!tf_type.resource<tensor<i64>>> {tf.resource_name = "y"}) -> (tensor<i64>, tensor<i64>)
      attributes {tf.entry_function = {control_outputs = "", inputs = "x,y", outputs = "r_cluster,r_island"}} {
    %0:2 = tf_executor.graph {
      %one, %c1 = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
      %r0, %ctl1 = tf_executor.island {
        %v = "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%x, %one) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %r = "tf.ReadVariableOp"(%y) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %r : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %v : tensor<i64>
      }
      %r1, %ctl2 = tf_executor.island {
        "tf.AssignVariableOp"(%y, %one) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
        %r = "tf.ReadVariableOp"(%x) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
        tf_executor.yield %r : tensor<i64>
      }
      tf_executor.fetch %r0, %r1 : tensor<i64>, tensor<i64>
    }
    return %0#0, %0#1 : tensor<i64>, tensor<i64>
  }
}
