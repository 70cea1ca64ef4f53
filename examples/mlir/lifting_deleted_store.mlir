// Found by tfsem fuzz --target mlir-cluster:tf-resource-op-lifting with the module generator
// (docs/mlir.md, finding G): a cluster writes x0 := a, x0 += b, x0 := c; another island reads x0.
// Lifting deletes the first store (it keeps only the last AssignVariableOp) though the
// AssignAddVariableOp it leaves in the cluster reads it: the reader can now see x0_init + b, a value
// no interleaving of the original gives.  Sound when tf-device-decompose-resource-ops-in-cluster runs first.
//   tfsem mlir examples/mlir/lifting_deleted_store.mlir --pipeline tf-resource-op-lifting
// is unsound in both modes, confirmed on TensorFlow.
module {
  func.func @main(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<i64>) -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "island4/const3_fed,island3/cluster1/const6_fed,island3/cluster1/read5_fed", outputs = "out0"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island {
        %1 = "tf.VarHandleOp"() <{container = "", shared_name = "x0"}> : () -> tensor<!tf_type.resource<tensor<i64>>>
        tf_executor.yield %1 : tensor<!tf_type.resource<tensor<i64>>>
      }
      %control_0 = tf_executor.island {
        "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%outputs, %arg0) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          "tf.AssignAddVariableOp"(%outputs, %arg1) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          "tf.AssignVariableOp"(%outputs, %arg2) : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          tf_device.return
        }) : () -> ()
        tf_executor.yield
      }
      %outputs_1, %control_2 = tf_executor.island {
        %1 = "tf_device.cluster"() ({
          %2 = "tf.ReadVariableOp"(%outputs) : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %2 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %1 : tensor<i64>
      }
      tf_executor.fetch %outputs_1, %control_0 : tensor<i64>, !tf_executor.control
    }
    return %0 : tensor<i64>
  }
}
