// Small models with one kind of exporter artifact each, for the tests of `axqc fix`: the unit
// tests (tests/unit/fix_test.cc) check what each rewrite does to them, and the runtime test
// (tests/ort/fix_ort_test.sh, through axqc-fix-fixtures) runs every one before and after the fix
// in onnxruntime and compares the outputs. Every model is valid ONNX and runs in onnxruntime.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "modelgen/model_builder.h"

namespace axqc::test::fixmodels {

using modelgen::Dim;
using modelgen::ModelBuilder;
using modelgen::QParams;
using modelgen::QType;
using TP = onnx::TensorProto;

inline onnx::AttributeProto AttrStrings(const std::string& name,
                                        const std::vector<std::string>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a.add_strings(s);
  return a;
}

// A sparse FLOAT tensor of shape `dims` with `values` at the linear positions `indices`.
inline onnx::AttributeProto AttrSparse(const std::string& name, std::vector<std::int64_t> dims,
                                       const std::vector<float>& values,
                                       const std::vector<std::int64_t>& indices) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::SPARSE_TENSOR);
  auto* sp = a.mutable_sparse_tensor();
  for (auto d : dims) sp->add_dims(d);
  *sp->mutable_values() = ModelBuilder::MakeF32("v", {static_cast<std::int64_t>(values.size())},
                                                values, modelgen::Storage::kTyped);
  *sp->mutable_indices() =
      ModelBuilder::MakeInt("i", TP::INT64, {static_cast<std::int64_t>(indices.size())}, indices,
                            modelgen::Storage::kTyped);
  return a;
}

inline onnx::ValueInfoProto Vi(const std::string& name, int elem,
                               const std::vector<std::int64_t>& dims) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (auto d : dims) shape->add_dim()->set_dim_value(d);
  return vi;
}

// constant-to-initializer: a Q/DQ model whose scale, zero_point and operands are Constant nodes
// of every form (value, value_float, value_floats, value_int, value_ints, value_string,
// value_strings, sparse_value), plus a Constant that is a graph output (kept).
inline onnx::ModelProto ConstantForms() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Constant", {}, {"c_scale"}, {ModelBuilder::AttrF("value_float", 0.02f)}, "c_scale");
  b.Node("Constant", {}, {"c_zp"},
         {ModelBuilder::AttrT("value", ModelBuilder::MakeInt("zp", TP::UINT8, {}, {128}))}, "c_zp");
  b.Node("QuantizeLinear", {"x", "c_scale", "c_zp"}, {"xq"}, {}, "x_q");
  b.Node("DequantizeLinear", {"xq", "c_scale", "c_zp"}, {"xd"}, {}, "x_dq");
  b.Node("Constant", {}, {"c_vec"}, {ModelBuilder::AttrFloats("value_floats", {1, 2, 3, 4})},
         "c_vec");
  b.Node("Add", {"xd", "c_vec"}, {"a"}, {}, "add");
  b.Node("Constant", {}, {"c_sparse"}, {AttrSparse("sparse_value", {4}, {0.5f, 2.0f}, {1, 3})},
         "c_sparse");
  b.Node("Mul", {"a", "c_sparse"}, {"m"}, {}, "mul");
  b.Node("Constant", {}, {"c_shape"}, {ModelBuilder::AttrInts("value_ints", {2, 2})}, "c_shape");
  b.Node("Reshape", {"m", "c_shape"}, {"r"}, {}, "reshape");
  b.Node("Constant", {}, {"c_idx"}, {ModelBuilder::AttrI("value_int", 1)}, "c_idx");
  b.Node("Gather", {"r", "c_idx"}, {"y"}, {ModelBuilder::AttrI("axis", 0)}, "gather");
  b.Output("y", TP::FLOAT, {2});
  b.Node("Constant", {}, {"c_labels"}, {AttrStrings("value_strings", {"ab", "cd"})}, "c_labels");
  b.Node("Identity", {"c_labels"}, {"labels"}, {}, "labels");
  b.Output("labels", TP::STRING, {2});
  b.Node("Constant", {}, {"c_label"}, {ModelBuilder::AttrS("value_string", "x")}, "c_label");
  b.Node("Identity", {"c_label"}, {"label"}, {}, "label");
  b.Output("label", TP::STRING, {});
  b.Node("Constant", {}, {"k"}, {ModelBuilder::AttrF("value_float", 3.0f)}, "c_out");
  b.Output("k", TP::FLOAT, {});
  return b.Build();
}

