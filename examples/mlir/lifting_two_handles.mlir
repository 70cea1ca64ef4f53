// Found by tfsem fuzz --target mlir-cluster:tf-resource-op-lifting (docs/mlir.md, finding A):
// in a cluster, AssignAdd x through one VarHandleOp of x, then a read of x through
// another handle of x.  tf-resource-op-lifting hoists the read above the cluster:
//   tfsem mlir examples/mlir/lifting_two_handles.mlir --pipeline tf-resource-op-lifting
// is unsound in both modes, confirmed on TensorFlow.
// (A generated program, exported, imported by TensorFlow 2.21, a tf_device.cluster built around its accesses.)
module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} {
  func.func @main() -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "", outputs = "out"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<i64>>>
      %outputs_0, %control_1 = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<i64>>>
      %outputs_2, %control_3 = tf_executor.island wraps "tf.Const"() <{value = dense<1> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      %tfsem_cluster, %tfsem_cluster_ctl = tf_executor.island {
        %tfsem_c = "tf_device.cluster"() ({
          "tf.AssignAddVariableOp"(%outputs, %outputs_2) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %tfsem_v1 = "tf.ReadVariableOp"(%outputs_0) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %tfsem_v1 : tensor<i64>
        }) : () -> tensor<i64>
        tf_executor.yield %tfsem_c : tensor<i64>
      }
      %outputs_7, %control_8 = tf_executor.island wraps "tf.Identity"(%tfsem_cluster) {device = ""} : (tensor<i64>) -> tensor<i64>
      tf_executor.fetch %outputs_7 : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
