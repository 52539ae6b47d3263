# qkv_module(NAME SOURCES ... [DEPS ...] [PRIVATE_DEPS ...] [FILE_BY_FILE])
# Declares the library qkv_<NAME> for src/<NAME>: public headers under
# src/<NAME>/include/qkv/<NAME>/, linked only to the modules below it. FILE_BY_FILE keeps
# it out of QKV_UNITY_BUILD's batches (the Highway kernels).
function(qkv_module name)
  cmake_parse_arguments(ARG "FILE_BY_FILE" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target qkv_${name})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(qkv::${name} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_features(${target} PUBLIC cxx_std_20)
  qkv_warnings(${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  if(NOT ARG_FILE_BY_FILE)
    qkv_unity_build(${target})
  endif()
  install(TARGETS ${target} EXPORT qkvTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

function(qkv_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wno-missing-field-initializers)
  # GCC 12 at -O3 (the release preset) reports `"literal" + std::string(...)` as an
  # overlapping memcpy of 2^63 bytes: a known false positive (GCC bug 105329)
  # in libstdc++'s inlined operator+. Silenced for that compiler only.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(QKV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
    # GCC's flow analysis under AddressSanitizer (preset ci: -O1 + ASan) reports
    # -Wmaybe-uninitialized inside libstdc++'s <regex> (std::function in _State, seen in
    # tools/qkv/tests with GCC 12): a false positive the GCC manual warns sanitizers
    # cause. Still printed there, not fatal; every other build keeps it an error.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=[^ ]*address")
      target_compile_options(${target} PRIVATE -Wno-error=maybe-uninitialized)
    endif()
  endif()
endfunction()

# With QKV_UNITY_BUILD, compiles `target` in batches of sources (see the option).
function(qkv_unity_build target)
  if(QKV_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# qkv_test(NAME SOURCES ... LIBS ... [TIMEOUT seconds]): a GoogleTest executable
# registered with CTest; each of its tests may run TIMEOUT seconds (default 300).
function(qkv_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  qkv_warnings(${name})
  qkv_unoptimised_test_code(${name})
  qkv_test_precompiled_headers(${name})
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT})
endfunction()

# -O0 for a test or front-end target when QKV_UNOPTIMISED_TEST_CODE is on (see the
# option in CMakeLists.txt); after CMAKE_CXX_FLAGS' -O1 on the command line, so it wins.
function(qkv_unoptimised_test_code target)
  if(QKV_UNOPTIMISED_TEST_CODE)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# With QKV_TEST_PCH, every test executable reuses one precompiled header of GoogleTest and
# the standard headers most test files include, built once by qkv_test_pch with the
# tests' own flags (GCC only uses a .gch compiled with the same options; -Winvalid-pch,
# an error under QKV_WERROR, says so if they ever differ). Only system headers: a qkv
# header in it would let a test compile without including what it uses.
function(qkv_test_precompiled_headers target)
  if(NOT QKV_TEST_PCH)
    return()
  endif()
  if(NOT TARGET qkv_test_pch)
    # An executable like the tests (a library would be compiled -fPIC, the tests -fPIE,
    # and GCC refuses a header precompiled with the other).
    file(WRITE ${PROJECT_BINARY_DIR}/qkv_test_pch.cpp
         "// Compiled only to produce qkv_test_pch's precompiled header.\n")
    add_executable(qkv_test_pch ${PROJECT_BINARY_DIR}/qkv_test_pch.cpp)
    target_link_libraries(qkv_test_pch PRIVATE GTest::gtest GTest::gtest_main)
    target_compile_features(qkv_test_pch PRIVATE cxx_std_20)
    qkv_warnings(qkv_test_pch)
    qkv_unoptimised_test_code(qkv_test_pch)
    target_precompile_headers(qkv_test_pch PRIVATE
      <gtest/gtest.h> <algorithm> <cmath> <cstdint> <filesystem> <fstream> <functional>
      <limits> <map> <memory> <sstream> <string> <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM qkv_test_pch)
endfunction()
