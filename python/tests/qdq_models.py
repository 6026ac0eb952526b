"""Small QDQ models built with Debian's onnx package (onnx.helper) for the tests."""

from __future__ import annotations


def _activation_qdq(nodes: list, inits: list, src: str, name: str, scale: float, zp: int) -> str:
    """Appends Q "{name}_q" -> DQ "{name}_dq" (U8, per-tensor) on `src`; returns the DQ output."""
    from onnx import helper, numpy_helper
    import numpy as np

    inits.append(numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale"))
    inits.append(numpy_helper.from_array(np.array(zp, np.uint8), f"{name}_zp"))
    nodes.append(helper.make_node("QuantizeLinear", [src, f"{name}_scale", f"{name}_zp"],
                                  [f"{name}_q_out"], name=f"{name}_q"))
    nodes.append(helper.make_node("DequantizeLinear",
                                  [f"{name}_q_out", f"{name}_scale", f"{name}_zp"],
                                  [f"{name}_dq_out"], name=f"{name}_dq"))
    return f"{name}_dq_out"


def per_tensor_conv_chain(onnx, n: int, channels: int = 4):
    """input -> Q/DQ (U8) -> n x [Conv (weight INT8 -> DQ *per-tensor*) -> Q/DQ (U8)] -> output.

    Every conv{i} violates role/weight-type (weights must be per-channel symmetric)."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    nodes, inits = [], []

    def qdq(src: str, name: str, scale: float, zp: int) -> str:
        return _activation_qdq(nodes, inits, src, name, scale, zp)

    cur = qdq("input", "input", 0.02, 128)
    rng = np.random.default_rng(0)
    for i in range(n):
        w = rng.integers(-100, 100, size=(channels, channels, 1, 1)).astype(np.int8)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        inits.append(numpy_helper.from_array(np.array(0.01, np.float32), f"w{i}_scale"))
        inits.append(numpy_helper.from_array(np.array(0, np.int8), f"w{i}_zp"))
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}", f"w{i}_scale", f"w{i}_zp"],
                                      [f"w{i}_dq_out"], name=f"w{i}_dq"))
        nodes.append(helper.make_node("Conv", [cur, f"w{i}_dq_out"], [f"conv{i}_out"],
                                      name=f"conv{i}"))
        cur = qdq(f"conv{i}_out", f"conv{i}", 0.05, 128)
    graph = helper.make_graph(
        nodes, "per_tensor_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, 8, 8])],
        [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, channels, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="axqc-tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def int4_in_int8_conv(onnx, channels: int = 8):
    """input -> Q/DQ (U8) -> Conv "conv" (weight "w": INT8 [channels, 4, 3, 3] whose values all lie
    in [-8, 7], as a 4-bit QAT flow exports them -> DQ "w_dq", per-channel, zero point 0) -> Q/DQ
    (U8) -> output, at opset 21 (IR 10): where the opt-in rewrite int4-weight-storage applies.

    Not passed to onnx.checker: Debian's onnx predates opset 21 (axqc checks the model itself)."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    nodes, inits = [], []

    def qdq(src: str, name: str, scale: float, zp: int) -> str:
        return _activation_qdq(nodes, inits, src, name, scale, zp)

    x = qdq("input", "input", 0.02, 128)
    w = (np.arange(channels * 4 * 3 * 3) % 16 - 8).astype(np.int8).reshape(channels, 4, 3, 3)
    inits.append(numpy_helper.from_array(w, "w"))
    inits.append(numpy_helper.from_array(
        (0.01 * np.arange(1, channels + 1)).astype(np.float32), "w_scale"))
    inits.append(numpy_helper.from_array(np.zeros(channels, np.int8), "w_zp"))
    nodes.append(helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zp"], ["w_dq_out"],
                                  name="w_dq", axis=0))
    nodes.append(helper.make_node("Conv", [x, "w_dq_out"], ["conv_out"], name="conv",
                                  pads=[1, 1, 1, 1]))
    y = qdq("conv_out", "conv", 0.05, 0)
    graph = helper.make_graph(
        nodes, "int4_in_int8",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, channels, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                              producer_name="axqc-tests")
    model.ir_version = 10
    return model
