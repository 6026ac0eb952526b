// `axqc check --server`: a local model is looked up on the server by its hash and uploaded when
// the server does not know it (with its external data files, whole or by the byte ranges the
// server asks for); a server-side path or URL (--ref) is checked with Check. See remote.h.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "cli.h"
#include "exit_codes.h"
#include "protocol.h"
#include "remote_transport.h"

namespace axqc::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunkBytes = 1u << 20;             // Upload chunk
constexpr std::uint64_t kProgressMinBytes = 16ull << 20;  // progress on a TTY from 16 MiB

// The metadata of an Upload of the model file at `path` (full or ranged): name, labels, options,
// the graph file's size and sha256.
void FillUploadMetadata(const CheckArgs& a, const std::string& path,
                        const v1::CheckOptions& options, std::uint64_t size,
                        const std::string& graph_sha256, v1::UploadMetadata* md) {
  md->set_file_name(path);
  for (const auto& [k, v] : a.labels) (*md->mutable_labels())[k] = v;
  *md->mutable_options() = options;
  md->set_size_bytes(size);
  md->set_sha256(graph_sha256);
}

v1::CheckOptions ProtoOptions(const CheckArgs& a) {
  v1::CheckOptions o;
  o.set_check_value(a.check_value);
  o.set_max_locations(
      static_cast<std::uint32_t>(std::min<std::size_t>(a.max_locations, wire::kMaxLocations)));
  o.set_format(v1::REPORT_FORMAT_PROTOBUF);
  for (const auto& t : a.targets) o.add_targets(t);
  if (a.pulsar2_config_text) o.set_pulsar2_config(*a.pulsar2_config_text);
  return o;
}

// Fills `m` from a successful response. `recorded`: the request is a row of the server's history.
void TakeReport(const v1::CheckResponse& resp, ModelResult* m, bool recorded) {
  try {
    m->report = wire::FromProto(resp.report());
    m->ok = true;
    m->request_id = resp.request_id();
    m->recorded = recorded && !resp.request_id().empty();
    m->exit_code = ExitCodeFor(m->report.verdict);
  } catch (const std::exception& e) {
    m->ok = false;
    m->exit_code = kExitNoVerdict;
    m->error_kind = "server error";
    m->error = m->file + ": unreadable report from the server: " + e.what();
  }
}

void TakeError(const Connection& c, const grpc::Status& s, const std::string& request_id,
               ModelResult* m) {
  m->ok = false;
  m->exit_code = ExitCodeForStatus(s);
  // The bytes are not an ONNX model, a path is missing, ...: about the input, as in local mode.
  m->error_kind = m->exit_code == kExitError ? "input error" : "no verdict from the server";
  m->error = m->file + ": " + c.Describe(s, request_id);
  m->stop = c.Unusable(s);
}

class Progress {
 public:
  Progress(const std::string& mode, const std::string& name, std::uint64_t total)
      : name_(name), total_(total) {
    enabled_ = mode == "always" ||
               (mode == "auto" && total >= kProgressMinBytes && ::isatty(STDERR_FILENO) != 0);
  }
  void Update(std::uint64_t sent) {
    if (!enabled_) return;
    const int pct = total_ == 0 ? 100 : static_cast<int>(sent * 100 / total_);
    if (pct == last_) return;
    last_ = pct;
    std::cerr << "\raxqc: uploading " << name_ << " " << std::setw(3) << pct << "% (" << std::fixed
              << std::setprecision(1) << static_cast<double>(sent) / 1048576.0 << " / "
              << static_cast<double>(total_) / 1048576.0 << " MiB)" << std::flush;
  }
  void Done() {
    if (enabled_ && last_ >= 0) std::cerr << "\n";
  }

 private:
  std::string name_;
  std::uint64_t total_;
  bool enabled_ = false;
  int last_ = -1;
};

// An external data file of a local model, read from beside it.
struct LocalDataFile {
  std::string name;  // normalized, as the model's tensors name it
  std::string path;
  std::uint64_t size = 0;
  std::string sha256;
};