// identity-of-initializer: scale, zero_point and a bias read through Identity nodes (a chain of
// two for the scale), the bias also read by both branches of an If (outer-scope reads) and by an
// Identity that is a graph output (kept).
inline onnx::ModelProto IdentityChains() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Input("flag", TP::BOOL, {});
  b.InitF32("s", {}, {0.05f});
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.InitF32("bias", {4}, {0.5f, -1.0f, 0.25f, 2.0f});
  b.Node("Identity", {"s"}, {"s_a"}, {}, "id_s_a");
  b.Node("Identity", {"s_a"}, {"s_b"}, {}, "id_s_b");
  b.Node("Identity", {"zp"}, {"zp_a"}, {}, "id_zp");
  b.Node("QuantizeLinear", {"x", "s_a", "zp_a"}, {"xq"}, {}, "x_q");
  b.Node("DequantizeLinear", {"xq", "s_b", "zp_a"}, {"xd"}, {}, "x_dq");
  b.Node("Identity", {"bias"}, {"bias_a"}, {}, "id_bias");
  b.Node("Add", {"xd", "bias_a"}, {"y"}, {}, "add");
  b.Output("y", TP::FLOAT, {1, 4});
  b.Node("Identity", {"bias"}, {"bias_out"}, {}, "id_bias_out");
  b.Output("bias_out", TP::FLOAT, {4});
  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  auto* tn = then_g.add_node();
  tn->set_op_type("Mul");
  tn->set_name("then_mul");
  tn->add_input("bias_a");
  tn->add_input("bias_a");
  tn->add_output("t_out");
  *then_g.add_output() = Vi("t_out", TP::FLOAT, {4});
  else_g.set_name("else");
  auto* en = else_g.add_node();
  en->set_op_type("Neg");
  en->set_name("else_neg");
  en->add_input("bias_a");
  en->add_output("e_out");
  *else_g.add_output() = Vi("e_out", TP::FLOAT, {4});
  b.Node("If", {"flag"}, {"sel"},
         {ModelBuilder::AttrG("then_branch", then_g), ModelBuilder::AttrG("else_branch", else_g)},
         "if");
  b.Output("sel", TP::FLOAT, {4});
  return b.Build();
}

// cast-of-initializer: zero points as Cast(INT32 initializer, to=UINT8 / INT8) (PyTorch's dynamo
// exporter), a scale as Cast(DOUBLE initializer, to=FLOAT) with an exact value, and a Cast that
// would wrap (300 to UINT8: left alone; its output is read by an integer Add, a graph output).
inline onnx::ModelProto DynamoCasts() {
  ModelBuilder b(18, 10);
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  b.InitInt("zp_buf", TP::INT32, {}, {128});
  b.InitTensor([] {
    TP t;
    t.set_name("scale64");
    t.set_data_type(TP::DOUBLE);
    const double v = 0.015625;  // 2^-6: exact in FLOAT
    t.set_raw_data(std::string(reinterpret_cast<const char*>(&v), sizeof v));
    return t;
  }());
  b.InitInt("wzp_buf", TP::INT32, {4}, {0, 0, 0, 0});
  b.InitF32("ws", {4}, {0.01f, 0.02f, 0.03f, 0.04f});
  b.InitInt("w", TP::INT8, {4, 4, 1, 1},
            {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16});
  b.InitInt("big", TP::INT32, {1}, {300});
  b.InitInt("one", TP::UINT8, {1}, {1});
  b.Node("Cast", {"zp_buf"}, {"zp"}, {ModelBuilder::AttrI("to", TP::UINT8)}, "node_Cast_0");
  b.Node("Cast", {"scale64"}, {"scale"}, {ModelBuilder::AttrI("to", TP::FLOAT)}, "node_Cast_1");
  b.Node("Cast", {"wzp_buf"}, {"wzp"}, {ModelBuilder::AttrI("to", TP::INT8)}, "node_Cast_2");
  b.Node("QuantizeLinear", {"x", "scale", "zp"}, {"xq"}, {}, "node_QuantizeLinear_0");
  b.Node("DequantizeLinear", {"xq", "scale", "zp"}, {"xd"}, {}, "node_DequantizeLinear_0");
  b.Node("DequantizeLinear", {"w", "ws", "wzp"}, {"wd"}, {ModelBuilder::AttrI("axis", 0)},
         "node_DequantizeLinear_1");
  b.Node("Conv", {"xd", "wd"}, {"c"}, {}, "node_Conv_0");
  b.Output(b.QDQ("c", "y", QParams::U8(0.05f, 128)));
  b.Node("Cast", {"big"}, {"wrapped"}, {ModelBuilder::AttrI("to", TP::UINT8)}, "node_Cast_3");
  b.Node("Add", {"wrapped", "one"}, {"k"}, {}, "node_Add_0");
  b.Output("k", TP::UINT8, {1});
  return b.Build();
}

