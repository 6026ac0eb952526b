#include "cached_report.h"

#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "axqc/render.h"
#include "axqc/wire/report_proto.h"

namespace axqc::server {

namespace {

// The JSON text of a string, as RenderJson writes it.
std::string JsonString(std::string_view s) { return nlohmann::json(s).dump(); }

// A file name no report can contain by chance or on purpose: 128 random bits.
std::string Marker() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string m = "axqc-file-";
  for (int word = 0; word < 2; ++word) {
    std::uint64_t v = rng();
    for (int i = 0; i < 16; ++i, v >>= 4) m += kHex[v & 0xf];
  }
  return m;
}

// The JSON text against the wire size of the report the service keeps (with its graph excerpt,
// which the JSON leaves out): 0.6-1.7x on the example models and the real and modelled exports
// of tests/data (2.2x for the 1.2 KB report of a float-only model).
constexpr std::size_t kJsonPerWireByte = 2;

}  // namespace

CachedReport::CachedReport(v1::Report proto)
    : proto_(std::move(proto)), wire_bytes_(proto_.ByteSizeLong()) {}

std::size_t CachedReport::EstimatedBytes() const {
  // A parsed message takes about twice its wire size (strings, repeated-field and map overhead).
  // (Reflection's SpaceUsedLong is avoided: it is slow, and crashed on map fields under
  // ThreadSanitizer.)
  return 2 * wire_bytes_ + kJsonPerWireByte * wire_bytes_ + sizeof(*this);
}

const CachedReport::Json_& CachedReport::Rendered() const {
  std::call_once(once_, [this] {
    Report core = wire::FromProto(proto_);
    const std::string marker = Marker();
    core.model.file = marker;
    std::string text = RenderJson(core);
    const std::string quoted = JsonString(marker);
    const auto at = text.find(quoted);
    if (at != std::string::npos && text.find(quoted, at + 1) == std::string::npos) {
      json_.before = text.substr(0, at);
      json_.after = text.substr(at + quoted.size());
      json_.split = true;
    } else {  // cannot happen with a random marker; render the report as it is
      core.model.file = proto_.model().file();
      json_.before = RenderJson(core);
    }
    ready_.store(true, std::memory_order_release);
  });
  return json_;
}

std::string CachedReport::Json(std::string_view file) const {
  const Json_& j = Rendered();
  const std::string_view name = file.empty() ? std::string_view(proto_.model().file()) : file;
  if (j.split) {
    const std::string quoted = JsonString(name);
    std::string out;
    out.reserve(j.before.size() + quoted.size() + j.after.size());
    out.append(j.before).append(quoted).append(j.after);
    return out;
  }
  if (name == proto_.model().file()) return j.before;
  Report core = wire::FromProto(proto_);
  core.model.file = std::string(name);
  return RenderJson(core);
}

}  // namespace axqc::server
