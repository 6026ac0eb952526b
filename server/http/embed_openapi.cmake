# Writes OUT: a header defining NAME (default kOpenApiJson) with the contents of IN (docs/openapi.json,
# server/http/dashboard.js).
if(NOT DEFINED NAME)
  set(NAME kOpenApiJson)
endif()
file(READ "${IN}" content)
string(FIND "${content}" ")axqc_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter")
endif()
get_filename_component(source "${IN}" NAME)
file(WRITE "${OUT}.tmp" "// Generated from ${source} by server/http/embed_openapi.cmake.\n#pragma once\ninline constexpr char ${NAME}[] = R\"axqc_embed(${content})axqc_embed\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
