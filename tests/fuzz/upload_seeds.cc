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
        {"upload_data_" + stem, axqc::fuzz::EncodeUploadWithData(model, data)},
        {"upload_ranged_" + stem,
         axqc::fuzz::EncodeRangedUpload(model, data, {{0, 7}, {20, 13}, {data.size() - 4, 4}})},
        {"tar_" + stem, std::string("T\x07") + axqc::fuzz::TarMember("m/", "", '5') +
                            axqc::fuzz::TarMember("m/model.onnx", model) +
                            axqc::fuzz::TarMember("m/weights.bin", data) +
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
