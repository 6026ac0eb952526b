// ir-version (only with --ir-version N): writes ir_version = N when nothing in the model needs a
// newer IR (ONNX docs/Versioning.md and the IR history in onnx.proto):
//   opset imports     ai.onnx 9: IR 4, 10: 5, 11: 6, 12-14: 7, 15-18: 8, 19-20: 9, 21-22: 10,
//                     23: 11, 24: 12, 25: 13; ai.onnx.ml 2: 6, 3: 8, 4: 9, 5: 10;
//                     ai.onnx.training / ai.onnx.preview.training: 7
//   element types     BFLOAT16: 4; FLOAT8*: 9; UINT4/INT4: 10; FLOAT4E2M1: 11; FLOAT8E8M0: 12;
//                     UINT2/INT2: 13 (tensors, value types, Cast/output_dtype attributes)
//   structure         initializers that are not graph inputs: 4; quantization_annotation: 5;
//                     sparse tensors: 6; training_info: 7; model-local functions, sparse and
//                     optional types: 8; function attribute defaults: 9; overloads, metadata_props
//                     beyond the model's, function value_info: 10; device configurations: 11
// The model is walked with protobuf reflection, so fields of a newer ONNX than the linked one are
// found by name when the library knows them; a message with fields the library does not know at
// all (a newer schema) cannot be judged and refuses the lowering. Lowering never changes what the
// graph computes: the IR version only states which format features the file may use.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <map>

#include "fix/session.h"
#include "pipeline.h"

namespace axqc::detail::fix {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using TP = onnx::TensorProto;

std::int64_t IrForOnnxOpset(std::int64_t v) {
  if (v <= 8) return 3;
  if (v == 9) return 4;
  if (v == 10) return 5;
  if (v == 11) return 6;
  if (v <= 14) return 7;
  if (v <= 18) return 8;
  if (v <= 20) return 9;
  if (v <= 22) return 10;
  if (v == 23) return 11;
  if (v == 24) return 12;
  return 13;
}

std::int64_t IrForMlOpset(std::int64_t v) {
  if (v <= 1) return 3;
  if (v == 2) return 6;
  if (v == 3) return 8;
  if (v == 4) return 9;
  return 10;
}

std::int64_t IrForType(std::int64_t t) {
  switch (t) {
    case 16:
      return 4;  // BFLOAT16
    case 17:
    case 18:
    case 19:
    case 20:
      return 9;  // FLOAT8E4M3FN, ..., FLOAT8E5M2FNUZ
    case 21:
    case 22:
      return 10;  // UINT4, INT4
    case 23:
      return 11;  // FLOAT4E2M1
    case 24:
      return 12;  // FLOAT8E8M0
    case 25:
    case 26:
      return 13;  // UINT2, INT2
    default:
      return t > 26 ? 99 : 3;  // unknown future types: cannot be lowered
  }
}

// (message full name, field name) -> IR that introduced the field.
const std::map<std::pair<std::string, std::string>, std::int64_t>& FieldTable() {
  static const std::map<std::pair<std::string, std::string>, std::int64_t> t = {
      {{"onnx.GraphProto", "quantization_annotation"}, 5},
      {{"onnx.GraphProto", "sparse_initializer"}, 6},
      {{"onnx.AttributeProto", "sparse_tensor"}, 6},
      {{"onnx.AttributeProto", "sparse_tensors"}, 6},
      {{"onnx.ModelProto", "training_info"}, 7},
      {{"onnx.ModelProto", "functions"}, 8},
      {{"onnx.TypeProto", "sparse_tensor_type"}, 8},
      {{"onnx.TypeProto", "optional_type"}, 8},
      {{"onnx.FunctionProto", "attribute_proto"}, 9},
      {{"onnx.FunctionProto", "overload"}, 10},
      {{"onnx.NodeProto", "overload"}, 10},
      {{"onnx.FunctionProto", "value_info"}, 10},
      {{"onnx.FunctionProto", "metadata_props"}, 10},
      {{"onnx.NodeProto", "metadata_props"}, 10},
      {{"onnx.GraphProto", "metadata_props"}, 10},
      {{"onnx.ValueInfoProto", "metadata_props"}, 10},
      {{"onnx.TensorProto", "metadata_props"}, 10},
      {{"onnx.ModelProto", "configuration"}, 11},
      {{"onnx.NodeProto", "device_configurations"}, 11},
  };
  return t;
}

class Walker {
 public:
  explicit Walker(bool ignore_functions) : ignore_functions_(ignore_functions) {}

  void Need(std::int64_t ir, std::string what) {
    if (ir <= 3) return;
    auto it = seen_.find(what);
    if (it != seen_.end()) return;
    seen_.emplace(what, ir);
  }

