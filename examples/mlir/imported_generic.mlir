"builtin.module"() ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<f32>):
    %0 = "tf_executor.graph"() ({
      %1:2 = "tf_executor.island"() ({
        %10 = "tf.Const"() <{value = dense<1.000000e+00> : tensor<f32>}> {device = ""} : () -> tensor<f32>
        "tf_executor.yield"(%10) : (tensor<f32>) -> ()
      }) : () -> (tensor<f32>, !tf_executor.control)
      %2:2 = "tf_executor.island"() ({
        %9 = "tf.VarHandleOp"() <{container = "", shared_name = "x"}> {allowed_devices = [], debug_name = "", device = ""} : () -> tensor<!tf_type.resource<tensor<f32>>>
        "tf_executor.yield"(%9) : (tensor<!tf_type.resource<tensor<f32>>>) -> ()
      }) : () -> (tensor<!tf_type.resource<tensor<f32>>>, !tf_executor.control)
      %3 = "tf_executor.island"() ({
        "tf.AssignAddVariableOp"(%2#0, %1#0) {_has_manual_control_dependencies = true, device = ""} : (tensor<!tf_type.resource<tensor<f32>>>, tensor<f32>) -> ()
        "tf_executor.yield"() : () -> ()
      }) : () -> !tf_executor.control
      %4:2 = "tf_executor.island"(%3) ({
        %8 = "tf.ReadVariableOp"(%2#0) {device = ""} : (tensor<!tf_type.resource<tensor<f32>>>) -> tensor<f32>
        "tf_executor.yield"(%8) : (tensor<f32>) -> ()
      }) : (!tf_executor.control) -> (tensor<f32>, !tf_executor.control)
      %5:2 = "tf_executor.island"() ({
        %7 = "tf.AddV2"(%4#0, %arg0) {device = ""} : (tensor<f32>, tensor<f32>) -> tensor<f32>
        "tf_executor.yield"(%7) : (tensor<f32>) -> ()
      }) : () -> (tensor<f32>, !tf_executor.control)
      %6 = "tf_executor.island"() ({
        "tf.AssignAddVariableOp"(%2#0, %1#0) {device = ""} : (tensor<!tf_type.resource<tensor<f32>>>, tensor<f32>) -> ()
        "tf_executor.yield"() : () -> ()
      }) : () -> !tf_executor.control
      "tf_executor.fetch"(%5#0) : (tensor<f32>) -> ()
    }) : () -> tensor<f32>
    "func.return"(%0) : (tensor<f32>) -> ()
  }) {tf.entry_function = {control_outputs = "", inputs = "p", outputs = "s"}} : () -> ()
}) {tf.versions = {bad_consumers = [], min_consumer = 0 : i32, producer = 2474 : i32}} : () -> ()
