// libFuzzer target: model bytes -> load + check (+ render), in both check_value modes.
//
// axqc::InputError is the documented outcome for bytes that are not a usable model. Any other
// exception escapes (libFuzzer reports the abort from std::terminate as a crash), and ASan/UBSan
// report memory and undefined-behaviour errors, leaks, timeouts and out-of-memory.
//
// Half of the mutations are libFuzzer's byte mutations. The other half parse the input as an
// ONNX ModelProto and change it the way a broken or hostile exporter would: dims and ranks,
// element types, initializer storage, op types (any registered ONNX op), node inputs/outputs,
// attribute values, opset versions. Byte mutations alone rarely get past the protobuf framing.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/checker.h"
#include "axqc/render.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Rng = std::mt19937_64;

std::size_t Pick(Rng& rng, std::size_t n) {
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

std::int64_t InterestingInt(Rng& rng) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kValues[] = {
      0, 1, 2, 3, 4, -1, -2, 7, 8, 16, 255, 65536, 1LL << 31, 1LL << 32, 1LL << 62, kMax, kMin,
  };
  return kValues[Pick(rng, std::size(kValues))];
}

const std::vector<std::string>& OpNames() {
  static const std::vector<std::string> names = [] {
    std::set<std::string> s;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas()) {
      if (schema.domain().empty()) s.insert(schema.Name());
    }
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return names;
}

void MutateShape(onnx::TypeProto* type, Rng& rng) {
  if (!type->has_tensor_type() || Pick(rng, 8) == 0) {
    type->mutable_tensor_type()->set_elem_type(static_cast<int>(Pick(rng, 24)));
    return;
  }
  auto* tt = type->mutable_tensor_type();
  auto* shape = tt->mutable_shape();
  switch (Pick(rng, 6)) {
    case 0:
      tt->set_elem_type(static_cast<int>(Pick(rng, 24)));
      break;
    case 1:
      shape->add_dim()->set_dim_value(InterestingInt(rng));
      break;
    case 2:
      if (shape->dim_size() > 0) shape->mutable_dim()->RemoveLast();
      break;
    case 3:
      tt->clear_shape();
      break;
    case 4:
      if (shape->dim_size() > 0) {
        shape->mutable_dim(static_cast<int>(Pick(rng, shape->dim_size())))->set_dim_param("N");
      }
      break;
    default:
      if (shape->dim_size() > 0) {
        shape->mutable_dim(static_cast<int>(Pick(rng, shape->dim_size())))
            ->set_dim_value(InterestingInt(rng));
      }
  }
}

void MutateTensor(onnx::TensorProto* t, Rng& rng) {
  switch (Pick(rng, 6)) {
    case 0:
      t->set_data_type(static_cast<int>(Pick(rng, 24)));
      break;
    case 1:
      t->add_dims(InterestingInt(rng));
      break;
    case 2:
      if (t->dims_size() > 0) t->mutable_dims()->RemoveLast();
      break;
    case 3:
      if (t->dims_size() > 0)
        t->set_dims(static_cast<int>(Pick(rng, t->dims_size())), InterestingInt(rng));
      break;
    case 4:
      if (t->has_raw_data() && !t->raw_data().empty()) {
        t->mutable_raw_data()->resize(Pick(rng, t->raw_data().size()));
      }
      break;
    default:
      t->add_int32_data(static_cast<std::int32_t>(InterestingInt(rng)));
  }
}

