// The operator support matrix (docs/rules/operators.md), rendered from the operator table so the
// documentation cannot drift from what the checker enforces.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "axqc/operators.h"
#include "onnx_util.h"
#include "optable.h"

namespace axqc {

namespace {

using detail::InRole;
using detail::OpClass;
using detail::OpSpec;

// "5.10" -> {5, 10}; non-numeric parts sort as 0.
std::pair<int, int> SectionKey(std::string_view s) {
  int major = 0;
  int minor = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) major = major * 10 + (s[i] - '0');
  if (i < s.size() && s[i] == '.') ++i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) minor = minor * 10 + (s[i] - '0');
  return {major, minor};
}

std::vector<std::string> SplitTypes(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == '|') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

OperatorInfo ToInfo(const OpSpec& s) {
  OperatorInfo o;
  o.op_type = std::string(s.op_type);
  o.op_class = std::string(detail::OpClassName(s.cls));
  o.section = std::string(s.section);
  for (auto r : s.inputs) o.inputs.emplace_back(detail::InRoleName(r));
  o.variadic_inputs = (s.flags & detail::kVariadic) != 0;
  for (auto r : s.outputs) o.outputs.emplace_back(r == detail::OutRole::kData ? "data" : "aux");
  o.variadic_outputs = (s.flags & detail::kVariadicOut) != 0;
  o.data_types = SplitTypes(s.data_types.ToString());
  const bool has_weight =
      std::find(s.inputs.begin(), s.inputs.end(), InRole::kWeight) != s.inputs.end();
  if (s.flags & detail::kSymmetricData) o.constraints.emplace_back("symmetric per-tensor data");
  if (s.flags & detail::kSameTypeData) o.constraints.emplace_back("data inputs share one type");
  if (s.flags & detail::kU4Input) o.constraints.emplace_back("U4 on the activation input");
  if (has_weight) {
    o.constraints.push_back("weight S4/S8 per-channel axis " + std::to_string(s.weight_axis));
  }
  if (s.flags & detail::kGemmForm) o.constraints.emplace_back("canonical form");
  if (s.flags & detail::kPadQuantParams) o.constraints.emplace_back("static constant_value");
  o.rule = s.rule ? std::string(s.rule->id()) : std::string();
  o.note = std::string(s.note);
  if (const auto origin = detail::OnnxOpOrigin(s.op_type)) {
    o.since_opset = origin->opset;
    o.since_release = origin->release;
  }
  return o;
}

std::string Cell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out.empty() ? "-" : out;
}

std::string Join(const std::vector<std::string>& v, bool variadic) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += v[i];
  }
  if (variadic && !s.empty()) s += " (repeats)";
  return s;
}

struct Legend {
  InRole role;
  std::string_view text;
};

constexpr Legend kRoleLegend[] = {
    {InRole::kData,
     "float data; enters through DQ with one of the operator's data types, per-tensor"},
    {InRole::kWeight,
     "Conv/ConvTranspose/Gemm weight: S4 or S8, symmetric, per-channel on the weight axis; "
     "FP32 initializer -> Q -> DQ or integer initializer -> DQ"},
    {InRole::kBias,
     "Conv/ConvTranspose/Gemm bias: direct FP32 initializer, or S32 symmetric per-channel via DQ"},
    {InRole::kAux, "native-typed auxiliary input (shape, axes, indices, pads, condition, ...)"},
    {InRole::kStaticF32, "must be a direct FP32 initializer (`op/static-param`)"},
    {InRole::kClipBound, "omitted or a direct FP32 initializer (`op/clip-dynamic`)"},
    {InRole::kFloatAux, "FP32, never quantized (RoiAlign rois)"},
    {InRole::kGrid,
     "GridSample grid: FP32 (a static grid is an initializer) or symmetric per-tensor S16"},
    {InRole::kExponent, "Pow exponent: not quantized; a static exponent is an initializer"},
    {InRole::kPass,
     "passive data input: a DQ entry means quantized pass-through, whose data exits share the "
     "entry's full parameters (Split exits: 5.11)"},
};

struct ClassLegend {
  OpClass cls;
  std::string_view text;
};