  void Walk(const Message& m, int depth) {
    if (depth > 600) return;  // the loader bounds nesting; this is a second guard
    const auto* desc = m.GetDescriptor();
    const auto* refl = m.GetReflection();
    if (!refl->GetUnknownFields(m).empty()) {
      Need(99, "fields of " + std::string(desc->name()) + " that ONNX " + AXQC_ONNX_VERSION +
                   " does not know (written by a newer ONNX)");
    }
    const std::string name(desc->full_name());
    if (name == "onnx.TensorProto") {
      const auto& t = static_cast<const TP&>(m);
      Need(IrForType(t.data_type()), "element type " + ElemTypeName(t.data_type()));
    } else if (name == "onnx.TypeProto.Tensor" || name == "onnx.TypeProto.SparseTensor") {
      const auto* f = desc->FindFieldByName("elem_type");
      if (f != nullptr) {
        const auto v = refl->GetInt32(m, f);
        Need(IrForType(v), "element type " + ElemTypeName(v));
      }
    } else if (name == "onnx.NodeProto") {
      const auto& n = static_cast<const onnx::NodeProto&>(m);
      for (const auto& a : n.attribute()) {
        if ((a.name() == "to" || a.name() == "output_dtype" || a.name() == "dtype") &&
            a.type() == onnx::AttributeProto::INT) {
          Need(IrForType(a.i()), "element type " + ElemTypeName(static_cast<int>(a.i())) +
                                     " (attribute " + a.name() + " of " + n.op_type() + ")");
        }
      }
    }
    std::vector<const FieldDescriptor*> fields;
    refl->ListFields(m, &fields);
    for (const auto* f : fields) {
      auto it = FieldTable().find({name, std::string(f->name())});
      const bool skip_functions =
          name == "onnx.ModelProto" && f->name() == "functions" && ignore_functions_;
      if (!skip_functions && it != FieldTable().end()) {
        Need(it->second, std::string(f->name()) + " in " + std::string(desc->name()));
      }
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      if (name == "onnx.ModelProto" && f->name() == "functions" && ignore_functions_) continue;
      if (f->is_repeated()) {
        const int count = refl->FieldSize(m, f);
        for (int i = 0; i < count; ++i) Walk(refl->GetRepeatedMessage(m, f, i), depth + 1);
      } else {
        Walk(refl->GetMessage(m, f), depth + 1);
      }
    }
  }

  std::map<std::string, std::int64_t> seen_;

 private:
  bool ignore_functions_;
};

}  // namespace

IrNeed MinimumIrVersion(const onnx::ModelProto& m, bool ignore_functions) {
  Walker w(ignore_functions);
  for (const auto& op : m.opset_import()) {
    const auto& d = op.domain();
    if (d.empty() || d == "ai.onnx") {
      w.Need(IrForOnnxOpset(op.version()), "opset ai.onnx " + std::to_string(op.version()));
    } else if (d == "ai.onnx.ml") {
      w.Need(IrForMlOpset(op.version()), "opset ai.onnx.ml " + std::to_string(op.version()));
    } else if (d == "ai.onnx.training" || d == "ai.onnx.preview.training") {
      w.Need(7, "opset " + d);
    }
  }
  {
    std::unordered_set<std::string> inputs;
    for (const auto& i : m.graph().input()) inputs.insert(i.name());
    for (const auto& t : m.graph().initializer()) {
      if (!inputs.contains(t.name())) {
        w.Need(4, "initializers that are not graph inputs (e.g. '" + t.name() + "')");
        break;
      }
    }
  }
  w.Walk(m, 0);
  IrNeed need;
  for (const auto& [what, ir] : w.seen_) {
    need.ir = std::max(need.ir, ir);
    need.reasons.emplace_back(ir, what);
  }
  std::stable_sort(need.reasons.begin(), need.reasons.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  return need;
}

void IrVersion(Session& s) {
  auto& m = s.model();
  const auto target = s.options().ir_version;
  if (!target) return;
  const std::int64_t from = m.ir_version();
  if (*target == from) {
    s.Note("IR " + std::to_string(from) + " already");
    return;
  }
  if (*target > from) {
    throw FixRefused("--ir-version " + std::to_string(*target) +
                     ": the model already declares IR " + std::to_string(from) +
                     "; the rewrite only lowers the IR version");
  }
  const bool inlining = std::find(s.options().only.begin(), s.options().only.end(),
                                  "inline-functions") != s.options().only.end() ||
                        s.options().only.empty();
  const IrNeed need = MinimumIrVersion(m, inlining);
  if (need.ir > *target) {
    std::string why;
    int listed = 0;
    for (const auto& [ir, what] : need.reasons) {
      if (ir <= *target || listed == 3) continue;
      why += (listed++ ? "; " : "") + what + " needs IR " + std::to_string(ir);
    }
    const std::string lowest = need.ir >= 99
                                   ? std::string("it cannot be lowered")
                                   : "the lowest IR it allows is " + std::to_string(need.ir);
    throw FixRefused("--ir-version " + std::to_string(*target) + ": the model uses more than IR " +
                     std::to_string(*target) + " allows (" + why + "); " + lowest);
  }
  m.set_ir_version(*target);
  s.Applied("model");
  s.Note("IR " + std::to_string(from) + " -> " + std::to_string(*target) + " (the model needs IR " +
         std::to_string(need.ir) + "; ONNX " + AXQC_ONNX_VERSION + " reads up to IR " +
         std::to_string(static_cast<std::int64_t>(onnx::IR_VERSION)) + ")");
  s.Changed();
}

}  // namespace axqc::detail::fix
