// Found by tfsem fuzz --target mlir-cluster:tf-resource-op-lifting (docs/mlir-campaigns.md,
// kind F, new in the 30-minute campaign): in a cluster, x := 5, then x -= 2, then a read
// of x.  tf-resource-op-lifting forwards the value written by the AssignVariableOp (5) to
// the read as if the AssignSubVariableOp between them were not there, which it leaves in
// the cluster; the read gave 3.  One island, one handle, no concurrency: a plain miscompile.
//   tfsem mlir examples/mlir/lifting_forwards_past_update.mlir --pipeline tf-resource-op-lifting
// is unsound in both modes (out = 5 where the original gives 3), confirmed on TensorFlow.
// TensorFlow 2.21's output is lifting_forwards_past_update.lifted.mlir.
// (Shrunk by hand from finding 25 of that campaign, 14 nodes; a generated program, exported,
// imported by TensorFlow 2.21, a tf_device.cluster built around its accesses.)
module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} {
  func.func @main() -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "", outputs = "out"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<i64>>>
      %outputs_0, %control_1 = tf_executor.island wraps "tf.Const"() <{value = dense<5> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      %outputs_2, %control_3 = tf_executor.island wraps "tf.Const"() <{value = dense<2> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      %tfsem_cluster, %tfsem_cluster_ctl = tf_executor.island {
        %tfsem_c = "tf_device.cluster"() ({
          "tf.AssignVariableOp"(%outputs, %outputs_0) <{validate_shape = false}> {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          "tf.AssignSubVariableOp"(%outputs, %outputs_2) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %tfsem_v2 = "tf.ReadVariableOp"(%outputs) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %tfsem_v2 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %tfsem_c : tensor<i64>
      }
      %outputs_7, %control_8 = tf_executor.island wraps "tf.Identity"(%tfsem_cluster) {device = ""} : (tensor<i64>) -> tensor<i64>
      tf_executor.fetch %outputs_7 : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
