// axqc-fix-fixtures DIR: writes the models of tests/support/fix_models.h into DIR, one per
// rewrite, and DIR/manifest.tsv with one line per model: file, the rewrite that must apply to
// it, and the extra arguments of `axqc fix` (tests/ort/fix_ort_test.sh reads it).
// axqc-fix-fixtures --modelled DIR: writes the modelled exports of tests/support/exporter_models.h
// (tests/data/modelled_exports/ holds this output).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "exporter_models.h"
#include "fix_models.h"

namespace fm = axqc::test::fixmodels;

namespace ex = axqc::test::exporters;

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--modelled") {
    const std::filesystem::path out = argv[2];
    std::filesystem::create_directories(out);
    for (const auto& [name, model] : ex::ModelledExports()) {
      fm::ModelBuilder::SaveModel(model, (out / (name + ".onnx")).string());
    }
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: axqc-fix-fixtures DIR | --modelled DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  std::ofstream manifest(dir / "manifest.tsv");
  auto save = [&](const std::string& name, const onnx::ModelProto& m, const std::string& rewrite,
                  const std::string& args = "") {
    fm::ModelBuilder::SaveModel(m, (dir / (name + ".onnx")).string());
    manifest << name << ".onnx\t" << rewrite << "\t" << args << "\n";
  };
  save("constant_forms", fm::ConstantForms(), "constant-to-initializer");
  save("identity_chains", fm::IdentityChains(), "identity-of-initializer");
  save("dynamo_casts", fm::DynamoCasts(), "cast-of-initializer");
  save("contrib_qdq", fm::ContribQdq(), "contrib-qdq-to-onnx");
  save("contrib_qdq_op17", fm::ContribQdq(17), "contrib-qdq-to-onnx");
  save("int4_in_int8", fm::Int4InInt8(), "int4-weight-storage", "--apply int4-weight-storage");
  save("static_shapes", fm::StaticShapes(), "fold-shape");
  save("torch_shape_arithmetic", fm::TorchShapeArithmetic(), "fold-shape");
  save("torch_shape_arithmetic_dynamic", fm::TorchShapeArithmetic("batch"), "fold-shape");
  save("dynamic_reshapes", fm::DynamicReshapes(), "reshape-copy-dims");
  save("no_value_info", fm::NoValueInfo(), "value-info");
  save("omitted_zero_points", fm::OmittedZeroPoints(), "explicit-zero-point");
  save("negative_axis", fm::NegativeAxis(), "positive-axis");
  save("direct_requantize", fm::DirectRequantize(), "requantize-identity");
  save("local_functions", fm::LocalFunctions(), "inline-functions");
  save("high_ir", fm::HighIr(), "ir-version", "--ir-version 8");
  std::filesystem::create_directories(dir / "external");
  fm::ExternalWeights().SaveWithExternalData((dir / "external" / "external_weights.onnx").string(),
                                             "weights.bin");
  manifest << "external/external_weights.onnx\tvalue-info\t\n";
  manifest.flush();
  return manifest ? 0 : 1;
}
