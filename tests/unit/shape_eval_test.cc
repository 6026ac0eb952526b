// The exact evaluator of fold-shape (core/src/fix/shape_eval.cc), op by op: the values it
// computes (negative indices and axes, -1 and 0 in Reshape, broadcasting, zero-size tensors,
// BOOL tensors, the attribute and input forms of each opset) and what it refuses to compute
// (out of range, overflow, rounding by convention, a value it would have to guess).
#include "fix/shape_eval.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "modelgen/model_builder.h"

namespace axqc::detail::fix {
namespace {

using modelgen::ModelBuilder;
using TP = onnx::TensorProto;
using V = std::vector<std::int64_t>;

IntTensor T(V dims, V v, int type = TP::INT64) {
  IntTensor t;
  t.type = type;
  t.dims = std::move(dims);
  t.v = std::move(v);
  return t;
}
IntTensor B(V dims, V v) { return T(std::move(dims), std::move(v), TP::BOOL); }

struct Result {
  bool ok = false;
  IntTensor out;
  std::string why;
};

Result Eval(const std::string& op, const std::vector<const IntTensor*>& in,
            const std::vector<onnx::AttributeProto>& attrs = {}, std::int64_t opset = 21,
            const V& shape_of = {}) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(op);
  for (std::size_t i = 0; i < in.size(); ++i) n.add_input("in" + std::to_string(i));
  n.add_output("out");
  for (const auto& a : attrs) *n.add_attribute() = a;
  Result r;
  r.ok = EvaluateShapeOp(n, opset, shape_of, in, &r.out, &r.why);
  return r;
}

// Expects a value: type, dims and elements.
void ExpectValue(const Result& r, int type, const V& dims, const V& v) {
  ASSERT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.out.type, type);
  EXPECT_EQ(r.out.dims, dims);
  EXPECT_EQ(r.out.v, v);
}

