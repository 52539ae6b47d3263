# ctest driver: runs EXE with ARGS (|-separated) and requires exit status STATUS and output
# (stdout + stderr) matching EXPECT. Also fails on "terminate called" or a signal, so
# a bench binary that aborts on a bad argument (an uncaught exception) is caught.
#   cmake -DEXE=... -DARGS=a|b -DSTATUS=2 -DEXPECT=regex -P args.cmake
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc STREQUAL "${STATUS}")
  message(FATAL_ERROR "${EXE} ${ARGS}: exit status '${rc}', expected ${STATUS}; output:\n${out}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${EXE} ${ARGS}: output does not match '${EXPECT}':\n${out}")
endif()
if(out MATCHES "terminate called|Aborted")
  message(FATAL_ERROR "${EXE} ${ARGS}: aborted:\n${out}")
endif()
