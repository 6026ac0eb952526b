// Chip targets (axqc/targets.h): profile loading and validation, the one table-driven evaluator
// and the readable forms of a profile. docs/targets.md describes the profile format.
#include "axqc/targets.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ascii.h"
#include "context.h"
#include "embedded_profiles.h"
#include "onnx_util.h"
#include "targets_eval.h"

namespace axqc {

namespace {

using json = nlohmann::json;

constexpr std::string_view kProfileSchema = "axqc.target-profile/1";

using detail::AsciiLower;

// Reads one profile, naming the field of every problem.
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  [[noreturn]] void Fail(const std::string& field, const std::string& why) const {
    throw TargetProfileError(file_ + ": " + field + ": " + why);
  }

  void OnlyKeys(const json& j, const std::string& field, std::initializer_list<const char*> keys) {
    if (!j.is_object()) Fail(field, "must be an object");
    for (const auto& item : j.items()) {
      const std::string& k = item.key();
      if (std::find_if(keys.begin(), keys.end(), [&](const char* x) { return k == x; }) ==
          keys.end()) {
        Fail(field + "." + k, "unknown field");
      }
    }
  }

  std::string String(const json& j, const std::string& field, bool required = true) {
    if (!j.is_object() || !j.contains(field.substr(field.rfind('.') + 1))) {
      if (required) Fail(field, "is required");
      return {};
    }
    const auto& v = j.at(field.substr(field.rfind('.') + 1));
    if (!v.is_string()) Fail(field, "must be a string");
    return v.get<std::string>();
  }

  static std::string Key(const std::string& field) { return field.substr(field.rfind('.') + 1); }

  const json* Get(const json& j, const std::string& field) {
    const auto k = Key(field);
    return j.contains(k) ? &j.at(k) : nullptr;
  }