// contrib-qdq-to-onnx: com.microsoft Q/DQ of UINT16 activations, an INT8 per-channel weight, an
// INT32 bias and an INT4 per-tensor DQ, at `opset` (21: all ai.onnx types; 17: the 16-bit and
// 4-bit nodes stay).
inline onnx::ModelProto ContribQdq(std::int64_t opset = 21) {
  ModelBuilder b(opset, opset >= 21 ? 10 : 8);
  b.Opset("com.microsoft", 1);
  const std::string ms = "com.microsoft";
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  b.InitF32("s", {}, {0.0003f});
  b.InitInt("zp", TP::UINT16, {}, {32768});
  b.InitF32("ws", {4}, {0.01f, 0.02f, 0.03f, 0.04f});
  b.InitInt("wzp", TP::INT8, {4}, {0, 0, 0, 0});
  b.InitInt("w", TP::INT8, {4, 4, 1, 1},
            {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16});
  const auto bs = modelgen::BiasScales(0.0003f, {0.01f, 0.02f, 0.03f, 0.04f});
  b.InitF32("bs", {4}, bs);
  b.InitInt("bzp", TP::INT32, {4}, {0, 0, 0, 0});
  b.InitInt("bias", TP::INT32, {4}, {10, -20, 30, -40});
  b.InitF32("s4", {}, {0.5f});
  b.InitInt("zp4", TP::INT4, {}, {0});
  b.InitInt("c4", TP::INT4, {4}, {-8, -1, 0, 7});
  b.Node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, {}, "x_QuantizeLinear", ms);
  b.Node("DequantizeLinear", {"xq", "s", "zp"}, {"xd"}, {}, "x_DequantizeLinear", ms);
  b.Node("DequantizeLinear", {"w", "ws", "wzp"}, {"wd"}, {ModelBuilder::AttrI("axis", 0)},
         "w_DequantizeLinear", ms);
  b.Node("DequantizeLinear", {"bias", "bs", "bzp"}, {"bd"}, {ModelBuilder::AttrI("axis", 0)},
         "b_DequantizeLinear", ms);
  b.Node("Conv", {"xd", "wd", "bd"}, {"c"}, {}, "conv");
  b.Node("QuantizeLinear", {"c", "s", "zp"}, {"cq"}, {}, "c_QuantizeLinear", ms);
  b.Node("DequantizeLinear", {"cq", "s", "zp"}, {"y"}, {}, "c_DequantizeLinear", ms);
  b.Output("y", TP::FLOAT, {1, 4, 4, 4});
  b.Node("DequantizeLinear", {"c4", "s4", "zp4"}, {"k"}, {}, "c4_DequantizeLinear", ms);
  b.Output("k", TP::FLOAT, {4});
  return b.Build();
}

