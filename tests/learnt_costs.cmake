# A first call on a machine measures nothing up front: it runs in a fresh measurement folder
# DIR, and afterwards the folder holds the pass costs the call learnt from its own passes
# (passes of one token among them) and no measured curve.
file(REMOVE_RECURSE "${DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env SCHEMAWEAVER_CACHE=${DIR}
                        ${CMD} call -m ${MODEL} --tools ${TOOLS} -p "What is the weather like in Paris?"
                RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT code EQUAL 0 OR NOT out MATCHES "\"name\": \"get_weather\"")
  message(FATAL_ERROR "the call failed (${code}):\n${out}\n${err}")
endif()
file(GLOB kept "${DIR}/pass-costs/*.json")
list(LENGTH kept count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one file of learnt pass costs under ${DIR}/pass-costs, found ${count}")
endif()
file(READ "${kept}" json)
string(JSON one_token_passes LENGTH "${json}" ms_by_width 0)
string(JSON first ERROR_VARIABLE no_pass GET "${json}" ms_by_width 0 0)
if(one_token_passes LESS 1 OR no_pass OR NOT first GREATER 0)
  message(FATAL_ERROR "no pass of one token was learnt:\n${json}")
endif()
file(GLOB measured "${DIR}/costs/*")
if(measured)
  message(FATAL_ERROR "a curve was measured up front: ${measured}")
endif()
message(STATUS "learnt ${one_token_passes} passes of one token, the first ${first} ms")