// The external data files the model at `path` names (ExternalDataLocations), found beside it with
// the command line's own rules: a location the checker refuses, or one that does not resolve to a
// regular file inside the model's folder, is not sent (the server's check then names it). Empty
// for a model without external data. `*error` is set when a file cannot be read.
std::vector<LocalDataFile> LocalDataFiles(const std::string& path, std::string* error,
                                          bool hash = true) {
  std::vector<LocalDataFile> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  std::vector<std::string> locations;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto len = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      locations = ExternalDataLocations(std::string_view(static_cast<const char*>(map), len),
                                        isolate::kMaxDataFiles + 1);
      ::munmap(map, len);
    }
  }
  ::close(fd);
  if (locations.empty()) return out;
  std::error_code ec;
  const fs::path dir = fs::canonical(fs::absolute(path).parent_path(), ec);
  if (ec) return out;
  for (const auto& location : locations) {
    if (!ExternalDataNameProblem(location).empty()) continue;
    LocalDataFile f;
    f.name = NormalizeExternalDataName(location);
    const fs::path target = fs::canonical(dir / f.name, ec);
    if (ec || !fs::is_regular_file(target, ec)) continue;
    const fs::path rel = target.lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..") continue;
    f.path = target.string();
    if (!hash) {
      f.size = static_cast<std::uint64_t>(fs::file_size(target, ec));
      if (ec) {
        *error = f.path + ": cannot read its size";
        return {};
      }
      out.push_back(std::move(f));
      continue;
    }
    axqc::Sha256 hasher;
    std::ifstream in(f.path, std::ios::binary);
    std::string buf(kChunkBytes, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) break;
      hasher.Update(std::string_view(buf.data(), n));
      f.size += n;
    }
    if (in.bad()) {
      *error = f.path + ": read error";
      return {};
    }
    f.sha256 = hasher.HexDigest();
    out.push_back(std::move(f));
  }
  return out;
}

// The bundle hash of a model and its data files (isolate/data_files.h), the key the server uses.
std::string BundleSha256(const std::string& graph_sha256, const std::vector<LocalDataFile>& files) {
  std::vector<const LocalDataFile*> sorted;
  for (const auto& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const LocalDataFile* x, const LocalDataFile* y) { return x->name < y->name; });
  std::string text = "axqc-external-data/1\n" + graph_sha256 + "\n";
  for (const LocalDataFile* f : sorted) {
    text += f->name + "\n" + std::to_string(f->size) + "\n" + f->sha256 + "\n";
  }
  return axqc::Sha256Hex(text);
}

// A ranged upload (UploadMetadata.ranged_data) of a model with external data files: the graph file
// and each data file's size first, then the byte ranges the server names in
// CheckResponse.external_ranges, until it answers with a report (at most kRangedRounds uploads).
constexpr int kRangedRounds = 4;

ModelResult CheckRanged(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                        const std::string& path, std::uint64_t size,
                        const std::string& graph_sha256, const std::vector<LocalDataFile>& files) {
  ModelResult m;
  m.file = path;
  m.exit_code = kExitError;
  const v1::CheckOptions options = ProtoOptions(a);
  const std::string name = fs::path(path).filename().string();
  std::vector<std::vector<ExternalRange> > ranges(files.size());
  v1::CheckResponse resp;
  std::string request_id;
  for (int round = 0; round < kRangedRounds; ++round) {
    std::uint64_t total = size;
    for (const auto& r : ranges) {
      for (const auto& b : r) total += b.length;
    }
    grpc::Status s = c.Call(
        [&](grpc::ClientContext* ctx) {
          resp.Clear();
          auto writer = stub.Upload(ctx, &resp);
          v1::UploadRequest first;
          auto* md = first.mutable_metadata();
          FillUploadMetadata(a, path, options, size, graph_sha256, md);
          md->set_ranged_data(true);
          for (std::size_t i = 0; i < files.size(); ++i) {
            auto* d = md->add_data_files();
            d->set_name(files[i].name);
            d->set_size_bytes(files[i].size);
            for (const auto& r : ranges[i]) {
              auto* pr = d->add_ranges();
              pr->set_offset(r.offset);
              pr->set_length(r.length);
            }
          }
          bool ok = writer->Write(first);
          Progress progress(a.progress, name, total);
          std::uint64_t sent = 0;
          std::string buf(kChunkBytes, '\0');
          {
            std::ifstream in(path, std::ios::binary);
            while (ok && in) {
              in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
              const auto n = static_cast<std::size_t>(in.gcount());
              if (n == 0) break;
              v1::UploadRequest msg;
              msg.set_chunk(buf.data(), n);
              ok = writer->Write(msg);
              sent += n;
              progress.Update(sent);
            }
          }
          for (std::size_t i = 0; ok && i < files.size(); ++i) {
            if (ranges[i].empty()) continue;
            std::ifstream in(files[i].path, std::ios::binary);
            for (const auto& r : ranges[i]) {
              in.seekg(static_cast<std::streamoff>(r.offset));
              std::uint64_t left = r.length;
              while (ok && left > 0) {
                const auto want =
                    static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
                in.read(buf.data(), static_cast<std::streamsize>(want));
                if (static_cast<std::size_t>(in.gcount()) != want) {
                  ctx->TryCancel();
                  ok = false;
                  break;
                }
                v1::UploadRequest msg;
                msg.mutable_data_chunk()->set_file(static_cast<std::uint32_t>(i));
                msg.mutable_data_chunk()->set_data(buf.data(), want);
                ok = writer->Write(msg);
                left -= want;
                sent += want;
                progress.Update(sent);
              }
            }
          }
          progress.Done();
          if (ok) writer->WritesDone();
          return writer->Finish();
        },
        &request_id);
    if (!s.ok()) {
      TakeError(c, s, request_id, &m);
      return m;
    }
    if (resp.external_ranges_size() == 0) {
      TakeReport(resp, &m, true);
      return m;
    }
    // The server names the ranges its check reads: take them (only of files sent, inside them).
    std::vector<std::vector<ExternalRange> > next(files.size());
    for (const auto& fr : resp.external_ranges()) {
      std::size_t i = 0;
      while (i < files.size() && files[i].name != fr.name()) ++i;
      std::vector<ExternalRange> r;
      for (const auto& b : fr.ranges()) r.push_back({b.offset(), b.length()});
      const std::string why = i < files.size() ? RangesProblem(r, files[i].size) : "unknown file";
      if (!why.empty()) {
        m.error = path + ": the server asked for ranges of data file '" + fr.name().substr(0, 200) +
                  "' that are not valid (" + why + ")";
        return m;
      }
      next[i] = std::move(r);
    }
    if (next == ranges) break;  // asked again for what was sent: no progress
    ranges = std::move(next);
  }
  m.error = path +
            ": the server kept asking for other byte ranges of the external data files "
            "(a ranged upload did not converge); try --full-upload";
  return m;
}