  std::vector<std::string> Strings(const json& j, const std::string& field) {
    std::vector<std::string> out;
    const json* v = Get(j, field);
    if (v == nullptr) return out;
    if (!v->is_array()) Fail(field, "must be an array of strings");
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) Fail(field + "[" + std::to_string(i) + "]", "must be a string");
      out.push_back((*v)[i].get<std::string>());
    }
    return out;
  }

  bool Bool(const json& j, const std::string& field) {
    const json* v = Get(j, field);
    if (v == nullptr) return false;
    if (!v->is_boolean()) Fail(field, "must be true or false");
    return v->get<bool>();
  }

  std::int64_t Int(const json& j, const std::string& field, std::int64_t fallback, bool required) {
    const json* v = Get(j, field);
    if (v == nullptr) {
      if (required) Fail(field, "is required");
      return fallback;
    }
    if (!v->is_number_integer()) Fail(field, "must be an integer");
    return v->get<std::int64_t>();
  }

  TargetValue Value(const json& v, const std::string& field) {
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_number_float()) return v.get<double>();
    if (v.is_string()) return v.get<std::string>();
    Fail(field, "must be a number or a string");
  }

  // A value or an array of values (an attribute's elements).
  std::vector<TargetValue> Values(const json& v, const std::string& field, bool allow_scalar) {
    std::vector<TargetValue> out;
    if (v.is_array()) {
      if (v.empty()) Fail(field, "must not be empty");
      for (std::size_t i = 0; i < v.size(); ++i)
        out.push_back(Value(v[i], field + "[" + std::to_string(i) + "]"));
    } else if (allow_scalar) {
      out.push_back(Value(v, field));
    } else {
      Fail(field, "must be an array");
    }
    return out;
  }

  std::vector<TargetCondition> Conditions(const json& j, const std::string& field) {
    std::vector<TargetCondition> out;
    const json* v = Get(j, field);
    if (v == nullptr) return out;
    if (!v->is_array() || v->empty()) Fail(field, "must be a non-empty array of conditions");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string f = field + "[" + std::to_string(i) + "]";
      const json& c = (*v)[i];
      OnlyKeys(c, f, {"attribute", "in", "not_in", "default"});
      TargetCondition cond;
      cond.attribute = String(c, f + ".attribute");
      const bool in = c.contains("in"), not_in = c.contains("not_in");
      if (in == not_in) Fail(f, "needs exactly one of in, not_in");
      cond.negate = not_in;
      cond.values = Values(c.at(in ? "in" : "not_in"), f + (in ? ".in" : ".not_in"), false);
      if (c.contains("default")) {
        cond.has_default = true;
        cond.default_value = Values(c.at("default"), f + ".default", true);
      }
      out.push_back(std::move(cond));
    }
    return out;
  }

  AttrConstraint Attribute(const json& a, const std::string& f) {
    OnlyKeys(a, f,
             {"name", "allowed", "disallowed", "allowed_types", "unsupported", "at_most_pads_end",
              "default", "default_when", "axis_of_input", "for_now", "when", "note"});
    AttrConstraint c;
    c.name = String(a, f + ".name");
    int kinds = 0;
    if (a.contains("allowed")) {
      ++kinds;
      c.kind = AttrKind::kAllowed;
      c.values = Values(a.at("allowed"), f + ".allowed", false);
    }
    if (a.contains("disallowed")) {
      ++kinds;
      c.kind = AttrKind::kDisallowed;
      c.values = Values(a.at("disallowed"), f + ".disallowed", false);
    }
    if (a.contains("allowed_types")) {
      ++kinds;
      c.kind = AttrKind::kAllowedTypes;
      c.types = Strings(a, f + ".allowed_types");
      if (c.types.empty()) Fail(f + ".allowed_types", "must not be empty");
      for (std::size_t i = 0; i < c.types.size(); ++i) {
        if (DataTypeCode(c.types[i]) < 0)
          Fail(f + ".allowed_types[" + std::to_string(i) + "]",
               "unknown type '" + c.types[i] + "'");
      }
    }
    if (a.contains("unsupported")) {
      ++kinds;
      if (!Bool(a, f + ".unsupported")) Fail(f + ".unsupported", "must be true when present");
      c.kind = AttrKind::kUnsupported;
    }
    if (a.contains("at_most_pads_end")) {
      ++kinds;
      if (!Bool(a, f + ".at_most_pads_end"))
        Fail(f + ".at_most_pads_end", "must be true when present");
      c.kind = AttrKind::kAtMostPadsEnd;
    }
    if (kinds != 1) {
      Fail(f,
           "needs exactly one of allowed, disallowed, allowed_types, unsupported, "
           "at_most_pads_end");
    }
    if (a.contains("default")) {
      c.has_default = true;
      c.default_value = Values(a.at("default"), f + ".default", true);
    }
    c.axis_of_input = static_cast<int>(Int(a, f + ".axis_of_input", -1, false));
    c.for_now = Bool(a, f + ".for_now");
    c.when = Conditions(a, f + ".when");
    c.default_when = Conditions(a, f + ".default_when");
    if (!c.default_when.empty() && !c.has_default) Fail(f + ".default_when", "needs default");
    c.note = String(a, f + ".note", false);
    return c;
  }

  InputConstraint Input(const json& a, const std::string& f) {
    OnlyKeys(a, f,
             {"index", "name", "absent", "ranks", "initializer", "max_elements", "shapes",
              "channel", "when_rank", "for_now", "note"});
    InputConstraint c;
    c.index = static_cast<int>(Int(a, f + ".index", 0, true));
    if (c.index < 0) Fail(f + ".index", "must be >= 0");
    c.name = String(a, f + ".name");
    c.absent = Bool(a, f + ".absent");
    if (const json* r = Get(a, f + ".ranks")) {
      if (!r->is_array() || r->empty()) Fail(f + ".ranks", "must be a non-empty array");
      for (const auto& x : *r) {
        if (!x.is_number_integer() || x.get<int>() < 0) Fail(f + ".ranks", "ranks are >= 0");
        c.ranks.push_back(x.get<int>());
      }
    }
    c.initializer = Bool(a, f + ".initializer");
    c.max_elements = Int(a, f + ".max_elements", -1, false);
    if (c.max_elements >= 0 && !c.initializer) Fail(f + ".max_elements", "needs initializer");
    if (const json* s = Get(a, f + ".shapes")) {
      if (!s->is_array() || s->empty()) Fail(f + ".shapes", "must be a non-empty array");
      for (std::size_t i = 0; i < s->size(); ++i) {
        const std::string sf = f + ".shapes[" + std::to_string(i) + "]";
        if (!(*s)[i].is_array()) Fail(sf, "must be an array of dims");
        std::vector<std::string> shape;
        for (const auto& d : (*s)[i]) {
          if (d.is_number_integer() && d.get<std::int64_t>() >= 0) {
            shape.push_back(std::to_string(d.get<std::int64_t>()));
          } else if (d.is_string() && d.get<std::string>() == "C") {
            shape.push_back("C");
          } else {
            Fail(sf, "dims are integers >= 0 or \"C\"");
          }
        }
        c.shapes.push_back(std::move(shape));
      }
      const json* ch = Get(a, f + ".channel");
      if (ch == nullptr) Fail(f + ".channel", "is required with shapes");
      OnlyKeys(*ch, f + ".channel", {"input", "dim"});
      c.channel_input = static_cast<int>(Int(*ch, f + ".channel.input", 0, true));
      c.channel_dim = static_cast<int>(Int(*ch, f + ".channel.dim", 0, true));
    }
    if (const json* w = Get(a, f + ".when_rank")) {
      OnlyKeys(*w, f + ".when_rank", {"input", "rank"});
      c.when_rank_input = static_cast<int>(Int(*w, f + ".when_rank.input", 0, true));
      c.when_rank = static_cast<int>(Int(*w, f + ".when_rank.rank", 0, true));
    }
    c.for_now = Bool(a, f + ".for_now");
    c.note = String(a, f + ".note", false);
    const int kinds = (c.absent ? 1 : 0) + (c.ranks.empty() ? 0 : 1) + (c.initializer ? 1 : 0) +
                      (c.shapes.empty() ? 0 : 1);
    if (kinds != 1) Fail(f, "needs exactly one of absent, ranks, initializer, shapes");
    return c;
  }

  TargetProfile Profile(std::string_view text) {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      Fail("(document)", std::string("not JSON: ") + e.what());
    }
    OnlyKeys(j, "(document)",
             {"schema", "chip", "name", "covers", "aliases", "source", "min_opset", "ops"});
    if (String(j, "schema") != kProfileSchema)
      Fail("schema", "must be \"" + std::string(kProfileSchema) + "\"");
    TargetProfile p;
    p.file = file_;
    p.chip = String(j, "chip");
    if (p.chip.empty() || p.chip != AsciiLower(p.chip)) Fail("chip", "must be a lowercase name");
    p.name = String(j, "name");
    p.covers = Strings(j, "covers");
    p.aliases = Strings(j, "aliases");
    for (const auto& a : p.aliases) {
      if (a != AsciiLower(a) || a.empty()) Fail("aliases", "aliases are lowercase names");
    }
    const json* src = Get(j, "source");
    if (src == nullptr) Fail("source", "is required");
    OnlyKeys(*src, "source", {"repository", "file", "commit", "doc_version"});
    p.source_repository = String(*src, "source.repository");
    p.source_file = String(*src, "source.file");
    p.source_commit = String(*src, "source.commit");
    p.doc_version = String(*src, "source.doc_version");
    if (p.source_commit.size() < 7 ||
        !std::all_of(p.source_commit.begin(), p.source_commit.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; })) {
      Fail("source.commit", "must be a commit hash (hex)");
    }
    p.min_opset = static_cast<int>(Int(j, "min_opset", 0, true));
    const json* ops = Get(j, "ops");
    if (ops == nullptr || !ops->is_object() || ops->empty())
      Fail("ops", "must be a non-empty object");
    for (const auto& [op, spec] : ops->items()) {
      const std::string f = "ops." + op;
      OnlyKeys(spec, f, {"table_name", "attributes", "inputs", "efficiency", "not_checked"});
      OpProfile o;
      o.table_name = String(spec, f + ".table_name", false);
      if (const json* attrs = Get(spec, f + ".attributes")) {
        if (!attrs->is_array()) Fail(f + ".attributes", "must be an array");
        for (std::size_t i = 0; i < attrs->size(); ++i)
          o.attributes.push_back(
              Attribute((*attrs)[i], f + ".attributes[" + std::to_string(i) + "]"));
      }
      if (const json* ins = Get(spec, f + ".inputs")) {
        if (!ins->is_array()) Fail(f + ".inputs", "must be an array");
        for (std::size_t i = 0; i < ins->size(); ++i)
          o.inputs.push_back(Input((*ins)[i], f + ".inputs[" + std::to_string(i) + "]"));
      }
      if (const json* eff = Get(spec, f + ".efficiency")) {
        if (!eff->is_array()) Fail(f + ".efficiency", "must be an array");
        for (std::size_t i = 0; i < eff->size(); ++i) {
          const std::string ef = f + ".efficiency[" + std::to_string(i) + "]";
          OnlyKeys((*eff)[i], ef, {"when", "note"});
          EfficiencyNote n;
          n.when = Conditions((*eff)[i], ef + ".when");
          if (n.when.empty()) Fail(ef + ".when", "is required");
          n.note = String((*eff)[i], ef + ".note");
          o.efficiency.push_back(std::move(n));
        }
      }
      o.not_checked = Strings(spec, f + ".not_checked");
      p.ops.emplace(op, std::move(o));
    }
    return p;
  }

  // TensorProto data type code of a type name, -1 when unknown.
  static int DataTypeCode(std::string_view name) {
    static const std::pair<std::string_view, int> kTypes[] = {
        {"float32", 1},  {"uint8", 2},   {"int8", 3},    {"uint16", 4},   {"int16", 5},
        {"int32", 6},    {"int64", 7},   {"string", 8},  {"bool", 9},     {"float16", 10},
        {"float64", 11}, {"uint32", 12}, {"uint64", 13}, {"bfloat16", 16}};
    for (const auto& [n, c] : kTypes) {
      if (n == name) return c;
    }
    return -1;
  }

 private:
  std::string file_;
};

