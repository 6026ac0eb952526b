// Chip targets: what Axera's published NPU operator tables allow, one profile per chip.
//
// A profile is data (core/targets/<chip>.json, schema "axqc.target-profile/1", docs/targets.md):
// the operators of the chip's NPU table, each with a few constraints of a small fixed set of
// kinds. One evaluator reads every profile; no chip has code of its own. The profiles are built
// into the library and validated when first used: a broken profile is an error that names the
// file and the field.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace axqc {

// A profile that does not follow the schema. what(): "<file>: <field>: <why>".
class TargetProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One attribute value element: an integer, a float or a string.
using TargetValue = std::variant<std::int64_t, double, std::string>;

// A condition on an attribute: holds when the attribute's value (or `default`, when it is not
// written) has every element in `in`, or (`negate`) some element outside it. No value: false.
struct TargetCondition {
  std::string attribute;
  std::vector<TargetValue> values;
  bool negate = false;  // "not_in"
  bool has_default = false;
  std::vector<TargetValue> default_value;
};

// Kinds of attribute constraint.
enum class AttrKind {
  kAllowed,        // every element of the value in `values` (target/attribute-value)
  kDisallowed,     // no element of the value in `values` (target/attribute-value)
  kAllowedTypes,   // a data-type attribute (Cast `to`) names one of `types`
  kUnsupported,    // written with a value other than the default (target/attribute-unsupported)
  kAtMostPadsEnd,  // output_padding[i] <= pads[rank + i] (ConvTranspose)
};

struct AttrConstraint {
  std::string name;
  AttrKind kind = AttrKind::kAllowed;
  std::vector<TargetValue> values;
  std::vector<std::string> types;  // kAllowedTypes: "uint8", "float32", ...
  bool has_default = false;
  std::vector<TargetValue> default_value;  // the ONNX default, used when not written
  int axis_of_input = -1;                  // >= 0: an axis, normalised by the rank of this input
  bool for_now = false;                    // the table says "not yet" / "for now"
  std::vector<TargetCondition> when;       // all must hold for the constraint to apply
  // When the attribute is not written, its default is judged only if these all hold (a written
  // value is always judged).
  std::vector<TargetCondition> default_when;
  std::string note;
};

// Kinds of input constraint (target/input-constraint).
struct InputConstraint {
  int index = 0;
  std::string name;
  bool absent = false;             // the input must not be given
  std::vector<int> ranks;          // allowed ranks
  bool initializer = false;        // an initializer (directly or through a DequantizeLinear)
  std::int64_t max_elements = -1;  // with initializer: at most this many elements
  // Allowed shapes; "C" in a shape is dim `channel_dim` of input `channel_input`.
  std::vector<std::vector<std::string>> shapes;
  int channel_input = -1;
  int channel_dim = -1;
  int when_rank_input = -1;  // apply only when this input has rank `when_rank`
  int when_rank = -1;
  bool for_now = false;
  std::string note;
};

// An efficiency note of the table (target/efficiency, info).
struct EfficiencyNote {
  std::vector<TargetCondition> when;
  std::string note;
};

struct OpProfile {
  std::string table_name;  // the operator's name in the table when it differs ("Topk")
  std::vector<AttrConstraint> attributes;
  std::vector<InputConstraint> inputs;
  std::vector<EfficiencyNote> efficiency;
  std::vector<std::string> not_checked;  // limits that are not evaluated statically
};

struct TargetProfile {
  std::string file;                  // core/targets/<chip>.json
  std::string chip;                  // "ax650"
  std::string name;                  // "AX650"
  std::vector<std::string> covers;   // chips the table covers ("AX650", "M76H")
  std::vector<std::string> aliases;  // other names accepted for --target ("m76h")
  std::string source_repository;
  std::string source_file;
  std::string source_commit;
  std::string doc_version;
  int min_opset = 0;
  std::map<std::string, OpProfile> ops;  // by ONNX op_type
  std::string json_text;                 // the profile file as read

  // "AXERA-TECH/pulsar2-docs@b32f7c1:source/appendix/op_support_list_ax650.md"
  std::string Source() const;
};

// Parses and validates one profile. Throws TargetProfileError naming `file` and the field.
TargetProfile ParseTargetProfile(std::string_view json_text, std::string_view file);

// The built-in profiles (core/targets/*.json), validated on first use, in a fixed order:
// ax650, ax620e, ax615, ax637, m57. Throws TargetProfileError if one is broken.
std::span<const TargetProfile> TargetProfiles();

// The profile of a chip name or alias (case-insensitive), or nullptr.
const TargetProfile* FindTargetProfile(std::string_view chip);

// Chip names of `--target` values: each a chip or alias, or "all". Canonical, no repeats, in
// profile order. Throws std::invalid_argument naming an unknown chip and the known ones.
std::vector<std::string> ResolveTargets(std::span<const std::string> requested);

// The profile in readable form (operators, limits, source, version).
std::string TargetProfileText(const TargetProfile& p);
// The differences between two profiles (operators only in one, limits that differ).
std::string TargetProfileDiffText(const TargetProfile& a, const TargetProfile& b);

}  // namespace axqc
