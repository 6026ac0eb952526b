# Writes OUT: a header defining kOpenApiJson with the contents of IN (docs/openapi.json).
file(READ "${IN}" content)
string(FIND "${content}" ")axqc_openapi\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter")
endif()
file(WRITE "${OUT}.tmp" "// Generated from docs/openapi.json by server/http/embed_openapi.cmake.\n#pragma once\ninline constexpr char kOpenApiJson[] = R\"axqc_openapi(${content})axqc_openapi\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