// Expects a refusal whose reason contains `part`.
void ExpectRefused(const Result& r, const std::string& part) {
  ASSERT_FALSE(r.ok) << "evaluated to " << r.out.v.size() << " element(s)";
  EXPECT_NE(r.why.find(part), std::string::npos) << r.why;
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

TEST(ShapeEval, OpList) {
  for (const char* op : {"Shape",   "Size",    "Gather",     "Slice", "Concat",  "Unsqueeze",
                         "Squeeze", "Reshape", "Cast",       "Add",   "Sub",     "Mul",
                         "Div",     "Mod",     "Equal",      "Where", "Not",     "ConstantOfShape",
                         "Expand",  "Range",   "ReduceProd", "Tile",  "Identity"}) {
    EXPECT_TRUE(IsFoldableOp(op)) << op;
  }
  EXPECT_FALSE(IsFoldableOp("Floor"));
  EXPECT_FALSE(IsFoldableOp("NonZero"));  // its output shape depends on the values
}

TEST(ShapeEval, Size) {
  auto r = Eval("Size", {}, {}, 21, {2, 3, 4});
  ExpectValue(r, TP::INT64, {}, {24});
  EXPECT_TRUE(r.out.from_shape);
  ExpectValue(Eval("Size", {}, {}, 21, {2, 0, 4}), TP::INT64, {}, {0});
  ExpectValue(Eval("Size", {}, {}, 21, {}), TP::INT64, {}, {1});  // a scalar
  ExpectRefused(Eval("Size", {}, {}, 21, {kMax, 2}), "Size overflows");
}

TEST(ShapeEval, ShapeStartEnd) {
  ExpectValue(Eval("Shape", {}, {}, 21, {2, 3, 4}), TP::INT64, {3}, {2, 3, 4});
  ExpectValue(Eval("Shape", {}, {ModelBuilder::AttrI("start", -2)}, 21, {2, 3, 4}), TP::INT64, {2},
              {3, 4});
  // start/end are opset 15: ignored before.
  ExpectValue(Eval("Shape", {}, {ModelBuilder::AttrI("start", 1)}, 13, {2, 3, 4}), TP::INT64, {3},
              {2, 3, 4});
}

TEST(ShapeEval, GatherNegativeIndicesBoolAndRefusals) {
  const auto s = T({4}, {2, 3, 5, 7});
  const auto idx = T({2}, {-1, 0});
  ExpectValue(Eval("Gather", {&s, &idx}), TP::INT64, {2}, {7, 2});
  const auto m = B({2, 2}, {1, 0, 0, 1});
  const auto one = T({}, {1});
  ExpectValue(Eval("Gather", {&m, &one}, {ModelBuilder::AttrI("axis", -1)}), TP::BOOL, {2}, {0, 1});
  const auto far = T({}, {4});
  ExpectRefused(Eval("Gather", {&s, &far}), "Gather index 4 out of range [-4, 4)");
  const auto bidx = B({}, {1});
  ExpectRefused(Eval("Gather", {&s, &bidx}), "Gather indices not INT64/INT32");
}

TEST(ShapeEval, UnsqueezeSqueezeAttributeAndInputForms) {
  const auto x = T({2}, {5, 6});
  const auto ax = T({1}, {-1});
  ExpectValue(Eval("Unsqueeze", {&x, &ax}), TP::INT64, {2, 1}, {5, 6});
  ExpectValue(Eval("Unsqueeze", {&x}, {ModelBuilder::AttrInts("axes", {0})}, 11), TP::INT64, {1, 2},
              {5, 6});
  ExpectRefused(Eval("Unsqueeze", {&x}), "Unsqueeze axes not constant");  // opset 13: an input
  const auto y = T({1, 2, 1}, {5, 6});
  ExpectValue(Eval("Squeeze", {&y}), TP::INT64, {2}, {5, 6});
  ExpectValue(Eval("Squeeze", {&y}, {ModelBuilder::AttrInts("axes", {-1})}, 11), TP::INT64, {1, 2},
              {5, 6});
  const auto ax1 = T({1}, {1});
  ExpectRefused(Eval("Squeeze", {&y, &ax1}), "Squeeze of a dim != 1");
}

TEST(ShapeEval, ConcatAndSliceKeepTheType) {
  const auto a = B({1}, {1});
  const auto b = B({2}, {0, 1});
  ExpectValue(Eval("Concat", {&a, &b}, {ModelBuilder::AttrI("axis", 0)}), TP::BOOL, {3}, {1, 0, 1});
  const auto c = T({1}, {1});
  ExpectRefused(Eval("Concat", {&a, &c}, {ModelBuilder::AttrI("axis", 0)}),
                "Concat inputs differ in rank or type");
  const auto s = T({4}, {2, 3, 5, 7});
  const auto st = T({1}, {-1}), en = T({1}, {kMin}), step = T({1}, {-2}), ax = T({1}, {0});
  ExpectValue(Eval("Slice", {&s, &st, &en, &ax, &step}), TP::INT64, {2}, {7, 3});
  ExpectValue(
      Eval("Slice", {&s},
           {ModelBuilder::AttrInts("starts", {1}), ModelBuilder::AttrInts("ends", {kMax})}, 9),
      TP::INT64, {3}, {3, 5, 7});
}

TEST(ShapeEval, ReshapeOfShapeTensors) {
  const auto x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto t1 = T({2}, {-1, 2});
  ExpectValue(Eval("Reshape", {&x, &t1}), TP::INT64, {3, 2}, {1, 2, 3, 4, 5, 6});
  const auto t0 = T({2}, {0, -1});  // 0 copies the input dim
  ExpectValue(Eval("Reshape", {&x, &t0}), TP::INT64, {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto flat = T({1}, {-1});
  ExpectValue(Eval("Reshape", {&x, &flat}), TP::INT64, {6}, {1, 2, 3, 4, 5, 6});
  const auto scalar_t = T({0}, {});
  const auto one = T({1}, {9});
  ExpectValue(Eval("Reshape", {&one, &scalar_t}), TP::INT64, {}, {9});
  // allowzero = 1 (opset 14): 0 is a zero dim.
  const auto e = T({0, 3}, {});
  const auto z = T({2}, {3, 0});
  ExpectValue(Eval("Reshape", {&e, &z}, {ModelBuilder::AttrI("allowzero", 1)}), TP::INT64, {3, 0},
              {});
  // Without allowzero the 0 copies dim 1 (3): 9 elements of 0.
  ExpectRefused(Eval("Reshape", {&e, &z}), "Reshape to 9 element(s) of 0");
  const auto z1 = T({2}, {0, -1});
  ExpectRefused(Eval("Reshape", {&e, &z1}, {ModelBuilder::AttrI("allowzero", 1)}),
                "Reshape with allowzero, 0 and -1");
  // -1 next to a zero-size dim could be anything.
  const auto zm = T({2}, {0, -1});
  ExpectRefused(Eval("Reshape", {&e, &zm}), "Reshape -1 cannot be inferred for 0 element(s)");
  const auto two = T({2}, {-1, -1});
  ExpectRefused(Eval("Reshape", {&x, &two}), "more than one -1");
  const auto bad = T({2}, {4, -1});
  ExpectRefused(Eval("Reshape", {&x, &bad}), "Reshape -1 cannot be inferred for 6 element(s)");
  const auto neg = T({2}, {-2, 3});
  ExpectRefused(Eval("Reshape", {&x, &neg}), "Reshape dim -2");
  const auto beyond = T({3}, {1, 6, 0});
  ExpectRefused(Eval("Reshape", {&x, &beyond}), "Reshape 0 at index 2 beyond the input rank");
  const auto big = T({2}, {kMax, 2});
  ExpectRefused(Eval("Reshape", {&x, &big}), "Reshape shape overflows");
  // Reshape-1 (opset < 5): the target is an attribute.
  ExpectValue(Eval("Reshape", {&x}, {ModelBuilder::AttrInts("shape", {3, -1})}, 4), TP::INT64,
              {3, 2}, {1, 2, 3, 4, 5, 6});
  const auto t32 = T({2}, {3, 2}, TP::INT32);
  ExpectRefused(Eval("Reshape", {&x, &t32}), "Reshape shape not a 1-D INT64 tensor");
}

TEST(ShapeEval, IdentityAndCast) {
  const auto x = T({2}, {0, -3});
  ExpectValue(Eval("Identity", {&x}), TP::INT64, {2}, {0, -3});
  const auto to_bool = Eval("Cast", {&x}, {ModelBuilder::AttrI("to", TP::BOOL)});
  ExpectValue(to_bool, TP::BOOL, {2}, {0, 1});
  ExpectValue(Eval("Cast", {&to_bool.out}, {ModelBuilder::AttrI("to", TP::INT32)}), TP::INT32, {2},
              {0, 1});
  ExpectRefused(Eval("Cast", {&x}, {ModelBuilder::AttrI("to", TP::FLOAT)}),
                "Cast to a type other than INT64/INT32/BOOL");
  const auto big = T({1}, {std::int64_t{1} << 31});
  ExpectRefused(Eval("Cast", {&big}, {ModelBuilder::AttrI("to", TP::INT32)}),
                "out of the INT32 range");
}

TEST(ShapeEval, ArithmeticBroadcastsAndRefusesOverflowAndRounding) {
  const auto a = T({2, 1}, {10, -7});
  const auto b = T({3}, {1, 2, 3});
  ExpectValue(Eval("Add", {&a, &b}), TP::INT64, {2, 3}, {11, 12, 13, -6, -5, -4});
  ExpectValue(Eval("Sub", {&a, &b}), TP::INT64, {2, 3}, {9, 8, 7, -8, -9, -10});
  ExpectValue(Eval("Mul", {&a, &b}), TP::INT64, {2, 3}, {10, 20, 30, -7, -14, -21});
  const auto d = T({2}, {2, -2});
  const auto e = T({2}, {8, 8});
  ExpectValue(Eval("Div", {&e, &d}), TP::INT64, {2}, {4, -4});
  ExpectRefused(Eval("Div", {&a, &b}), "Div -7 / 2 rounds differently by convention");
  const auto max = T({}, {kMax});
  const auto two = T({}, {2});
  ExpectRefused(Eval("Mul", {&max, &two}), "Mul overflows");
  ExpectRefused(Eval("Add", {&max, &two}), "Add overflows");
  const auto min = T({}, {kMin});
  const auto m1 = T({}, {-1});
  ExpectRefused(Eval("Div", {&min, &m1}), "Div overflows");
  const auto zero = T({}, {0});
  ExpectRefused(Eval("Div", {&two, &zero}), "integer Div by zero");
  const auto i32 = T({}, {std::numeric_limits<std::int32_t>::max()}, TP::INT32);
  const auto one32 = T({}, {1}, TP::INT32);
  ExpectRefused(Eval("Add", {&i32, &one32}), "Add overflows");  // the INT32 range
  ExpectRefused(Eval("Add", {&i32, &two}), "Add inputs differ in type");
  const auto c = T({2}, {1, 2});
  ExpectRefused(Eval("Add", {&b, &c}), "Add shapes do not broadcast");
  const auto tb = B({}, {1});
  ExpectRefused(Eval("Add", {&tb, &tb}), "Add of BOOL");
  // Zero-size broadcasting: [0] with [1] is [0].
  const auto empty = T({0}, {});
  const auto one = T({1}, {1});
  ExpectValue(Eval("Mul", {&empty, &one}), TP::INT64, {0}, {});
}

TEST(ShapeEval, ModTakesTheSignOfTheDivisorUnlessFmod) {
  const auto x = T({4}, {-7, 7, -7, 6});
  const auto y = T({4}, {3, -3, -3, 3});
  ExpectValue(Eval("Mod", {&x, &y}), TP::INT64, {4}, {2, -2, -1, 0});
  ExpectValue(Eval("Mod", {&x, &y}, {ModelBuilder::AttrI("fmod", 1)}), TP::INT64, {4},
              {-1, 1, -1, 0});
  const auto zero = T({}, {0});
  ExpectRefused(Eval("Mod", {&x, &zero}), "integer Mod by zero");
  const auto min = T({}, {kMin});
  const auto m1 = T({}, {-1});
  ExpectRefused(Eval("Mod", {&min, &m1}), "Mod overflows");
  const auto x32 = T({1}, {-5}, TP::INT32);
  const auto y32 = T({1}, {4}, TP::INT32);
  ExpectValue(Eval("Mod", {&x32, &y32}), TP::INT32, {1}, {3});
}

TEST(ShapeEval, EqualNotWhereOnBool) {
  const auto size = T({3}, {2, -1, -1});
  const auto neg = T({1}, {-1});
  const auto eq = Eval("Equal", {&size, &neg});
  ExpectValue(eq, TP::BOOL, {3}, {0, 1, 1});
  const auto ones = T({3}, {1, 1, 1});
  // torch's expand(B, -1, -1): Where(Equal(size, -1), 1, size).
  ExpectValue(Eval("Where", {&eq.out, &ones, &size}), TP::INT64, {3}, {2, 1, 1});
  const auto nt = Eval("Not", {&eq.out});
  ExpectValue(nt, TP::BOOL, {3}, {1, 0, 0});
  ExpectValue(Eval("Equal", {&eq.out, &nt.out}), TP::BOOL, {3}, {0, 0, 0});
  // Where broadcasts its three inputs.
  const auto c = B({2, 1}, {1, 0});
  const auto a = T({3}, {1, 2, 3});
  const auto z = T({}, {0});
  ExpectValue(Eval("Where", {&c, &a, &z}), TP::INT64, {2, 3}, {1, 2, 3, 0, 0, 0});
  ExpectRefused(Eval("Where", {&size, &a, &z}), "Where condition of INT64");
  const auto z32 = T({}, {0}, TP::INT32);
  ExpectRefused(Eval("Where", {&c, &a, &z32}), "Where inputs differ in type");
  const auto c3 = B({2}, {1, 0});
  ExpectRefused(Eval("Where", {&c3, &a, &z}), "Where shapes do not broadcast");
  ExpectRefused(Eval("Not", {&size}), "Not of INT64");
  const auto s32 = T({1}, {2}, TP::INT32);
  ExpectRefused(Eval("Equal", {&size, &s32}), "Equal inputs differ in type");
}

onnx::AttributeProto Value(int type, std::int64_t v) {
  return ModelBuilder::AttrT("value", ModelBuilder::MakeInt("value", type, {1}, {v}));
}

TEST(ShapeEval, ConstantOfShape) {
  const auto s = T({1}, {3});
  ExpectValue(Eval("ConstantOfShape", {&s}, {Value(TP::INT64, 1)}), TP::INT64, {3}, {1, 1, 1});
  const auto s2 = T({2}, {2, 0});
  ExpectValue(Eval("ConstantOfShape", {&s2}, {Value(TP::INT32, -4)}), TP::INT32, {2, 0}, {});
  const auto none = T({0}, {});  // an empty shape: a scalar
  ExpectValue(Eval("ConstantOfShape", {&none}, {Value(TP::BOOL, 1)}), TP::BOOL, {}, {1});
  ExpectRefused(Eval("ConstantOfShape", {&s}),
                "ConstantOfShape of FLOAT (the default value) is not folded");
  ExpectRefused(Eval("ConstantOfShape", {&s},
                     {ModelBuilder::AttrT("value", ModelBuilder::MakeF32("v", {1}, {1}))}),
                "ConstantOfShape of FLOAT is not folded");
  const auto neg = T({1}, {-1});
  ExpectRefused(Eval("ConstantOfShape", {&neg}, {Value(TP::INT64, 1)}), "ConstantOfShape dim -1");
  const auto huge = T({2}, {4096, 2});
  ExpectRefused(Eval("ConstantOfShape", {&huge}, {Value(TP::INT64, 1)}),
                "ConstantOfShape result too large");
  const auto two_d = T({1, 1}, {3});
  ExpectRefused(Eval("ConstantOfShape", {&two_d}, {Value(TP::INT64, 1)}),
                "ConstantOfShape shape not a 1-D INT64 tensor");
}

TEST(ShapeEval, ExpandBroadcastsBothWays) {
  const auto x = T({3, 1}, {1, 2, 3});
  const auto s = T({3}, {2, 1, 2});
  ExpectValue(Eval("Expand", {&x, &s}), TP::INT64, {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // A 1 in the shape keeps the input's dim (the output is not smaller than the input).
  const auto one = T({1}, {1});
  ExpectValue(Eval("Expand", {&x, &one}), TP::INT64, {3, 1}, {1, 2, 3});
  const auto b = B({}, {1});
  const auto s4 = T({1}, {4});
  ExpectValue(Eval("Expand", {&b, &s4}), TP::BOOL, {4}, {1, 1, 1, 1});
  const auto zero = T({2}, {3, 0});  // 1 broadcasts to 0
  ExpectValue(Eval("Expand", {&x, &zero}), TP::INT64, {3, 0}, {});
  const auto bad = T({2}, {2, 2});
  ExpectRefused(Eval("Expand", {&x, &bad}), "Expand shapes do not broadcast");
  const auto neg = T({2}, {-1, 1});
  ExpectRefused(Eval("Expand", {&x, &neg}), "Expand dim -1");
  const auto huge = T({3}, {4096, 3, 2});
  ExpectRefused(Eval("Expand", {&x, &huge}), "Expand result too large");
}

TEST(ShapeEval, Tile) {
  const auto x = T({2, 2}, {1, 2, 3, 4});
  const auto r = T({2}, {2, 1});
  ExpectValue(Eval("Tile", {&x, &r}), TP::INT64, {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4});
  const auto r2 = T({2}, {1, 2});
  ExpectValue(Eval("Tile", {&x, &r2}), TP::INT64, {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4});
  const auto r0 = T({2}, {0, 3});
  ExpectValue(Eval("Tile", {&x, &r0}), TP::INT64, {0, 6}, {});
  const auto short_r = T({1}, {2});
  ExpectRefused(Eval("Tile", {&x, &short_r}), "Tile repeats differ from the input rank");
  const auto neg = T({2}, {-1, 1});
  ExpectRefused(Eval("Tile", {&x, &neg}), "Tile repeat -1");
  ExpectRefused(Eval("Tile", {&x, &r}, {}, 5), "Tile-1");
  const auto big = T({2}, {kMax, 1});
  ExpectRefused(Eval("Tile", {&x, &big}), "Tile overflows");
}

TEST(ShapeEval, Range) {
  auto range = [](V v, int type = TP::INT64) {
    const auto s = T({}, {v[0]}, type), l = T({}, {v[1]}, type), d = T({}, {v[2]}, type);
    return Eval("Range", {&s, &l, &d});
  };
  ExpectValue(range({0, 10, 3}), TP::INT64, {4}, {0, 3, 6, 9});
  ExpectValue(range({10, 0, -3}), TP::INT64, {4}, {10, 7, 4, 1});
  ExpectValue(range({1, 3, 1}), TP::INT64, {2}, {1, 2});
  ExpectValue(range({5, 5, 1}), TP::INT64, {0}, {});
  ExpectValue(range({0, 10, -1}), TP::INT64, {0}, {});  // max(ceil(-10), 0) = 0 elements
  ExpectValue(range({-2, 2, 4}, TP::INT32), TP::INT32, {1}, {-2});
  ExpectRefused(range({0, 10, 0}), "Range delta 0");
  ExpectRefused(range({0, 100000, 1}), "Range result too large");
  ExpectRefused(range({kMin, kMax, kMax}), "Range span beyond exact arithmetic");
  const auto s = T({}, {0}), l = T({}, {4}, TP::INT32), d = T({}, {1});
  ExpectRefused(Eval("Range", {&s, &l, &d}), "Range inputs differ in type");
  const auto v2 = T({2}, {0, 1});
  ExpectRefused(Eval("Range", {&v2, &l, &d}), "Range input not a scalar");
}

TEST(ShapeEval, ReduceProdAxesAttributeBefore18InputFrom18) {
  const auto x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  // Opset 13: axes is an attribute.
  ExpectValue(Eval("ReduceProd", {&x}, {ModelBuilder::AttrInts("axes", {-1})}, 13), TP::INT64,
              {2, 1}, {6, 120});
  ExpectValue(Eval("ReduceProd", {&x},
                   {ModelBuilder::AttrInts("axes", {0}), ModelBuilder::AttrI("keepdims", 0)}, 13),
              TP::INT64, {3}, {4, 10, 18});
  // Opset 18: axes is an input; without it every axis is reduced ...
  const auto ax = T({1}, {1});
  ExpectValue(Eval("ReduceProd", {&x, &ax}, {ModelBuilder::AttrI("keepdims", 0)}, 18), TP::INT64,
              {2}, {6, 120});
  ExpectValue(Eval("ReduceProd", {&x}, {}, 18), TP::INT64, {1, 1}, {720});
  ExpectValue(Eval("ReduceProd", {&x}, {ModelBuilder::AttrI("keepdims", 0)}, 18), TP::INT64, {},
              {720});
  // ... unless noop_with_empty_axes.
  ExpectValue(Eval("ReduceProd", {&x}, {ModelBuilder::AttrI("noop_with_empty_axes", 1)}, 18),
              TP::INT64, {2, 3}, {1, 2, 3, 4, 5, 6});
  // The product of nothing is 1.
  const auto e = T({2, 0}, {});
  ExpectValue(Eval("ReduceProd", {&e, &ax}, {}, 18), TP::INT64, {2, 1}, {1, 1});
  // The opset-18 attribute is not read at 13 and vice versa.
  ExpectValue(Eval("ReduceProd", {&x, &ax}, {}, 13), TP::INT64, {1, 1}, {720});
  const auto big = T({2}, {kMax, 2});
  ExpectRefused(Eval("ReduceProd", {&big}, {}, 18), "ReduceProd overflows");
  const auto rep = T({2}, {1, -1});
  ExpectRefused(Eval("ReduceProd", {&x, &rep}, {}, 18), "ReduceProd axes invalid or repeated");
  const auto b = B({1}, {1});
  ExpectRefused(Eval("ReduceProd", {&b}, {}, 18), "ReduceProd of BOOL");
}

TEST(ShapeEval, FromShapePropagates) {
  auto s = Eval("Shape", {}, {}, 21, {2, 3});
  const auto idx = T({}, {0});
  const auto g = Eval("Gather", {&s.out, &idx});
  ASSERT_TRUE(g.ok);
  EXPECT_TRUE(g.out.from_shape);
  const auto c = Eval("Identity", {&idx});
  ASSERT_TRUE(c.ok);
  EXPECT_FALSE(c.out.from_shape);
}

}  // namespace
}  // namespace axqc::detail::fix