// int4-weight-storage: a QAT flow's 4-bit weights in INT8 containers at opset 21: a Conv weight
// (8 output channels, values in [-8, 7], per-channel INT8 zero point 0) and a Gemm weight with a
// value outside [-8, 7] (left alone).
inline onnx::ModelProto Int4InInt8() {
  ModelBuilder b(21, 10);
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  const auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  std::vector<std::int64_t> wv;
  for (int i = 0; i < 8 * 4 * 3 * 3; ++i) wv.push_back(i % 16 - 8);
  std::vector<float> ws;
  for (int i = 0; i < 8; ++i) ws.push_back(0.05f * static_cast<float>(i + 1));
  b.InitInt("w", TP::INT8, {8, 4, 3, 3}, wv);
  b.InitF32("w_scale", {8}, ws);
  b.InitInt("w_zp", TP::INT8, {8}, std::vector<std::int64_t>(8, 0));
  b.Node("DequantizeLinear", {"w", "w_scale", "w_zp"}, {"wd"}, {ModelBuilder::AttrI("axis", 0)},
         "w_dq");
  b.Node("Conv", {x, "wd"}, {"c"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  const auto c = b.QDQ("c", "c", QParams::U8(0.5f, 0));
  b.Node("GlobalAveragePool", {c}, {"p"}, {}, "pool");
  const auto p = b.QDQ("p", "p", QParams::U8(0.5f, 0));
  b.Node("Flatten", {p}, {"f"}, {}, "flatten");
  const auto f = b.QDQ("f", "f", QParams::U8(0.5f, 0));
  b.InitInt("fc_w", TP::INT8, {2, 8}, {1, 2, 3, 4, 5, 6, 7, -8, 100, 0, 0, 0, 0, 0, 0, 0});
  b.InitF32("fc_scale", {2}, {0.01f, 0.02f});
  b.InitInt("fc_zp", TP::INT8, {2}, {0, 0});
  b.Node("DequantizeLinear", {"fc_w", "fc_scale", "fc_zp"}, {"fcd"},
         {ModelBuilder::AttrI("axis", 0)}, "fc_dq");
  b.Node("Gemm", {f, "fcd"}, {"g"}, {ModelBuilder::AttrI("transB", 1)}, "fc");
  b.Output(b.QDQ("g", "y", QParams::U8(0.1f, 128)));
  return b.Build();
}

// fold-shape: shape arithmetic on a static input: Shape (also with start), Gather, Unsqueeze,
// Squeeze, Slice, Concat, Cast, integer Mul/Div/Sub; a Div whose rounding differs by convention
// is not folded (its output is a graph output).
inline onnx::ModelProto StaticShapes() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {2, 3, 4, 4});
  b.InitInt("i0", TP::INT64, {}, {0});
  b.InitInt("i1", TP::INT64, {}, {1});
  b.InitInt("ax0", TP::INT64, {1}, {0});
  b.InitInt("st", TP::INT64, {1}, {2});
  b.InitInt("en", TP::INT64, {1}, {4});
  b.InitInt("two", TP::INT64, {}, {2});
  b.InitInt("zero", TP::INT64, {}, {0});
  b.InitInt("m1", TP::INT64, {1}, {-1});
  b.Node("Shape", {"x"}, {"s"}, {}, "shape");
  b.Node("Gather", {"s", "i0"}, {"n"}, {}, "gather_n");
  b.Node("Unsqueeze", {"n", "ax0"}, {"n1"}, {}, "unsq_n");
  b.Node("Gather", {"s", "i1"}, {"c"}, {}, "gather_c");
  b.Node("Unsqueeze", {"c", "ax0"}, {"c1"}, {}, "unsq_c");
  b.Node("Slice", {"s", "st", "en", "ax0"}, {"hw"}, {}, "slice_hw");
  b.Node("Gather", {"hw", "i0"}, {"h"}, {}, "gather_h");
  b.Node("Gather", {"hw", "i1"}, {"w"}, {}, "gather_w");
  b.Node("Mul", {"h", "w"}, {"hw_n"}, {}, "mul_hw");
  b.Node("Cast", {"hw_n"}, {"hw32"}, {ModelBuilder::AttrI("to", TP::INT32)}, "cast32");
  b.Node("Cast", {"hw32"}, {"hw64"}, {ModelBuilder::AttrI("to", TP::INT64)}, "cast64");
  b.Node("Div", {"hw64", "two"}, {"half"}, {}, "div_half");
  b.Node("Mul", {"half", "two"}, {"back"}, {}, "mul_back");
  b.Node("Sub", {"back", "zero"}, {"hw_s"}, {}, "sub_zero");
  b.Node("Unsqueeze", {"hw_s", "ax0"}, {"hw1"}, {}, "unsq_hw");
  b.Node("Concat", {"n1", "c1", "hw1"}, {"shp"}, {ModelBuilder::AttrI("axis", 0)}, "concat");
  b.Node("Reshape", {"x", "shp"}, {"y"}, {}, "reshape");
  b.Output("y", TP::FLOAT, {2, 3, 16});
  b.Node("Squeeze", {"n1", "ax0"}, {"n_sq"}, {}, "squeeze");
  b.Node("Unsqueeze", {"n_sq", "ax0"}, {"n_sq1"}, {}, "unsq_sq");
  b.Node("Concat", {"n_sq1", "m1"}, {"shp2"}, {ModelBuilder::AttrI("axis", 0)}, "concat2");
  b.Node("Reshape", {"x", "shp2"}, {"y2"}, {}, "reshape2");
  b.Output("y2", TP::FLOAT, {2, 48});
  b.Node("Shape", {"x"}, {"tail"}, {ModelBuilder::AttrI("start", -2)}, "shape_tail");
  b.Node("Concat", {"m1", "tail"}, {"shp3"}, {ModelBuilder::AttrI("axis", 0)}, "concat3");
  b.Node("Reshape", {"x", "shp3"}, {"y3"}, {}, "reshape3");
  b.Output("y3", TP::FLOAT, {6, 4, 4});
  b.Node("Sub", {"zero", "c"}, {"neg_c"}, {}, "sub_neg");
  b.Node("Div", {"neg_c", "two"}, {"q"}, {}, "div_neg");
  b.Output("q", TP::INT64, {});
  return b.Build();
}

