# Runs CMD with ARGS ('|'-separated); passes when it exits with EXIT (1 unless given: a handled
# error; CLI11's own codes for a command line it refuses) and its output matches REGEX, and (if
# ABSENT is given) left no file ABSENT or ABSENT.partial behind.
string(REPLACE "|" ";" args "${ARGS}")
if(NOT DEFINED EXIT)
  set(EXIT 1)
endif()
execute_process(COMMAND ${CMD} ${args} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL EXIT)
  message(FATAL_ERROR "expected exit code ${EXIT}, got '${code}'\n${out}\n${err}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${out}\n${err}")
endif()
if(ABSENT AND (EXISTS "${ABSENT}" OR EXISTS "${ABSENT}.partial"))
  message(FATAL_ERROR "the failed command left '${ABSENT}' behind")
endif()