constexpr ClassLegend kClassLegend[] = {
    {OpClass::kQuantOnly,
     "float data inputs come through DQ and every used float data output leaves through Q/DQ; "
     "operators with native-typed data (e.g. INT64 shape arithmetic) run in native-integer mode"},
    {OpClass::kNonQuant, "owns no Q/DQ; may consume a DQ output or native data"},
    {OpClass::kPassive,
     "non-quant mode, or quantized pass-through (entry is a DQ) whose exits share the entry's "
     "full parameters"},
    {OpClass::kMixed, "quantized or non-quant mode, decided by the data entry"},
    {OpClass::kReluLike,
     "standalone quant-only form (Q/DQ on both sides) or branch-local fusion tail of a quantized "
     "compute operator"},
    {OpClass::kUnsupported, "does not conform (`closure/unsupported-op`)"},
};

std::vector<const OpSpec*> Sorted() {
  std::vector<const OpSpec*> v;
  for (const auto& s : detail::AllOps()) v.push_back(&s);
  std::stable_sort(v.begin(), v.end(), [](const OpSpec* a, const OpSpec* b) {
    return SectionKey(a->section) < SectionKey(b->section);
  });
  return v;
}

}  // namespace

std::vector<OperatorInfo> Operators() {
  std::vector<OperatorInfo> out;
  for (const auto* s : Sorted()) out.push_back(ToInfo(*s));
  return out;
}

std::string OperatorsMarkdown() {
  std::string md;
  md += "# Operator support matrix\n\n";
  md +=
      "<!-- Generated from core/src/optable.cc by `axqc rules --operators`; do not edit by hand.\n"
      "     Regenerate: build/core-dev/client/axqc rules --operators > docs/rules/operators.md "
      "-->\n\n";
  md +=
      "Every operator that has a rule in section 5 of the ax quant spec, as the checker's operator "
      "table defines it. An operator that is not listed (Shape, Einsum, Loop, custom domains, ...) "
      "is reported as `closure/uncovered-node`, with the opset and ONNX release that added it. "
      "\"ai.onnx since\" is the opset whose schema first defined the operator and the first ONNX "
      "release of that opset. Rule pages: [README.md](README.md).\n\n";
  md += "## Behaviour classes (5.1)\n\n";
  md += "| class | meaning |\n|---|---|\n";
  for (const auto& c : kClassLegend) {
    md += "| " + std::string(detail::OpClassName(c.cls)) + " | " + std::string(c.text) + " |\n";
  }
  md += "\n## Input roles\n\n";
  md += "| role | meaning |\n|---|---|\n";
  for (const auto& r : kRoleLegend) {
    md += "| " + std::string(detail::InRoleName(r.role)) + " | " + std::string(r.text) + " |\n";
  }
  md +=
      "\nOutputs are `data` (quantized when used, in quantized mode) or `aux` (native, never "
      "quantized, e.g. MaxPool Indices, TopK Indices). Only used outputs (consumed or graph "
      "outputs) need Q/DQ.\n";
  md += "\n## Operators\n\n";
  md +=
      "| operator | class | section | inputs | outputs | data types | constraints | type rule | "
      "notes | ai.onnx since |\n";
  md += "|---|---|---|---|---|---|---|---|---|---|\n";
  std::size_t count = 0;
  for (const auto& o : Operators()) {
    ++count;
    std::string types;
    for (std::size_t i = 0; i < o.data_types.size(); ++i) {
      types += (i ? ", " : "") + o.data_types[i];
    }
    const std::string since =
        o.since_opset == 0 ? std::string("-")
                           : "opset " + std::to_string(o.since_opset) +
                                 (o.since_release.empty() ? "" : " (ONNX " + o.since_release + ")");
    md += "| " + Cell(o.op_type) + " | " + Cell(o.op_class) + " | " + Cell(o.section) + " | " +
          Cell(Join(o.inputs, o.variadic_inputs)) + " | " +
          Cell(Join(o.outputs, o.variadic_outputs)) + " | " + Cell(types) + " | " +
          Cell(Join(o.constraints, false)) + " | " +
          (o.rule.empty() ? std::string("-") : "`" + o.rule + "`") + " | " + Cell(o.note) + " | " +
          since + " |\n";
  }
  md += "\n" + std::to_string(count) + " operators.\n";
  return md;
}

}  // namespace axqc