// fold-shape, issue #40: the shape arithmetic PyTorch writes for `cls.expand(B, -1, -1)`
// (Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape -> Mul -> Equal -> Where -> Expand)
// and for a `reshape(B, -1)` whose target is computed (Size, Range, Gather, ReduceProd, Mod, Tile,
// Not, Where, Cast, Identity), around a quantized MatMul; its only findings are the uncovered
// shape arithmetic. `batch`: the batch dim of the input (a value: everything folds; a name:
// nothing that reads it does).
inline onnx::ModelProto TorchShapeArithmetic(const Dim& batch = Dim(2)) {
  ModelBuilder b;
  b.InputDims("x", TP::FLOAT, {batch, 4, 8});
  b.InitInt("i0", TP::INT64, {}, {0});
  b.InitInt("i1", TP::INT64, {}, {1});
  b.InitInt("i3", TP::INT64, {}, {3});
  b.InitInt("ax0", TP::INT64, {1}, {0});
  b.InitInt("m1", TP::INT64, {1}, {-1});
  b.InitInt("k8", TP::INT64, {1}, {8});
  b.InitInt("big", TP::INT64, {1}, {1000});
  b.InitInt("reps", TP::INT64, {1}, {1});
  const auto x = b.QDQ("x", "x", QParams::S8(0.02f));
  const auto w = b.WeightIntDQ("w", {8, 8}, QParams::S8(0.01f));
  b.Node("MatMul", {x, w}, {"mm"}, {}, "matmul");
  const auto mm = b.QDQ("mm", "mm", QParams::S8(0.05f));
  const auto cls = b.WeightIntDQ("cls", {1, 1, 8}, QParams::S8(0.05f));
  // cls.expand(B, -1, -1), as torch.onnx writes it.
  b.Node("Shape", {x}, {"s"}, {}, "shape");
  b.Node("Gather", {"s", "i0"}, {"n"}, {ModelBuilder::AttrI("axis", 0)}, "gather_b");
  b.Node("Unsqueeze", {"n", "ax0"}, {"n1"}, {}, "unsqueeze_b");
  b.Node("Concat", {"n1", "m1", "m1"}, {"size"}, {ModelBuilder::AttrI("axis", 0)}, "concat_size");
  b.Node("Shape", {"size"}, {"size_len"}, {}, "shape_size");
  b.Node("ConstantOfShape", {"size_len"}, {"ones"},
         {ModelBuilder::AttrT("value", ModelBuilder::MakeInt("value", TP::INT64, {1}, {1}))},
         "constant_of_shape");
  b.Node("Mul", {"ones", "m1"}, {"neg_ones"}, {}, "mul_neg_ones");
  b.Node("Equal", {"size", "neg_ones"}, {"is_neg"}, {}, "equal");
  b.Node("Where", {"is_neg", "ones", "size"}, {"expand_shape"}, {}, "where");
  b.Node("Expand", {cls, "expand_shape"}, {"cls_b"}, {}, "expand");
  const auto cls_b = b.QDQ("cls_b", "cls_b", QParams::S8(0.05f));
  b.Node("Concat", {cls_b, mm}, {"tokens"}, {ModelBuilder::AttrI("axis", 1)}, "concat_tokens");
  const auto tokens = b.QDQ("tokens", "tokens", QParams::S8(0.05f));
  // tokens.reshape(B, -1) with the -1 computed: prod(dims 1..2), checked against Size.
  b.Node("Shape", {tokens}, {"ts"}, {}, "shape_tokens");
  b.Node("Size", {tokens}, {"count"}, {}, "size_tokens");
  b.Node("Range", {"i1", "i3", "i1"}, {"tail_axes"}, {}, "range");
  b.Node("Gather", {"ts", "tail_axes"}, {"tail"}, {ModelBuilder::AttrI("axis", 0)}, "gather_tail");
  b.Node("ReduceProd", {"tail"}, {"per_row"}, {ModelBuilder::AttrI("keepdims", 1)}, "reduce_prod");
  b.Node("Mul", {"per_row", "n1"}, {"count2"}, {}, "mul_count");
  b.Node("Unsqueeze", {"count", "ax0"}, {"count1"}, {}, "unsqueeze_count");
  b.Node("Sub", {"count1", "count2"}, {"zero"}, {}, "sub_check");
  b.Node("Mod", {"per_row", "big"}, {"per_row_m"}, {}, "mod");
  b.Node("Tile", {"n1", "reps"}, {"n_t"}, {}, "tile");
  b.Node("Concat", {"n_t", "per_row_m"}, {"target"}, {ModelBuilder::AttrI("axis", 0)},
         "concat_target");
  b.Node("Equal", {"zero", "k8"}, {"odd"}, {}, "equal_zero");  // false
  b.Node("Not", {"odd"}, {"even"}, {}, "not");
  b.Node("Where", {"even", "target", "m1"}, {"target2"}, {}, "where_target");
  b.Node("Cast", {"target2"}, {"target3"}, {ModelBuilder::AttrI("to", TP::INT64)}, "cast");
  b.Node("Identity", {"target3"}, {"target4"}, {}, "identity");
  b.Node("Reshape", {tokens, "target4"}, {"flat"}, {}, "reshape");
  b.Output(b.QDQ("flat", "y", QParams::S8(0.05f)));
  return b.Build();
}