std::string DataTypeName(std::int64_t code) {
  static const std::pair<int, std::string_view> kNames[] = {
      {1, "float32"},  {2, "uint8"},   {3, "int8"},    {4, "uint16"},   {5, "int16"},
      {6, "int32"},    {7, "int64"},   {8, "string"},  {9, "bool"},     {10, "float16"},
      {11, "float64"}, {12, "uint32"}, {13, "uint64"}, {16, "bfloat16"}};
  for (const auto& [c, n] : kNames) {
    if (c == code) return std::string(n);
  }
  return "type " + std::to_string(code);
}

std::string FormatValue(const TargetValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << *d;
    return os.str();
  }
  return std::get<std::string>(v);
}

std::string FormatValues(const std::vector<TargetValue>& vs, bool list) {
  std::string out = list ? "[" : "";
  for (std::size_t i = 0; i < vs.size(); ++i) out += (i ? ", " : "") + FormatValue(vs[i]);
  return out + (list ? "]" : "");
}

std::string Alternatives(const std::vector<TargetValue>& vs) {
  std::string out;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    if (i > 0) out += i + 1 == vs.size() ? " or " : ", ";
    out += FormatValue(vs[i]);
  }
  return out;
}

bool Equal(const TargetValue& a, const TargetValue& b) {
  if (std::holds_alternative<std::string>(a) || std::holds_alternative<std::string>(b)) {
    return std::holds_alternative<std::string>(a) && std::holds_alternative<std::string>(b) &&
           std::get<std::string>(a) == std::get<std::string>(b);
  }
  auto num = [](const TargetValue& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    return std::get<double>(v);
  };
  const double x = num(a), y = num(b);
  // Float attributes are stored as float32: compare at that precision.
  return x == y || std::fabs(x - y) <= 1e-6 * std::max(std::fabs(x), std::fabs(y));
}

bool In(const TargetValue& v, const std::vector<TargetValue>& set) {
  return std::any_of(set.begin(), set.end(), [&](const TargetValue& s) { return Equal(v, s); });
}

std::string LimitText(const AttrConstraint& c) {
  std::string s;
  switch (c.kind) {
    case AttrKind::kAllowed:
      s = "only " + Alternatives(c.values);
      break;
    case AttrKind::kDisallowed:
      s = "not " + Alternatives(c.values);
      break;
    case AttrKind::kAllowedTypes: {
      s = "only ";
      for (std::size_t i = 0; i < c.types.size(); ++i) s += (i ? ", " : "") + c.types[i];
      break;
    }
    case AttrKind::kUnsupported:
      s = c.has_default
              ? "not supported unless " + FormatValues(c.default_value, false) + " (the default)"
              : "not supported";
      break;
    case AttrKind::kAtMostPadsEnd:
      s = "each element at most the matching end pad (pads[rank + i])";
      break;
  }
  if (c.for_now) s += " (for now)";
  if (c.axis_of_input >= 0) s += "; negative and positive axes are compared on the input's rank";
  return s;
}