void MutateNode(onnx::NodeProto* n, const onnx::GraphProto& g, Rng& rng) {
  auto any_tensor = [&]() -> std::string {
    if (g.node_size() == 0) return "x";
    const auto& src = g.node(static_cast<int>(Pick(rng, g.node_size())));
    if (src.output_size() > 0) return src.output(static_cast<int>(Pick(rng, src.output_size())));
    return "";
  };
  switch (Pick(rng, 7)) {
    case 0:
      n->set_op_type(OpNames()[Pick(rng, OpNames().size())]);
      break;
    case 1:
      n->add_input(Pick(rng, 4) == 0 ? std::string() : any_tensor());
      break;
    case 2:
      if (n->input_size() > 0) n->mutable_input()->RemoveLast();
      break;
    case 3:
      if (n->input_size() > 0)
        *n->mutable_input(static_cast<int>(Pick(rng, n->input_size()))) = any_tensor();
      break;
    case 4:
      if (n->output_size() > 0) n->mutable_output()->RemoveLast();
      break;
    case 5: {  // an attribute value
      if (n->attribute_size() == 0) break;
      auto* a = n->mutable_attribute(static_cast<int>(Pick(rng, n->attribute_size())));
      if (a->type() == onnx::AttributeProto::INTS && a->ints_size() > 0) {
        a->set_ints(static_cast<int>(Pick(rng, a->ints_size())), InterestingInt(rng));
      } else if (a->type() == onnx::AttributeProto::INTS) {
        a->add_ints(InterestingInt(rng));
      } else if (a->type() == onnx::AttributeProto::FLOAT) {
        a->set_f(Pick(rng, 2) ? -0.0f : std::numeric_limits<float>::quiet_NaN());
      } else if (a->has_t()) {
        MutateTensor(a->mutable_t(), rng);
      } else {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(InterestingInt(rng));
      }
      break;
    }
    default: {  // a new attribute of the op's schema
      const auto* schema = onnx::OpSchemaRegistry::Schema(n->op_type());
      if (schema == nullptr || schema->attributes().empty()) break;
      auto it = schema->attributes().begin();
      std::advance(it, static_cast<long>(Pick(rng, schema->attributes().size())));
      auto* a = n->add_attribute();
      a->set_name(it->first);
      if (it->second.type == onnx::AttributeProto::INTS) {
        a->set_type(onnx::AttributeProto::INTS);
        for (std::size_t i = Pick(rng, 5); i > 0; --i) a->add_ints(InterestingInt(rng));
      } else {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(InterestingInt(rng));
      }
    }
  }
}

// One structural mutation; false when the model offers nothing to mutate.
bool MutateModel(onnx::ModelProto& m, Rng& rng) {
  auto* g = m.mutable_graph();
  switch (Pick(rng, 6)) {
    case 0: {
      const int n = g->input_size() + g->output_size() + g->value_info_size();
      if (n == 0) return false;
      int i = static_cast<int>(Pick(rng, static_cast<std::size_t>(n)));
      onnx::ValueInfoProto* vi = i < g->input_size() ? g->mutable_input(i)
                                 : (i -= g->input_size()) < g->output_size()
                                     ? g->mutable_output(i)
                                     : g->mutable_value_info(i - g->output_size());
      MutateShape(vi->mutable_type(), rng);
      return true;
    }
    case 1:
      if (g->initializer_size() == 0) return false;
      MutateTensor(g->mutable_initializer(static_cast<int>(Pick(rng, g->initializer_size()))), rng);
      return true;
    case 2:
    case 3:
      if (g->node_size() == 0) return false;
      MutateNode(g->mutable_node(static_cast<int>(Pick(rng, g->node_size()))), *g, rng);
      return true;
    case 4:
      if (g->node_size() == 0) return false;
      *g->add_node() = g->node(static_cast<int>(Pick(rng, g->node_size())));
      return true;
    default:
      if (m.opset_import_size() == 0) return false;
      m.mutable_opset_import(0)->set_version(static_cast<std::int64_t>(Pick(rng, 23)));
      return true;
  }
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  Rng rng(seed);
  if (Pick(rng, 2) == 0) return LLVMFuzzerMutate(data, size, max_size);
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  bool changed = false;
  for (std::size_t i = 1 + Pick(rng, 3); i > 0; --i) changed |= MutateModel(m, rng);
  std::string out;
  if (!changed || !m.SerializeToString(&out) || out.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool check_value : {false, true}) {
    axqc::CheckOptions options;
    options.check_value = check_value;
    try {
      auto report = axqc::CheckBytes(bytes, "fuzz.onnx", options);
      // What the CLI and the service do with a report: a JSON dump (throws on invalid UTF-8)
      // and the text rendering with the ownership map.
      (void)axqc::RenderJson(report);
      (void)axqc::RenderText(report, {.explain = true});
    } catch (const axqc::InputError&) {
      return 0;  // not a model: the second mode would fail the same way
    }
  }
  return 0;
}