// reshape-copy-dims: a dynamic-batch input whose Reshape targets are built from its own dims
// (directly, after a Transpose, through Shape's end attribute), and one from another input's
// batch (not provably the same: skipped).
inline onnx::ModelProto DynamicReshapes() {
  ModelBuilder b;
  b.InputDims("x", TP::FLOAT, {"batch", 16, 8});
  b.InputDims("z", TP::FLOAT, {"other", 4});
  b.InitInt("i0", TP::INT64, {}, {0});
  b.InitInt("ax0", TP::INT64, {1}, {0});
  b.InitInt("four", TP::INT64, {1}, {4});
  b.InitInt("k32", TP::INT64, {1}, {32});
  b.InitInt("m1", TP::INT64, {1}, {-1});
  const std::string xd = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  b.Node("Shape", {xd}, {"s"}, {}, "shape");
  b.Node("Gather", {"s", "i0"}, {"n"}, {}, "gather");
  b.Node("Unsqueeze", {"n", "ax0"}, {"n1"}, {}, "unsqueeze");
  b.Node("Concat", {"n1", "four", "k32"}, {"t1"}, {ModelBuilder::AttrI("axis", 0)}, "concat1");
  b.Node("Reshape", {xd, "t1"}, {"y1"}, {}, "reshape1");
  b.OutputDims("y1", TP::FLOAT, {"batch", 4, 32});
  b.Node("Transpose", {xd}, {"tr"}, {ModelBuilder::AttrInts("perm", {0, 2, 1})}, "transpose");
  b.Node("Concat", {"n1", "m1"}, {"t2"}, {ModelBuilder::AttrI("axis", 0)}, "concat2");
  b.Node("Reshape", {"tr", "t2"}, {"y2"}, {}, "reshape2");
  b.OutputDims("y2", TP::FLOAT, {"batch", 128});
  b.Node("Shape", {xd}, {"s2"}, {ModelBuilder::AttrI("end", 2)}, "shape_head");
  b.Node("Concat", {"s2", "m1"}, {"t3"}, {ModelBuilder::AttrI("axis", 0)}, "concat3");
  b.Node("Reshape", {xd, "t3"}, {"y3"}, {}, "reshape3");
  b.OutputDims("y3", TP::FLOAT, {"batch", 16, 8});
  b.Node("Shape", {"z"}, {"sz"}, {}, "shape_z");
  b.Node("Gather", {"sz", "i0"}, {"nz"}, {}, "gather_z");
  b.Node("Unsqueeze", {"nz", "ax0"}, {"nz1"}, {}, "unsqueeze_z");
  b.Node("Concat", {"nz1", "m1"}, {"t4"}, {ModelBuilder::AttrI("axis", 0)}, "concat4");
  b.Node("Reshape", {xd, "t4"}, {"y4"}, {}, "reshape4");
  b.OutputDims("y4", TP::FLOAT, {"other", Dim()});
  return b.Build();
}

