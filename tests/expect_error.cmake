# Runs CMD with ARGS ('|'-separated); passes when it exits with 1 (a handled error) and its
# output matches REGEX.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${CMD} ${args} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 1)
  message(FATAL_ERROR "expected exit code 1, got '${code}'\n${out}\n${err}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${out}\n${err}")
endif()