std::string ConditionText(const std::vector<TargetCondition>& when) {
  std::string s;
  for (std::size_t i = 0; i < when.size(); ++i) {
    s += (i ? " and " : "") + when[i].attribute + (when[i].negate ? " not " : " ") + "in " +
         FormatValues(when[i].values, true);
    if (when[i].has_default) s += " (default " + FormatValues(when[i].default_value, false) + ")";
  }
  return s;
}

std::string InputLimitText(const InputConstraint& c) {
  std::string s;
  if (c.absent) {
    s = "must not be given";
  } else if (!c.ranks.empty()) {
    s = "rank ";
    for (std::size_t i = 0; i < c.ranks.size(); ++i)
      s += (i ? " or " : "") + std::to_string(c.ranks[i]);
    s += " only";
  } else if (c.initializer) {
    s = "an initializer";
    if (c.max_elements == 1) {
      s += " holding one element (a scalar)";
    } else if (c.max_elements >= 0) {
      s += " of at most " + std::to_string(c.max_elements) + " elements";
    }
  } else {
    s = "shape ";
    for (std::size_t i = 0; i < c.shapes.size(); ++i) {
      s += i ? " or (" : "(";
      for (std::size_t d = 0; d < c.shapes[i].size(); ++d) s += (d ? ", " : "") + c.shapes[i][d];
      s += c.shapes[i].size() == 1 ? ",)" : ")";
    }
    s += " with C = dim " + std::to_string(c.channel_dim) + " of input " +
         std::to_string(c.channel_input);
  }
  if (c.when_rank_input >= 0) {
    s += ", when input " + std::to_string(c.when_rank_input) + " has rank " +
         std::to_string(c.when_rank);
  }
  if (c.for_now) s += " (for now)";
  return s;
}

}  // namespace

std::string TargetProfile::Source() const {
  return source_repository + "@" + source_commit.substr(0, 7) + ":" + source_file;
}

TargetProfile ParseTargetProfile(std::string_view json_text, std::string_view file) {
  TargetProfile p = Reader(file).Profile(json_text);
  p.json_text = std::string(json_text);
  return p;
}

std::span<const TargetProfile> TargetProfiles() {
  static const std::vector<TargetProfile> profiles = [] {
    std::vector<TargetProfile> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < detail::kEmbeddedProfileCount; ++i) {
      const auto& e = detail::kEmbeddedProfiles[i];
      auto p = ParseTargetProfile(e.text, e.file);
      for (const auto& n : [&] {
             auto v = p.aliases;
             v.push_back(p.chip);
             return v;
           }()) {
        if (!names.insert(n).second)
          throw TargetProfileError(std::string(e.file) + ": chip: '" + n + "' named twice");
      }
      out.push_back(std::move(p));
    }
    return out;
  }();
  return profiles;
}

const TargetProfile* FindTargetProfile(std::string_view chip) {
  const std::string want = AsciiLower(chip);
  for (const auto& p : TargetProfiles()) {
    if (p.chip == want) return &p;
    for (const auto& a : p.aliases) {
      if (a == want) return &p;
    }
  }
  return nullptr;
}

std::vector<std::string> ResolveTargets(std::span<const std::string> requested) {
  std::set<std::string> wanted;
  for (const auto& r : requested) {
    if (AsciiLower(r) == "all") {
      for (const auto& p : TargetProfiles()) wanted.insert(p.chip);
      continue;
    }
    const auto* p = FindTargetProfile(r);
    if (p == nullptr) {
      std::string known;
      for (const auto& q : TargetProfiles()) known += (known.empty() ? "" : ", ") + q.chip;
      throw std::invalid_argument("unknown target '" + r + "' (known: " + known + ", all)");
    }
    wanted.insert(p->chip);
  }
  std::vector<std::string> out;
  for (const auto& p : TargetProfiles()) {
    if (wanted.contains(p.chip)) out.push_back(p.chip);
  }
  return out;
}

std::string TargetProfileText(const TargetProfile& p) {
  std::ostringstream os;
  os << p.name << " (target '" << p.chip << "'";
  if (!p.aliases.empty()) {
    os << "; also";
    for (const auto& a : p.aliases) os << " '" << a << "'";
  }
  os << ")\n  chips: ";
  for (std::size_t i = 0; i < p.covers.size(); ++i) os << (i ? ", " : "") << p.covers[i];
  os << "\n  source: " << p.source_repository << " " << p.source_file << " at commit "
     << p.source_commit << "\n  documentation version: " << p.doc_version
     << "\n  ai.onnx opset: >= " << p.min_opset << "\n  profile: " << p.file << "\n  "
     << p.ops.size() << " NPU operators (an operator not listed is not supported on this NPU):\n";
  for (const auto& [op, o] : p.ops) {
    os << "    " << op;
    if (!o.table_name.empty()) os << " (listed as " << o.table_name << ")";
    const bool plain =
        o.attributes.empty() && o.inputs.empty() && o.efficiency.empty() && o.not_checked.empty();
    os << (plain ? ": no limit\n" : "\n");
    for (const auto& a : o.attributes) {
      os << "      attribute " << a.name << ": " << LimitText(a);
      if (!a.when.empty()) os << "; applies when " << ConditionText(a.when);
      if (!a.default_when.empty())
        os << "; when not written, the default is judged only when "
           << ConditionText(a.default_when);
      if (!a.note.empty()) os << "; " << a.note;
      os << "\n";
    }
    for (const auto& in : o.inputs) {
      os << "      input " << in.index << " (" << in.name << "): " << InputLimitText(in);
      if (!in.note.empty()) os << "; " << in.note;
      os << "\n";
    }
    for (const auto& e : o.efficiency)
      os << "      efficiency (info): " << e.note << ", when " << ConditionText(e.when) << "\n";
    for (const auto& n : o.not_checked) os << "      not checked: " << n << "\n";
  }
  return os.str();
}

