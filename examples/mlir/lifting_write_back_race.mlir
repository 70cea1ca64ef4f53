// Found by tfsem fuzz --target mlir-cluster:tf-device-decompose-resource-ops-in-cluster,tf-resource-op-lifting
// (docs/mlir.md, finding B): the cluster reads x, adds it to x, reads x again;
// an AssignSub outside consumes that read.  After decomposition and lifting the
// write-back sunk after the cluster is not ordered with the AssignSub:
//   tfsem mlir examples/mlir/lifting_write_back_race.mlir --pipeline 'tf-device-decompose-resource-ops-in-cluster,tf-resource-op-lifting'
// is unsound in both modes, confirmed on TensorFlow.
// (A generated program, exported, imported by TensorFlow 2.21, a tf_device.cluster built around its accesses.)
module attributes {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} {
  func.func @main() -> tensor<i64> attributes {tf.entry_function = {control_outputs = "", inputs = "", outputs = "s/_tfsem_target"}} {
    %0 = tf_executor.graph {
      %outputs, %control = tf_executor.island wraps "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<i64>>>
      %tfsem_cluster:2, %tfsem_cluster_ctl = tf_executor.island {
        %tfsem_c:2 = "tf_device.cluster"() ({
          %tfsem_v0 = "tf.ReadVariableOp"(%outputs) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          "tf.AssignAddVariableOp"(%outputs, %tfsem_v0) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
          %tfsem_v2 = "tf.ReadVariableOp"(%outputs) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>) -> tensor<i64>
          tf_device.return %tfsem_v0, %tfsem_v2 : tensor<i64>, tensor<i64>
        }) : () -> (tensor<i64>, tensor<i64>)
        tf_executor.yield %tfsem_c#0, %tfsem_c#1 : tensor<i64>, tensor<i64>
      }
      %control_5 = tf_executor.island wraps "tf.AssignSubVariableOp"(%outputs, %tfsem_cluster#1) {device = ""} : (tensor<!tf_type.resource<tensor<i64>>>, tensor<i64>) -> ()
      %outputs_6, %control_7 = tf_executor.island(%control_5) wraps "tf.Const"() <{value = dense<0> : tensor<i64>}> {device = ""} : () -> tensor<i64>
      tf_executor.fetch %outputs_6 : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
