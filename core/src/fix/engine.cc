// The driver of `axqc fix`: check the input, run the selected rewrites, write the model (external
// data next to it), check the result.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <random>

#include "axqc/checker.h"
#include "axqc/fix.h"
#include "axqc/sha256.h"
#include "fix/session.h"
#include "loader.h"
#include "pipeline.h"
#include "rules.h"

namespace axqc {

namespace detail::fix {
namespace {

namespace fs = std::filesystem;
using TP = onnx::TensorProto;

// External data of a model that is read through another model's reader (the checks of a copy).
class BorrowedReader final : public ExternalDataReader {
 public:
  explicit BorrowedReader(const ExternalDataReader* r) : r_(r) {}
  std::optional<std::string> Read(const TP& t, std::size_t max_bytes) const override {
    return r_ == nullptr ? std::nullopt : r_->Read(t, max_bytes);
  }

 private:
  const ExternalDataReader* r_;
};

std::vector<const RewriteEntry*> Selected(const FixOptions& o) {
  for (const auto& id : o.only) {
    if (FindRewrite(id) == nullptr) {
      std::string ids;
      for (const auto& r : Rewrites()) ids += (ids.empty() ? "" : ", ") + std::string(r.id);
      throw FixRefused("unknown rewrite '" + id + "' (rewrites: " + ids + ")");
    }
  }
  for (const auto& id : o.apply) {
    const RewriteInfo* r = FindRewrite(id);
    if (r == nullptr || !r->opt_in) {
      std::string ids;
      for (const auto& x : Rewrites()) {
        if (x.opt_in) ids += (ids.empty() ? "" : ", ") + std::string(x.id);
      }
      throw FixRefused("--apply takes the opt-in rewrites (" + ids + "), not '" + id + "'");
    }
  }
  for (const auto& id : o.only) {
    if (FindRewrite(id)->opt_in) {
      throw FixRefused("'" + id + "' changes a type and runs only when requested with --apply " +
                       id);
    }
  }
  if (std::find(o.only.begin(), o.only.end(), "ir-version") != o.only.end() && !o.ir_version) {
    throw FixRefused("the ir-version rewrite needs --ir-version N (the IR version to write)");
  }
  std::vector<const RewriteEntry*> out;
  for (const auto& e : RewriteTable()) {
    bool on = false;
    if (e.info.id == "ir-version") {
      on = o.ir_version.has_value();
    } else if (e.info.opt_in) {
      on = std::find(o.apply.begin(), o.apply.end(), e.info.id) != o.apply.end();
    } else if (o.only.empty()) {
      on = e.info.by_default;
    } else {
      on = std::find(o.only.begin(), o.only.end(), e.info.id) != o.only.end();
    }
    if (on) out.push_back(&e);
  }
  return out;
}

const Finding* FirstInvalid(const Report& r) {
  for (const auto& f : r.findings) {
    if (f.rule == rules::kOnnxInvalidModel.id()) return &f;
  }
  return nullptr;
}

CheckOptions CheckOpts(const FixOptions& o) {
  CheckOptions c;
  c.check_value = o.check_value;
  c.max_locations = o.max_locations;
  c.include_units = false;
  return c;
}

// The check of an in-memory copy of `m` (reading its external data where `m` does).
Report CheckCopy(const LoadedModel& m, const FixOptions& o, const std::string& name) {
  LoadedModel copy;
  copy.proto->CopyFrom(*m.proto);
  std::string bytes;
  copy.proto->SerializeToString(&bytes);
  copy.sha256 = Sha256Hex(bytes);
  copy.size = bytes.size();
  copy.name = name;
  copy.dir = m.dir;
  copy.external = std::make_unique<BorrowedReader>(m.external.get());
  return CheckLoaded(copy, CheckOpts(o));
}

std::string Lib() { return std::string("ONNX ") + AXQC_ONNX_VERSION; }

void RunRewrites(LoadedModel& m, FixResult& r, const FixOptions& o) {
  const auto selected = Selected(o);
  auto& model = *m.proto;
  const std::int64_t lib_ir = onnx::IR_VERSION;
  const bool ir_too_new = model.ir_version() > lib_ir;
  bool opset_too_new = false;
  for (const auto& op : model.opset_import()) {
    if ((op.domain().empty() || op.domain() == "ai.onnx") && op.version() > MaxKnownOnnxOpset()) {
      opset_too_new = true;
    }
  }
  if (const Finding* bad = FirstInvalid(r.before)) {
    if (ir_too_new && !opset_too_new && o.ir_version && *o.ir_version <= lib_ir) {
      // ir-version runs first; the model is validated right after it.
    } else if (ir_too_new && !opset_too_new) {
      const IrNeed need = MinimumIrVersion(model, true);
      std::string msg = "the model declares IR " + std::to_string(model.ir_version()) +
                        ", newer than " + Lib() + " reads (IR " + std::to_string(lib_ir) + "); ";
      if (need.ir <= lib_ir) {
        msg += "nothing in it needs more than IR " + std::to_string(need.ir) +
               ": add --ir-version " + std::to_string(lib_ir) + " to lower it";
      } else {
        msg += "it uses " + need.reasons.front().second + ", which needs IR " +
               std::to_string(need.reasons.front().first) + ", so it cannot be lowered";
      }
      if (o.ir_version) msg += " (--ir-version " + std::to_string(*o.ir_version) + " is above it)";
      throw FixRefused(msg, r.before);
    } else {
      throw FixRefused("the model is not valid ONNX (onnx/invalid-model: " + bad->message +
                           "); axqc fix rewrites only models that pass the ONNX checker",
                       r.before);
    }
  }
  // Node names before and after: a skip at a node that a later rewrite removed is not reported
  // (e.g. a Shape node fold-shape could not fold but reshape-copy-dims made unused).
  auto node_names = [&]() {
    std::unordered_set<std::string> names;
    ForEachGraph(*model.mutable_graph(), [&](onnx::GraphProto& g) {
      for (const auto& n : g.node()) {
        if (!n.name().empty()) names.insert(n.name());
      }
    });
    return names;
  };
  const auto names_before = node_names();
  Session s(model, m.external.get(), o);
  r.rewrites.reserve(selected.size());
  for (const auto* e : selected) {
    r.rewrites.emplace_back();
    r.rewrites.back().id = std::string(e->info.id);
    s.Begin(&r.rewrites.back());
    try {
      e->run(s);
    } catch (const FixRefused& refused) {
      if (refused.before()) throw;
      throw FixRefused(refused.what(), r.before);
    }
    if (e->info.id == "ir-version" && FirstInvalid(r.before) != nullptr) {
      const Report lowered = CheckCopy(m, o, m.name);
      if (const Finding* bad = FirstInvalid(lowered)) {
        throw FixRefused("lowered to IR " + std::to_string(model.ir_version()) +
                             ", the model is not valid ONNX (onnx/invalid-model: " + bad->message +
                             "); nothing was written",
                         r.before);
      }
    }
  }
  const auto names_after = node_names();
  for (auto& out : r.rewrites) {
    std::erase_if(out.first_skips, [&](const auto& skip) {
      return names_before.contains(skip.first) && !names_after.contains(skip.first);
    });
    out.skipped = out.first_skips.size();
    if (out.first_skips.size() > o.max_locations) out.first_skips.resize(o.max_locations);
  }
  if (o.ir_version) {
    const IrNeed need = MinimumIrVersion(model, false);
    if (need.ir > model.ir_version()) {
      throw std::runtime_error("internal error: after the rewrites the model needs IR " +
                               std::to_string(need.ir) + " (" + need.reasons.front().second +
                               ") but declares " + std::to_string(model.ir_version()) +
                               "; nothing was written");
    }
  }
}

void RequireStillValid(const FixResult& r) {
  if (FirstInvalid(r.before) != nullptr && r.before.model.ir_version == r.after.model.ir_version) {
    return;
  }
  if (const Finding* bad = FirstInvalid(r.after)) {
    throw std::runtime_error(
        "internal error: the rewritten model fails ONNX validation (" + bad->message +
        "); nothing was written. Please report this model; --only can leave the failing rewrite "
        "out");
  }
}

// Every tensor of the model that can hold external data, mutable.
template <typename F>
void ForEachTensorMut(onnx::ModelProto& m, F&& f) {
  auto attrs = [&](onnx::NodeProto& n, std::vector<onnx::GraphProto*>& todo) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) f(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) f(t);
      if (a.has_sparse_tensor()) {
        f(*a.mutable_sparse_tensor()->mutable_values());
        f(*a.mutable_sparse_tensor()->mutable_indices());
      }
      for (auto& st : *a.mutable_sparse_tensors()) {
        f(*st.mutable_values());
        f(*st.mutable_indices());
      }
      if (a.has_g()) todo.push_back(a.mutable_g());
      for (auto& g : *a.mutable_graphs()) todo.push_back(&g);
    }
  };
  std::vector<onnx::GraphProto*> todo{m.mutable_graph()};
  for (auto& fn : *m.mutable_functions()) {
    for (auto& n : *fn.mutable_node()) attrs(n, todo);
  }
  while (!todo.empty()) {
    auto* g = todo.back();
    todo.pop_back();
    for (auto& t : *g->mutable_initializer()) f(t);
    for (auto& st : *g->mutable_sparse_initializer()) {
      f(*st.mutable_values());
      f(*st.mutable_indices());
    }
    for (auto& n : *g->mutable_node()) attrs(n, todo);
  }
}

