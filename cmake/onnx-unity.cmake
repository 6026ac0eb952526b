# Injected into ONNX's own build by scripts/setup (CMAKE_PROJECT_onnx_INCLUDE) when it builds ONNX
# as a unity build: the operator schema files are compiled 16 to a translation unit, which halves
# the build on two cores. The generated protobuf sources define file-local tables with the same
# names, so the onnx_proto target stays a normal build. Runs once ONNX's targets exist.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL
  set_target_properties onnx_proto PROPERTIES UNITY_BUILD OFF)
