# Installs the qkv build tree into a scratch prefix, then configures, builds and runs
# tests/consumer against it with find_package(qkv), as a user's project would.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${QKV_BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build
                  -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
                  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
                  -DQKV_EXPECT_MPI=${QKV_HAVE_MPI}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/qkv_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "consumer said: ${out}")
if(rc OR NOT out MATCHES "loss ok")
  message(FATAL_ERROR "the consumer failed: ${rc}")
endif()

# The translation example on the compatibility model: the beam-4 translations of the
# earlier release, line for line.
execute_process(COMMAND ${WORK_DIR}/build/qkv_translate_example ${COMPAT_DIR}/models/transformer
                INPUT_FILE ${COMPAT_DIR}/input.en RESULT_VARIABLE rc OUTPUT_VARIABLE out)
file(READ ${COMPAT_DIR}/expected/transformer.beam4 expected)
if(rc OR NOT out STREQUAL expected)
  message(FATAL_ERROR "the translation example failed (${rc}) or differs:\n${out}")
endif()