struct TempDir {
  fs::path path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Writes the model (and its external data) into `dir` as `file` (+ `file`.data); returns the
// data file's name, or "" when the model has no external data.
std::string WriteInto(LoadedModel& m, const fs::path& dir, const std::string& file) {
  const std::string data_name = file + ".data";
  std::vector<TP*> external;
  ForEachTensorMut(*m.proto, [&](TP& t) {
    if (IsExternal(t)) external.push_back(&t);
  });
  if (!external.empty()) {
    std::ofstream data(dir / data_name, std::ios::binary | std::ios::trunc);
    if (!data) throw std::runtime_error("cannot write " + (dir / data_name).string());
    std::uint64_t offset = 0;
    for (TP* t : external) {
      auto bytes = m.external ? m.external->Read(*t, SIZE_MAX) : std::nullopt;
      if (!bytes) {
        throw std::runtime_error("cannot read the external data of tensor '" + t->name() +
                                 "'; nothing was written");
      }
      // Large tensors start on a 64 KiB boundary (memory-mapping runtimes map them in place).
      if (bytes->size() >= (std::size_t{1} << 20) && offset % 65536 != 0) {
        const std::uint64_t pad = 65536 - offset % 65536;
        data << std::string(static_cast<std::size_t>(pad), '\0');
        offset += pad;
      }
      data.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> kept;
      for (const auto& kv : t->external_data()) {
        if (kv.key() != "location" && kv.key() != "offset" && kv.key() != "length") {
          *kept.Add() = kv;
        }
      }
      t->clear_external_data();
      auto add = [&](const std::string& k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_name);
      add("offset", std::to_string(offset));
      add("length", std::to_string(bytes->size()));
      for (auto& kv : kept) *t->add_external_data() = std::move(kv);
      offset += bytes->size();
    }
    data.flush();
    if (!data) throw std::runtime_error("cannot write " + (dir / data_name).string());
  }
  if (m.proto->ByteSizeLong() > static_cast<std::size_t>(INT_MAX)) {
    throw std::runtime_error("the fixed model exceeds protobuf's 2 GiB limit; nothing was written");
  }
  std::ofstream out(dir / file, std::ios::binary | std::ios::trunc);
  if (!out || !m.proto->SerializeToOstream(&out)) {
    throw std::runtime_error("cannot write " + (dir / file).string());
  }
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + (dir / file).string());
  return external.empty() ? std::string() : data_name;
}

}  // namespace
}  // namespace detail::fix