// A local file: GetReport by hash, Upload on NOT_FOUND. A model with external data files is
// looked up by its bundle hash and uploaded with its data files (UploadMetadata.data_files).
ModelResult CheckLocalFile(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                           const std::string& path) {
  ModelResult m;
  m.file = path;
  m.exit_code = kExitError;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    m.error = path + ": not a regular file";
    return m;
  }
  // Hash while reading (models can be large: never hold the file in memory).
  axqc::Sha256 hasher;
  std::uint64_t size = 0;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      m.error = path + ": cannot open the file";
      return m;
    }
    std::string buf(kChunkBytes, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) break;
      hasher.Update(std::string_view(buf.data(), n));
      size += n;
    }
    if (in.bad()) {
      m.error = path + ": read error";
      return m;
    }
  }
  const std::string graph_sha256 = hasher.HexDigest();
  std::string data_error;
  if (!a.full_upload) {
    // External data: only the bytes the check reads are sent (a ranged upload).
    const std::vector<LocalDataFile> ranged = LocalDataFiles(path, &data_error, false);
    if (!data_error.empty()) {
      m.error = data_error;
      return m;
    }
    if (!ranged.empty()) return CheckRanged(c, stub, a, path, size, graph_sha256, ranged);
  }
  const std::vector<LocalDataFile> data_files = LocalDataFiles(path, &data_error);
  if (!data_error.empty()) {
    m.error = data_error;
    return m;
  }
  const std::string sha256 =
      data_files.empty() ? graph_sha256 : BundleSha256(graph_sha256, data_files);
  std::uint64_t total = size;
  for (const auto& f : data_files) total += f.size;
  const v1::CheckOptions options = ProtoOptions(a);

  // Hash first: the lookup is this check (recorded with its labels when the server knows the
  // model); NOT_FOUND means "upload it".
  v1::GetReportRequest get;
  get.set_sha256(sha256);
  *get.mutable_options() = options;
  get.set_name(path);
  get.set_record_check(a.record);
  for (const auto& [k, v] : a.labels) (*get.mutable_labels())[k] = v;
  v1::CheckResponse resp;
  std::string request_id;
  grpc::Status s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return stub.GetReport(ctx, get, &resp);
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m, a.record);
    return m;
  }
  if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
    TakeError(c, s, request_id, &m);
    return m;
  }

  // Unknown to the server: stream the file.
  const std::string name = fs::path(path).filename().string();
  s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        auto writer = stub.Upload(ctx, &resp);
        v1::UploadRequest first;
        auto* md = first.mutable_metadata();
        FillUploadMetadata(a, path, options, size, graph_sha256, md);
        for (const auto& f : data_files) {
          auto* d = md->add_data_files();
          d->set_name(f.name);
          d->set_size_bytes(f.size);
          d->set_sha256(f.sha256);
        }
        bool ok = writer->Write(first);
        Progress progress(a.progress, name, total);
        std::uint64_t sent = 0;
        std::string buf(kChunkBytes, '\0');
        // The model, then each data file (index -1: the model).
        for (int file = -1; ok && file < static_cast<int>(data_files.size()); ++file) {
          std::ifstream in(file < 0 ? path : data_files[static_cast<std::size_t>(file)].path,
                           std::ios::binary);
          while (ok && in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            const auto n = static_cast<std::size_t>(in.gcount());
            if (n == 0) break;
            v1::UploadRequest msg;
            if (file < 0) {
              msg.set_chunk(buf.data(), n);
            } else {
              msg.mutable_data_chunk()->set_file(static_cast<std::uint32_t>(file));
              msg.mutable_data_chunk()->set_data(buf.data(), n);
            }
            ok = writer->Write(msg);
            sent += n;
            progress.Update(sent);
          }
        }
        progress.Done();
        if (ok) writer->WritesDone();
        return writer->Finish();
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m, true);
  } else {
    TakeError(c, s, request_id, &m);
  }
  return m;
}

