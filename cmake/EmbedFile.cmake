# cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DNAMESPACE=ns -DFUNCTION=name -P EmbedFile.cmake
# Writes a C++ file defining `std::string_view ns::name()` that returns INPUT's bytes, so a
# program serves a file of the source tree without reading it at run time.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
# Break the initialiser into lines of 16 bytes (each byte is 7 characters: '\xNN',).
string(REGEX REPLACE "(('\\\\x[0-9a-f][0-9a-f]',){16})" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedFile.cmake; do not edit.\n"
  "#include <string_view>\n\n"
  "namespace ${NAMESPACE} {\n"
  "namespace {\n"
  "constexpr char kBytes[] = {\n  ${bytes}'\\0'};\n"
  "}  // namespace\n\n"
  "std::string_view ${FUNCTION}() { return {kBytes, ${size}}; }\n\n"
  "}  // namespace ${NAMESPACE}\n")
# Rewritten only when it changed, so that an unchanged page does not rebuild the tool.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