FixResult FixFile(const std::string& input, const std::string& output, const FixOptions& options) {
  namespace fs = std::filesystem;
  using namespace detail;
  using namespace detail::fix;
  Selected(options);  // refuse an unknown ID before reading anything
  FixResult r;
  r.input = input;
  r.output = output;
  r.dry_run = output.empty();
  r.before = CheckFile(input, CheckOpts(options));
  LoadedModel m = LoadFromFile(input);
  RunRewrites(m, r, options);
  if (r.dry_run) {
    std::string bytes;
    m.proto->SerializeToString(&bytes);
    m.sha256 = Sha256Hex(bytes);
    m.size = bytes.size();
    r.after = CheckLoaded(m, CheckOpts(options));
    RequireStillValid(r);
    return r;
  }
  const fs::path out(output);
  fs::path dir = out.parent_path();
  if (dir.empty()) dir = ".";
  const std::string file = out.filename().string();
  std::error_code ec;
  if (file.empty() || fs::is_directory(out, ec)) {
    throw std::runtime_error(output + ": the output must be a file path");
  }
  // Everything is written into a fresh directory beside the output, checked there, then renamed
  // into place: a failure leaves the output (and a model read in place) untouched.
  TempDir tmp;
  std::random_device rd;
  tmp.path = dir / (".axqc-fix-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  if (!fs::create_directory(tmp.path, ec) || ec) {
    tmp.path.clear();
    throw std::runtime_error("cannot create a file in " + dir.string() + " (" + ec.message() + ")");
  }
  const std::string data = WriteInto(m, tmp.path, file);
  r.after = CheckFile((tmp.path / file).string(), CheckOpts(options));
  r.after.model.file = output;
  RequireStillValid(r);
  if (!data.empty()) {
    fs::rename(tmp.path / data, dir / data, ec);
    if (ec) throw std::runtime_error("cannot write " + (dir / data).string() + ": " + ec.message());
    r.data_file = (dir / data).string();
  }
  fs::rename(tmp.path / file, out, ec);
  if (ec) throw std::runtime_error("cannot write " + output + ": " + ec.message());
  r.written = true;
  return r;
}

FixResult FixBytes(std::string_view bytes, const std::string& name, const FixOptions& options,
                   std::string* fixed) {
  using namespace detail;
  using namespace detail::fix;
  Selected(options);
  FixResult r;
  r.input = name;
  r.dry_run = fixed == nullptr;
  r.before = CheckBytes(bytes, name, CheckOpts(options));
  LoadedModel m = LoadFromBytes(bytes, name);
  RunRewrites(m, r, options);
  std::string out;
  m.proto->SerializeToString(&out);
  r.after = CheckBytes(out, name, CheckOpts(options));
  RequireStillValid(r);
  if (fixed != nullptr) *fixed = std::move(out);
  return r;
}

}  // namespace axqc
