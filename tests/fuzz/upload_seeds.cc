// Writes seed inputs of fuzz_upload: each model file given becomes well-formed uploads with
// several chunk sizes, with and without the declared size and sha256, an upload with a data file,
// and an HTTP tar stream of the model and a data file.
//
//   upload_seeds OUT_DIR MODEL...
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "upload_fuzz_input.h"

namespace {

void Varint(std::string& out, std::uint64_t v) {
  do {
    std::uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v != 0);
}

// An upload of `model` with one data file "weights.bin" holding `data`: metadata (exact sizes,
// correct sha256), the model in one chunk, the data file in chunks of 64 bytes.
std::string UploadWithData(const std::string& model, const std::string& data) {
  std::string out;
  out.push_back(0);             // metadata
  out.push_back(1 | 4 | 0x40);  // exact size, correct sha256, data files
  Varint(out, 0);
  out.push_back(10);
  out += "model.onnx";
  out.push_back(1);  // one data file
  out.push_back(11);
  out += "weights.bin";
  out.push_back(0);  // exact size
  out.push_back(0);  // correct sha256
  out.push_back(1);  // chunk
  Varint(out, model.size());
  out += model;
  for (std::size_t off = 0; off < data.size(); off += 64) {
    const std::string part = data.substr(off, 64);
    out.push_back(static_cast<char>(0xF0));  // data chunk of file 0
    Varint(out, part.size());
    out += part;
  }
  out.push_back(4);
  return out;
}

std::string TarMember(const std::string& name, const std::string& bytes, char type = '0') {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  auto octal = [&](std::size_t at, std::size_t width, unsigned long long v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), v);
    h.replace(at, width - 1, buf);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, bytes.size());
  octal(136, 12, 0);
  h[156] = type;
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  std::string out = h + bytes;
  out.append((512 - bytes.size() % 512) % 512, '\0');
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: upload_seeds OUT_DIR MODEL...\n";
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path out_dir = argv[1];
  fs::create_directories(out_dir);
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const std::string model{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (model.empty() || model.size() > axqc::fuzz::kFuzzMaxModelBytes) continue;
    const std::string stem = fs::path(argv[i]).stem().string();
    struct Variant {
      std::size_t chunk;
      bool size;
      bool sha;
    };
    for (const Variant& v : {Variant{4096, true, true}, Variant{1000, false, true},
                             Variant{7, true, false}, Variant{model.size(), false, false}}) {
      const std::string name = "upload_" + stem + "_" + std::to_string(v.chunk) +
                               (v.size ? "_size" : "") + (v.sha ? "_sha" : "");
      std::ofstream out(out_dir / name, std::ios::binary | std::ios::trunc);
      const std::string bytes =
          axqc::fuzz::EncodeUpload(model, v.chunk, v.size, v.sha, stem + ".onnx");
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      ++written;
    }
    // With a data file, by Upload and as an HTTP tar stream.
    const std::string data = model.substr(0, std::min<std::size_t>(model.size(), 300));
    const std::pair<std::string, std::string> more[] = {
        {"upload_data_" + stem, UploadWithData(model, data)},
        {"tar_" + stem, std::string("T\x07") + TarMember("m/", "", '5') +
                            TarMember("m/model.onnx", model) + TarMember("m/weights.bin", data) +
                            std::string(1024, '\0')}};
    for (const auto& [name, bytes] : more) {
      std::ofstream out(out_dir / name, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      ++written;
    }
  }
  std::cout << written << " seeds\n";
  return 0;
}