// A server-side reference: Check with path or url.
ModelResult CheckRef(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                     const std::string& ref) {
  ModelResult m;
  m.file = ref;
  v1::CheckRequest req;
  const bool url = ref.rfind("http://", 0) == 0 || ref.rfind("https://", 0) == 0;
  if (url) {
    req.set_url(ref);
  } else {
    req.set_path(ref.rfind("file://", 0) == 0 ? ref.substr(7) : ref);
  }
  req.set_name(ref);
  for (const auto& [k, v] : a.labels) (*req.mutable_labels())[k] = v;
  *req.mutable_options() = ProtoOptions(a);
  v1::CheckResponse resp;
  std::string request_id;
  const grpc::Status s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return stub.Check(ctx, req, &resp);
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m, true);
  } else {
    TakeError(c, s, request_id, &m);
  }
  return m;
}

// Sends the gate outcome of every recorded check to the server (RecordGate), which adds it to
// the check's history row. Best effort: the run's verdict does not depend on it; a server that
// predates RecordGate (UNIMPLEMENTED) is left alone.
void RecordGateOutcomes(const Connection& c, v1::Checker::Stub& stub,
                        const std::vector<ModelResult>& results) {
  for (const auto& m : results) {
    if (!m.ok || !m.recorded) continue;
    const GateResult& g = m.report.gate;
    v1::RecordGateRequest req;
    req.set_request_id(m.request_id);
    req.set_sha256(m.report.model.sha256);
    auto* o = req.mutable_outcome();
    o->set_passed(g.verdict != GateVerdict::kFail);
    o->set_counted_errors(g.counted.errors);
    o->set_counted_warnings(g.counted.warnings);
    o->set_waived_errors(g.waived.errors);
    o->set_waived_warnings(g.waived.warnings);
    o->set_baselined_errors(g.baselined.errors);
    o->set_baselined_warnings(g.baselined.warnings);
    v1::RecordGateResponse resp;
    const grpc::Status s = c.Call([&](grpc::ClientContext* ctx) {
      resp.Clear();
      return stub.RecordGate(ctx, req, &resp);
    });
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) return;
    if (!s.ok()) {
      std::cerr << "axqc: note: the server did not record the gate outcome of " << m.file << ": "
                << c.Describe(s) << "\n";
    }
  }
}

}  // namespace

int RunRemoteCheck(const CheckArgs& args, GateSetup& gate) {
  auto c = Connection::Open(args.remote, 4, 600);
  if (c == nullptr) return kExitError;
  std::vector<ModelResult> results;
  std::string stopped;  // why the server cannot be used; the remaining models are not tried
  auto run = [&](const std::string& what, bool ref) {
    if (!stopped.empty()) {
      ModelResult m;
      m.file = what;
      m.exit_code = kExitNoVerdict;
      m.error_kind = "no verdict from the server";
      m.error = what + ": not checked: " + stopped;
      results.push_back(std::move(m));
      return;
    }
    results.push_back(ref ? CheckRef(*c, c->stub(), args, what)
                          : CheckLocalFile(*c, c->stub(), args, what));
    if (results.back().stop) {
      stopped = "the server failed for " + what + " before (see above)";
    }
  };
  for (const auto& path : args.models) run(path, false);
  for (const auto& ref : args.refs) run(ref, true);
  // Waivers and the baseline apply here, to the server's reports (its cache stays per model);
  // the outcome goes back to the server's history.
  if (!ApplyGateToResults(args, gate, results)) return kExitError;
  if (gate.policy.active && stopped.empty()) RecordGateOutcomes(*c, c->stub(), results);
  ApplyTargetExitCodes(args, results);
  ApplyNotApplicableExitCodes(args, results);
  return EmitResults(args, results);
}

}  // namespace axqc::cli