// A conformant Conv block (U8 activations, S8 per-channel weight, S32 bias) at `opset`.
inline ModelBuilder ConvBlock(std::int64_t opset = 21, std::int64_t ir = 10, std::int64_t cin = 4,
                              std::int64_t cout = 8, std::int64_t weight_axis = 0) {
  ModelBuilder b(opset, ir);
  b.Input("x", TP::FLOAT, {1, cin, 8, 8});
  const auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  std::vector<float> ws;
  for (std::int64_t i = 0; i < cout; ++i) ws.push_back(0.01f * static_cast<float>(i + 1));
  const auto w =
      b.WeightIntDQ("w", {cout, cin, 3, 3}, QParams::PerChannel(QType::kS8, ws, weight_axis));
  const auto bias = b.BiasInt32DQ("b", cout, modelgen::BiasScales(0.02f, ws));
  b.Node("Conv", {x, w, bias}, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})},
         "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b;
}

// value-info: the Conv block without any value_info.
inline onnx::ModelProto NoValueInfo() { return ConvBlock().AutoValueInfo(false).Build(); }

// explicit-zero-point: Q/DQ without zero_point: U8 activation pair, a Q with output_dtype INT8
// (opset 21), an INT8 per-tensor and an INT8 per-channel weight DQ, an INT32 bias DQ.
inline onnx::ModelProto OmittedZeroPoints() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.InitF32("s", {}, {0.02f});
  b.InitF32("s8", {}, {0.03f});
  b.InitF32("ws", {}, {0.01f});
  b.InitF32("wcs", {4}, {0.01f, 0.02f, 0.03f, 0.04f});
  b.InitF32("bs", {}, {0.0002f});
  b.InitInt("w", TP::INT8, {4}, {-3, 7, 100, -128});
  b.InitInt("wc", TP::INT8, {4, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 5, 6, 7, 8, 9, 10, 11, 12});
  b.InitInt("bias", TP::INT32, {4}, {1000, -2000, 30000, 7});
  b.Node("QuantizeLinear", {"x", "s"}, {"xq"}, {}, "x_q");
  b.Node("DequantizeLinear", {"xq", "s"}, {"xd"}, {}, "x_dq");
  b.Node("QuantizeLinear", {"x", "s8"}, {"xq8"}, {ModelBuilder::AttrI("output_dtype", TP::INT8)},
         "x8_q");
  b.Node("DequantizeLinear", {"xq8", "s8"}, {"xd8"}, {}, "x8_dq");
  b.Node("DequantizeLinear", {"w", "ws"}, {"wd"}, {}, "w_dq");
  b.Node("DequantizeLinear", {"wc", "wcs"}, {"wcd"}, {ModelBuilder::AttrI("axis", 0)}, "wc_dq");
  b.Node("DequantizeLinear", {"bias", "bs"}, {"bd"}, {}, "b_dq");
  b.Node("Add", {"xd", "xd8"}, {"a"}, {}, "add_x");
  b.Node("Add", {"wd", "bd"}, {"c"}, {}, "add_wb");
  b.Node("Add", {"a", "c"}, {"y"}, {}, "add_y");
  b.Output("y", TP::FLOAT, {1, 4});
  b.Node("MatMul", {"xd", "wcd"}, {"y2"}, {}, "matmul");
  b.Output("y2", TP::FLOAT, {1, 4});
  return b.Build();
}

