# Writes OUT, a header holding the report page's template files as raw string literals
# (kReportHtml, kReportCss, kReportJs), so the inferbench binary carries them: a report is one
# self-contained file and the tool needs nothing installed beside it. Run by the build
# (src/CMakeLists.txt) whenever an asset changes: cmake -DDIR=... -DOUT=... -P embed_assets.cmake
set(names kReportHtml kReportCss kReportJs)
set(files report.html report.css report.js)
set(text "// Generated from src/report/assets/ by src/report/embed_assets.cmake. Do not edit.\n")
string(APPEND text "#pragma once\n#include <string_view>\nnamespace ib::report {\n")
foreach(name file IN ZIP_LISTS names files)
  file(READ "${DIR}/${file}" content)
  string(FIND "${content}" ")ibasset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${DIR}/${file} contains the raw-string delimiter )ibasset\"")
  endif()
  string(APPEND text "inline constexpr std::string_view ${name} = R\"ibasset(${content})ibasset\";\n")
endforeach()
string(APPEND text "}  // namespace ib::report\n")
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
