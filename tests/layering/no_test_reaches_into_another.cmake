# Fails when a test reaches into another module's test directory, by include path in a
# CMakeLists.txt or by a relative #include in a test source: what two modules' tests share
# belongs in tests/support (qkv_test_support), where the layer contract covers it.
# Run: cmake -DSOURCE_DIR=<repo> -P no_test_reaches_into_another.cmake
file(GLOB_RECURSE lists ${SOURCE_DIR}/src/*/CMakeLists.txt ${SOURCE_DIR}/tools/*/CMakeLists.txt
     ${SOURCE_DIR}/python/CMakeLists.txt ${SOURCE_DIR}/bench/CMakeLists.txt)
file(GLOB_RECURSE sources ${SOURCE_DIR}/src/*/tests/*.cpp ${SOURCE_DIR}/src/*/tests/*.h
     ${SOURCE_DIR}/tools/*/tests/*.cpp ${SOURCE_DIR}/tools/*/tests/*.h)
set(found "")
foreach(f IN LISTS lists)
  file(STRINGS ${f} hits REGEX "\\.\\./[a-z_]+/tests")
  foreach(h IN LISTS hits)
    string(APPEND found "\n  ${f}: ${h}")
  endforeach()
endforeach()
foreach(f IN LISTS sources)
  file(STRINGS ${f} hits REGEX "#include \"(\\.\\./)+([a-z_]+/)*tests/")
  foreach(h IN LISTS hits)
    string(APPEND found "\n  ${f}: ${h}")
  endforeach()
endforeach()
list(LENGTH lists n_lists)
list(LENGTH sources n_sources)
if(n_lists LESS 10 OR n_sources LESS 50)
  message(FATAL_ERROR "found only ${n_lists} CMakeLists.txt and ${n_sources} test sources "
                      "under ${SOURCE_DIR}: wrong SOURCE_DIR?")
endif()
if(found)
  message(FATAL_ERROR "tests reach into another module's test directory (move the helper to "
                      "tests/support):${found}")
endif()
message(STATUS "checked ${n_lists} CMakeLists.txt and ${n_sources} test sources: no test "
               "reaches into another's directory")