namespace {
// One line per limit of an operator, for the diff.
std::vector<std::string> LimitLines(const OpProfile& o) {
  std::vector<std::string> out;
  for (const auto& a : o.attributes) {
    std::string s = "attribute " + a.name + ": " + LimitText(a);
    if (!a.when.empty()) s += "; applies when " + ConditionText(a.when);
    if (!a.default_when.empty())
      s += "; when not written, the default is judged only when " + ConditionText(a.default_when);
    out.push_back(s);
  }
  for (const auto& in : o.inputs)
    out.push_back("input " + std::to_string(in.index) + " (" + in.name +
                  "): " + InputLimitText(in));
  for (const auto& e : o.efficiency)
    out.push_back("efficiency (info): " + e.note + ", when " + ConditionText(e.when));
  for (const auto& n : o.not_checked) out.push_back("not checked: " + n);
  return out;
}
}  // namespace

std::string TargetProfileDiffText(const TargetProfile& a, const TargetProfile& b) {
  std::ostringstream os;
  os << "profile diff " << a.name << " (" << a.Source() << ") vs " << b.name << " (" << b.Source()
     << ")\n";
  std::vector<std::string> only_a, only_b, changed;
  for (const auto& [op, o] : a.ops) {
    if (!b.ops.contains(op)) only_a.push_back(op);
  }
  for (const auto& [op, o] : b.ops) {
    if (!a.ops.contains(op)) only_b.push_back(op);
  }
  auto list = [&](const std::string& title, const std::vector<std::string>& ops) {
    os << "  " << title << " (" << ops.size() << "):";
    if (ops.empty()) os << " none";
    for (const auto& op : ops) os << " " << op;
    os << "\n";
  };
  list("only on " + a.name, only_a);
  list("only on " + b.name, only_b);
  if (a.min_opset != b.min_opset) {
    os << "  ai.onnx opset: " << a.name << " >= " << a.min_opset << ", " << b.name
       << " >= " << b.min_opset << "\n";
  }
  std::size_t n = 0;
  std::ostringstream limits;
  for (const auto& [op, oa] : a.ops) {
    auto it = b.ops.find(op);
    if (it == b.ops.end()) continue;
    const auto la = LimitLines(oa), lb = LimitLines(it->second);
    if (la == lb) continue;
    ++n;
    limits << "    " << op << "\n";
    for (const auto& l : la) {
      if (std::find(lb.begin(), lb.end(), l) == lb.end())
        limits << "      " << a.name << ": " << l << "\n";
    }
    for (const auto& l : lb) {
      if (std::find(la.begin(), la.end(), l) == la.end())
        limits << "      " << b.name << ": " << l << "\n";
    }
    if (la.empty()) limits << "      " << a.name << ": no limit\n";
    if (lb.empty()) limits << "      " << b.name << ": no limit\n";
  }
  os << "  operators on both with different limits (" << n << "):" << (n == 0 ? " none\n" : "\n")
     << limits.str();
  return os.str();
}