// positive-axis: the Conv block with its weight's per-channel axis written as -4.
inline onnx::ModelProto NegativeAxis() { return ConvBlock(21, 10, 4, 8, -4).Build(); }

// requantize-identity: DQ1 -> Q2 directly with other parameters; DQ1 also feeds a Relu.
inline onnx::ModelProto DirectRequantize() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 4});
  const auto d1 = b.QDQ("x", "a", QParams::U8(0.02f, 128));
  const auto d2 = b.QDQ(d1, "b", QParams::U8(0.05f, 10));
  b.Node("Relu", {d1}, {"r"}, {}, "relu");
  b.Output(d2, TP::FLOAT, {1, 4, 4});
  b.Output("r", TP::FLOAT, {1, 4, 4});
  return b.Build();
}

// inline-functions: a model-local function QRelu (Q -> DQ -> Relu) called twice; with
// `mismatch`, a second function imports another ai.onnx version and stays (the runtime test does
// not use that variant).
inline onnx::ModelProto LocalFunctions(bool mismatch = false) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.InitF32("s", {}, {0.02f});
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.Node("QRelu", {"x", "s", "zp"}, {"a"}, {}, "call1", "local.fn");
  b.Node("QRelu", {"a", "s", "zp"}, {"y"}, {}, "call2", "local.fn");
  b.Output("y", TP::FLOAT, {1, 4});
  if (mismatch) {
    b.Node("Old", {"x"}, {"o"}, {}, "call_old", "local.fn");
    b.Output("o", TP::FLOAT, {1, 4});
  }
  onnx::ModelProto m = b.Build();
  auto* f = m.add_functions();
  f->set_name("QRelu");
  f->set_domain("local.fn");
  for (const char* in : {"X", "S", "Z"}) f->add_input(in);
  f->add_output("Y");
  auto node = [&](onnx::FunctionProto* fn, const char* op, std::vector<std::string> in,
                  std::string out) {
    auto* n = fn->add_node();
    n->set_op_type(op);
    for (auto& s : in) n->add_input(s);
    n->add_output(out);
  };
  node(f, "QuantizeLinear", {"X", "S", "Z"}, "q");
  node(f, "DequantizeLinear", {"q", "S", "Z"}, "d");
  node(f, "Relu", {"d"}, "Y");
  auto* imp = f->add_opset_import();
  imp->set_domain("");
  imp->set_version(21);
  if (mismatch) {
    auto* g = m.add_functions();
    g->set_name("Old");
    g->set_domain("local.fn");
    g->add_input("X");
    g->add_output("Y");
    node(g, "Relu", {"X"}, "Y");
    auto* gi = g->add_opset_import();
    gi->set_domain("");
    gi->set_version(17);
  }
  return m;
}

// ir-version: the Conv block at opset 17 written with IR 10 (opset 17 needs IR 8).
inline onnx::ModelProto HighIr() { return ConvBlock(17, 10).Build(); }

// External weights: a wider Conv block whose weight and bias live in external data.
inline ModelBuilder ExternalWeights() { return ConvBlock(21, 10, 16, 32).AutoValueInfo(false); }

}  // namespace axqc::test::fixmodels