namespace detail {

namespace {

bool IsQdq(const onnx::NodeProto& n) {
  return (n.domain().empty() || n.domain() == "ai.onnx") &&
         (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear");
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// The elements of an attribute (empty for tensor and graph attributes).
std::vector<TargetValue> AttrValues(const onnx::AttributeProto& a) {
  std::vector<TargetValue> out;
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      out.emplace_back(std::int64_t{a.i()});
      break;
    case onnx::AttributeProto::FLOAT:
      out.emplace_back(static_cast<double>(a.f()));
      break;
    case onnx::AttributeProto::STRING:
      out.emplace_back(a.s());
      break;
    case onnx::AttributeProto::INTS:
      for (auto v : a.ints()) out.emplace_back(std::int64_t{v});
      break;
    case onnx::AttributeProto::FLOATS:
      for (auto v : a.floats()) out.emplace_back(static_cast<double>(v));
      break;
    case onnx::AttributeProto::STRINGS:
      for (const auto& v : a.strings()) out.emplace_back(v);
      break;
    default:
      break;
  }
  return out;
}

bool IsList(const onnx::AttributeProto& a) {
  return a.type() == onnx::AttributeProto::INTS || a.type() == onnx::AttributeProto::FLOATS ||
         a.type() == onnx::AttributeProto::STRINGS;
}

struct Effective {
  bool present = false;  // a value (written or the default)
  bool written = false;
  bool list = false;
  std::vector<TargetValue> values;
};

Effective Value(const onnx::NodeProto& n, const std::string& name, bool has_default,
                const std::vector<TargetValue>& def) {
  Effective e;
  if (const auto* a = FindAttr(n, name)) {
    e.present = e.written = true;
    e.list = IsList(*a);
    e.values = AttrValues(*a);
  } else if (has_default) {
    e.present = true;
    e.list = def.size() > 1;
    e.values = def;
  }
  return e;
}

bool Holds(const onnx::NodeProto& n, const TargetCondition& c) {
  const Effective e = Value(n, c.attribute, c.has_default, c.default_value);
  if (!e.present || e.values.empty()) return false;
  const bool all_in =
      std::all_of(e.values.begin(), e.values.end(), [&](const auto& v) { return In(v, c.values); });
  return c.negate ? !all_in : all_in;
}

bool AllHold(const onnx::NodeProto& n, const std::vector<TargetCondition>& when) {
  return std::all_of(when.begin(), when.end(), [&](const auto& c) { return Holds(n, c); });
}

std::string Shown(const Effective& e) {
  const std::string v = FormatValues(e.values, e.list);
  return e.written ? v : v + " (not written: the ONNX default)";
}

bool IsOnnxOp(const onnx::NodeProto& n, std::string_view op) {
  return (n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == op;
}

// The value tensor of a Constant node (attribute `value`), or nullptr.
const onnx::TensorProto* ConstantValue(const onnx::NodeProto& n) {
  if (!IsOnnxOp(n, "Constant")) return nullptr;
  const auto* a = FindAttr(n, "value");
  return a != nullptr && a->type() == onnx::AttributeProto::TENSOR ? &a->t() : nullptr;
}

// Nodes the compiler folds before the NPU sees them: every input is known when the model is
// built (an initializer, a Constant, the shape of a tensor whose dims are all known, or the
// output of another folded node). Constant nodes themselves are listed in the tables and judged.
std::vector<bool> FoldedNodes(const GraphIndex& g) {
  std::vector<bool> static_tensor(static_cast<std::size_t>(g.tensor_count()), false);
  std::vector<bool> folded(static_cast<std::size_t>(g.node_count()), false);
  for (int t = 0; t < g.tensor_count(); ++t) {
    if (g.InitializerOf(t) != nullptr) static_tensor[static_cast<std::size_t>(t)] = true;
  }
  for (int n : g.topo_order()) {
    const auto& node = g.node(n);
    bool known = !IsOnnxOp(node, "Constant") || ConstantValue(node) != nullptr;
    if (IsOnnxOp(node, "Shape") || IsOnnxOp(node, "Size")) {
      const int in = g.InputId(n, 0);
      const auto dims = in >= 0 ? g.DimsOf(in) : std::nullopt;
      known = dims.has_value() &&
              std::all_of(dims->begin(), dims->end(), [](std::int64_t d) { return d >= 0; });
    } else if (!IsOnnxOp(node, "Constant")) {
      bool any = false;
      for (int id : g.InputIds(n)) {
        if (id < 0) continue;
        any = true;
        known = known && static_tensor[static_cast<std::size_t>(id)];
      }
      known = known && any;
      folded[static_cast<std::size_t>(n)] = known;
    }
    if (IsOnnxOp(node, "Shape") || IsOnnxOp(node, "Size"))
      folded[static_cast<std::size_t>(n)] = known;
    if (!known) continue;
    for (int id : g.OutputIds(n)) {
      if (id >= 0) static_tensor[static_cast<std::size_t>(id)] = true;
    }
  }
  return folded;
}

class Evaluator {
 public:
  Evaluator(const GraphIndex& g, const TargetProfile& p, Emitter& out) : g_(g), p_(p), out_(out) {}

  void Opset(const onnx::ModelProto& m) {
    for (const auto& o : m.opset_import()) {
      if (!(o.domain().empty() || o.domain() == "ai.onnx")) continue;
      if (o.version() >= p_.min_opset) continue;
      out_.Emit({.rule = rules::kTargetOpsetUnsupported,
                 .node = -1,
                 .message = p_.name + ": the model imports ai.onnx opset " +
                            std::to_string(o.version()) + "; the " + p_.name +
                            " NPU table covers opset " + std::to_string(p_.min_opset) +
                            " and later (profile " + p_.Source() + ")",
                 .group_key = p_.name + ": ai.onnx opset below the table's minimum",
                 .values = Values({{"opset", std::to_string(o.version())},
                                   {"limit", ">= " + std::to_string(p_.min_opset)}})});
    }
  }

  void Node(int n) {
    const auto& node = g_.node(n);
    if (IsQdq(node)) return;
    const std::string op = node.op_type();
    const std::string who = op + " '" + std::string(g_.NodeName(n)) + "'";
    auto it = p_.ops.find(op);
    if (it == p_.ops.end()) {
      out_.Emit({.rule = rules::kTargetOpUnsupported,
                 .node = n,
                 .message = p_.name + ": " + who + " is not in the " + p_.name +
                            " NPU operator table: not supported on this chip's NPU (profile " +
                            p_.Source() + ")",
                 .group_key = p_.name + ": " + op + " not in the NPU operator table",
                 .values = Values({{"op_type", op}, {"limit", "not in the operator table"}})});
      return;
    }
    const OpProfile& o = it->second;
    for (const auto& a : o.attributes) Attribute(n, who, a);
    for (const auto& in : o.inputs) Input(n, who, in);
    for (const auto& e : o.efficiency) {
      if (!AllHold(node, e.when)) continue;
      std::vector<std::pair<std::string, std::string>> vals;
      std::string shown;
      for (const auto& c : e.when) {
        const Effective v = Value(node, c.attribute, c.has_default, c.default_value);
        vals.emplace_back(c.attribute, FormatValues(v.values, v.list));
        shown += (shown.empty() ? "" : ", ") + c.attribute + " " + FormatValues(v.values, v.list);
      }
      vals.emplace_back("limit", e.note);
      out_.Emit({.rule = rules::kTargetEfficiency,
                 .node = n,
                 .message = p_.name + ": " + who + " (" + shown + "): " + e.note +
                            " (efficiency note of the table; profile " + p_.Source() + ")",
                 .group_key = p_.name + ": " + op + ": " + e.note,
                 .values = Values(std::move(vals))});
    }
    for (const auto& text : o.not_checked) NotChecked(n, who, op, text, "", "");
  }

 private:
  std::vector<std::pair<std::string, std::string>> Values(
      std::vector<std::pair<std::string, std::string>> v) const {
    v.insert(v.begin(), {"chip", p_.chip});
    v.emplace_back("profile", p_.Source());
    return v;
  }

  void NotChecked(int n, const std::string& who, const std::string& op, const std::string& what,
                  const std::string& key, const std::string& field) {
    std::vector<std::pair<std::string, std::string>> vals;
    if (!field.empty()) vals.emplace_back(key, field);
    vals.emplace_back("limit", what);
    out_.Emit({.rule = rules::kTargetNotChecked,
               .node = n,
               .message = p_.name + ": " + who + ": documented limit not checked: " + what +
                          " (profile " + p_.Source() + ")",
               .group_key = p_.name + ": " + op + " limit not checked: " + what,
               .values = Values(std::move(vals))});
  }

  int Rank(int n, int input) const {
    const int id = g_.InputId(n, input);
    if (id < 0) return -1;
    if (const auto* init = g_.InitializerOf(id)) return init->dims_size();
    const auto dims = g_.DimsOf(id);
    return dims ? static_cast<int>(dims->size()) : -1;
  }

  void Attribute(int n, const std::string& who, const AttrConstraint& c) {
    const auto& node = g_.node(n);
    const std::string& op = node.op_type();
    if (!c.when.empty() && !AllHold(node, c.when)) return;
    const Effective e = Value(node, c.name, c.has_default, c.default_value);
    if (!e.present) return;
    if (!e.written && !c.default_when.empty() && !AllHold(node, c.default_when)) return;
    const std::string limit = LimitText(c);
    auto emit = [&](RuleId rule, const std::string& why, const std::string& shown) {
      std::string msg = p_.name + ": " + who + " " + c.name + " = " + shown + "; " + why;
      if (!c.when.empty()) msg += " (applies when " + ConditionText(c.when) + ")";
      if (!c.note.empty()) msg += "; " + c.note;
      msg += " (profile " + p_.Source() + ")";
      out_.Emit({.rule = rule,
                 .node = n,
                 .message = std::move(msg),
                 .group_key = p_.name + ": " + op + " " + c.name + ": " + limit,
                 .values = Values({{"attribute", c.name}, {"value", shown}, {"limit", limit}})});
    };
    switch (c.kind) {
      case AttrKind::kAllowed:
      case AttrKind::kDisallowed: {
        std::vector<TargetValue> values = e.values;
        std::vector<TargetValue> allowed = c.values;
        if (c.axis_of_input >= 0) {
          const int rank = Rank(n, c.axis_of_input);
          auto norm = [rank](std::vector<TargetValue>& vs) {
            for (auto& v : vs) {
              if (auto* i = std::get_if<std::int64_t>(&v); i != nullptr && *i < 0) *i += rank;
            }
          };
          if (rank < 0) {
            const bool ok = std::all_of(values.begin(), values.end(),
                                        [&](const auto& v) { return In(v, allowed); });
            if (!ok) {
              NotChecked(n, who, op,
                         c.name + " " + limit + " (the rank of input " +
                             std::to_string(c.axis_of_input) + " is unknown)",
                         "attribute", c.name);
            }
            return;
          }
          norm(values);
          norm(allowed);
        }
        const bool bad = std::any_of(values.begin(), values.end(), [&](const auto& v) {
          return c.kind == AttrKind::kAllowed ? !In(v, allowed) : In(v, allowed);
        });
        if (bad) {
          emit(rules::kTargetAttributeValue, "the " + p_.name + " NPU supports " + limit, Shown(e));
        }
        return;
      }
      case AttrKind::kAllowedTypes: {
        for (const auto& v : e.values) {
          const auto* code = std::get_if<std::int64_t>(&v);
          const std::string name = code != nullptr ? DataTypeName(*code) : FormatValue(v);
          if (std::find(c.types.begin(), c.types.end(), name) == c.types.end()) {
            emit(rules::kTargetAttributeValue, "the " + p_.name + " NPU supports " + limit, name);
          }
        }
        return;
      }
      case AttrKind::kUnsupported: {
        if (!e.written) return;
        if (c.has_default && e.values.size() == c.default_value.size() &&
            std::equal(e.values.begin(), e.values.end(), c.default_value.begin(), Equal)) {
          return;
        }
        emit(rules::kTargetAttributeUnsupported,
             "the " + p_.name + " NPU supports the attribute " + c.name + " " +
                 (c.for_now ? "not yet" : "not at all") +
                 (c.has_default ? " (only its default " + FormatValues(c.default_value, false) +
                                      " is accepted)"
                                : ""),
             e.values.empty() ? "(set)" : Shown(e));
        return;
      }
      case AttrKind::kAtMostPadsEnd: {
        const auto* pads = FindAttr(node, "pads");
        const std::size_t r = e.values.size();
        for (std::size_t i = 0; i < r; ++i) {
          const auto* v = std::get_if<std::int64_t>(&e.values[i]);
          const std::int64_t end =
              pads != nullptr && static_cast<std::size_t>(pads->ints_size()) == 2 * r
                  ? pads->ints(static_cast<int>(r + i))
                  : 0;
          if (v != nullptr && *v > end) {
            emit(rules::kTargetAttributeValue,
                 "the " + p_.name + " NPU supports " + limit + ": element " + std::to_string(i) +
                     " is " + std::to_string(*v) + " > " + std::to_string(end),
                 Shown(e));
            return;
          }
        }
        return;
      }
    }
  }

  void Input(int n, const std::string& who, const InputConstraint& c) {
    const auto& node = g_.node(n);
    const std::string& op = node.op_type();
    if (c.when_rank_input >= 0 && Rank(n, c.when_rank_input) != c.when_rank) return;
    const int id = g_.InputId(n, c.index);
    const std::string limit = InputLimitText(c);
    const std::string slot = "input " + std::to_string(c.index) + " (" + c.name + ")";
    auto emit = [&](const std::string& found) {
      std::string msg = p_.name + ": " + who + " " + slot + " " + found + "; the " + p_.name +
                        " NPU supports " + limit;
      if (!c.note.empty()) msg += "; " + c.note;
      msg += " (profile " + p_.Source() + ")";
      std::vector<std::string> tensors;
      if (id >= 0) tensors.emplace_back(g_.TensorName(id));
      out_.Emit({.rule = rules::kTargetInputConstraint,
                 .node = n,
                 .message = std::move(msg),
                 .group_key = p_.name + ": " + op + " " + c.name + ": " + limit,
                 .tensors = std::move(tensors),
                 .values = Values({{"input", c.name}, {"value", found}, {"limit", limit}})});
    };
    if (c.absent) {
      if (id >= 0) emit("is given ('" + std::string(g_.TensorName(id)) + "')");
      return;
    }
    if (id < 0) return;  // an omitted optional input
    if (!c.ranks.empty()) {
      const int rank = Rank(n, c.index);
      if (rank < 0) {
        NotChecked(n, who, op, slot + ": " + limit + " (its rank is unknown)", "input", c.name);
      } else if (std::find(c.ranks.begin(), c.ranks.end(), rank) == c.ranks.end()) {
        emit("has rank " + std::to_string(rank));
      }
      return;
    }
    if (c.initializer) {
      const onnx::TensorProto* init = g_.InitializerOf(id);
      if (init == nullptr) {
        // A Constant, or a constant dequantized from an initializer, counts as one.
        const int p = g_.ProducerOf(id);
        if (p >= 0 && IsQdq(g_.node(p)) && g_.node(p).op_type() == "DequantizeLinear")
          init = g_.InitializerOf(g_.InputId(p, 0));
        if (p >= 0 && init == nullptr) init = ConstantValue(g_.node(p));
      }
      if (init == nullptr) {
        emit("is computed at run time, not an initializer");
        return;
      }
      if (c.max_elements >= 0) {
        const auto count = ElementCount(*init);
        if (count && *count > c.max_elements)
          emit("is an initializer of " + std::to_string(*count) + " elements");
      }
      return;
    }
    // shapes
    std::optional<std::vector<std::int64_t>> dims;
    if (const auto* init = g_.InitializerOf(id)) {
      dims = std::vector<std::int64_t>(init->dims().begin(), init->dims().end());
    } else {
      dims = g_.DimsOf(id);
    }
    const int cid = g_.InputId(n, c.channel_input);
    const auto cdims = cid >= 0 ? g_.DimsOf(cid) : std::nullopt;
    std::int64_t channels = -1;
    if (cdims && c.channel_dim < static_cast<int>(cdims->size()))
      channels = (*cdims)[static_cast<std::size_t>(c.channel_dim)];
    if (!dims || channels < 0 ||
        std::any_of(dims->begin(), dims->end(), [](std::int64_t d) { return d < 0; })) {
      NotChecked(n, who, op, slot + ": " + limit + " (a shape is unknown)", "input", c.name);
      return;
    }
    const bool ok = std::any_of(c.shapes.begin(), c.shapes.end(), [&](const auto& shape) {
      if (shape.size() != dims->size()) return false;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const std::int64_t want = shape[d] == "C" ? channels : std::stoll(shape[d]);
        if ((*dims)[d] != want) return false;
      }
      return true;
    });
    if (!ok) {
      std::string shown = "(";
      for (std::size_t d = 0; d < dims->size(); ++d)
        shown += (d ? ", " : "") + std::to_string((*dims)[d]);
      shown += dims->size() == 1 ? ",)" : ")";
      emit("has shape " + shown + " (C = " + std::to_string(channels) + ")");
    }
  }

  const GraphIndex& g_;
  const TargetProfile& p_;
  Emitter& out_;
};

}  // namespace

std::vector<Finding> EvaluateTargets(const GraphIndex& g, const onnx::ModelProto& model,
                                     std::span<const std::string> chips,
                                     std::vector<int>* primary) {
  std::vector<Finding> all;
  const std::vector<bool> folded = FoldedNodes(g);
  for (const auto& chip : chips) {
    const TargetProfile* p = FindTargetProfile(chip);
    if (p == nullptr) throw std::invalid_argument("unknown target '" + chip + "'");
    Emitter out(&g, false);
    Evaluator ev(g, *p, out);
    ev.Opset(model);
    for (int n : g.topo_order()) {
      if (!folded[static_cast<std::size_t>(n)]) ev.Node(n);
    }
    std::vector<int> nodes;
    auto found = out.Take(&nodes);
    for (std::size_t i = 0; i < found.size(); ++i) {
      all.push_back(std::move(found[i]));
      if (primary != nullptr) primary->push_back(nodes[i]);
    }
  }
  return all;
}

std::vector<TargetResult> TargetResults(const std::vector<Finding>& findings,
                                        std::span<const std::string> chips) {
  std::vector<TargetResult> out;
  for (const auto& chip : chips) {
    const TargetProfile* p = FindTargetProfile(chip);
    if (p == nullptr) continue;
    TargetResult r;
    r.chip = p->chip;
    r.name = p->name;
    r.source = p->Source();
    r.doc_version = p->doc_version;
    std::set<std::string> seen;
    for (const auto& f : findings) {
      if (!IsTargetRule(f.rule)) continue;
      auto c = std::find_if(f.values.begin(), f.values.end(),
                            [](const auto& kv) { return kv.first == "chip"; });
      if (c == f.values.end() || c->second != p->chip) continue;
      if (f.severity == Severity::kError) {
        ++r.errors;
        const std::string node = f.nodes.empty() ? std::string() : f.nodes.front();
        if (seen.insert(f.rule + "\n" + node).second)
          r.blocking.push_back({f.rule, f.op_type, node});
      } else {
        ++r.notes;
      }
    }
    r.verdict = r.errors > 0  ? TargetVerdict::kDoesNotFit
                : r.notes > 0 ? TargetVerdict::kFitsWithNotes
                              : TargetVerdict::kFits;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace detail

}  // namespace axqc
