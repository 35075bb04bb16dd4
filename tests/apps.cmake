# The tests of the CLI and the server (included by CMakeLists.txt where the apps are built).
# The CLI on bad input: a clear message and a non-zero exit, never a crash.
set(CLI $<TARGET_FILE:schemaweaver-cli>)
set(DATA ${CMAKE_CURRENT_SOURCE_DIR}/data)
set(TOOLS ${PROJECT_SOURCE_DIR}/examples/weather_tools.json)
# Each case runs through a checker that demands exit code 1 (a handled error, not a crash)
# and the expected message. Arguments travel '|'-separated.
function(cli_error name regex)
  string(REPLACE ";" "|" args "${ARGN}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} -DCMD=${CLI} "-DARGS=${args}" "-DREGEX=${regex}"
           -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endfunction()
cli_error(missing_model "cannot open model file"
          call -m /nonexistent.gguf --tools ${TOOLS} -p hi)
cli_error(not_gguf "not a GGUF file" call -m ${TOOLS} --tools ${TOOLS} -p hi)
cli_error(corrupt_gguf "failed to load model" call -m ${DATA}/corrupt.gguf --tools ${TOOLS} -p hi)
cli_error(truncated_gguf "failed to load model"
          call -m ${CMAKE_CURRENT_BINARY_DIR}/truncated.gguf --tools ${TOOLS} -p hi)
# The streamed load reads tensors while computing: a truncated file must fail it before that.
cli_error(truncated_gguf_streamed "the file is truncated"
          call -m ${CMAKE_CURRENT_BINARY_DIR}/truncated.gguf --stream-weights --tools ${TOOLS} -p hi)
add_test(NAME cli.version COMMAND ${CLI} --version)
set_tests_properties(cli.version PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "^schemaweaver ${PROJECT_VERSION} \\(llama\\.cpp@[^ )]+\\)")
add_test(NAME cli.info_streamed COMMAND ${CLI} info -m ${SW_TEST_MODEL} --stream-weights)
set_tests_properties(cli.info_streamed PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "parameters: +134515008")
cli_error(malformed_tools "not valid JSON" call -m ${SW_TEST_MODEL} --tools ${DATA}/malformed.json -p hi)
# A conversation as OpenAI's messages (an earlier call and its result) reaches the model, which
# goes on to the next call; a message the parser refuses names its place in the file.
add_test(NAME cli.conversation COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS} --messages ${DATA}/conversation.json
         --mode jump-forward --print-prompt)
set_tests_properties(cli.conversation PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "assistant.<tool_call>.{.name.: .get_weather.*temperature.: 21.*name.: .get_time")
cli_error(conversation_bad_role "messages\\[0\\].role' is 'robot'" call -m ${SW_TEST_MODEL} --tools ${TOOLS}
          --messages ${DATA}/bad_role_messages.json)
# A structured output: the object alone on stdout, of the schema's keys and kinds.
add_test(NAME cli.schema_answer COMMAND ${CLI} call -m ${SW_TEST_MODEL} --schema ${DATA}/person_schema.json
         -p "Anna is 31 and lives in Rome. Describe her as JSON.")
set_tests_properties(cli.schema_answer PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "\\{\"name\": \"[^\"]*\", \"age\": [0-9]+, \"city\": \"(Paris|Berlin|Rome)\"\\}\n")
# A reply's tokens weighed: each with its log probability and two alternatives.
add_test(NAME cli.logprobs COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS} --tool-choice none -n 8
         -p "Say hello." --json --logprobs 2)
set_tests_properties(cli.logprobs PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "\"logprobs\":\\[\\{\"token\":\"[^\"]*\",\"logprob\":-[0-9.e-]+,\"top\":\\[\\[")
cli_error(logprobs_of_a_schema "an answer in a schema writes the tokens its grammar forces"
          call -m ${SW_TEST_MODEL} --schema ${DATA}/person_schema.json -p hi --logprobs 1)
cli_error(schema_in_free_mode "the free mode writes what the model chooses"
          call -m ${SW_TEST_MODEL} --schema ${DATA}/person_schema.json -p hi --mode free)
# A root that declares no properties (json_object): an object of any keys; one that admits only
# {} is refused.
add_test(NAME cli.schema_free_form COMMAND ${CLI} call -m ${SW_TEST_MODEL} --schema ${DATA}/free_form_schema.json
         -p "Give a person's name and age as JSON.")
set_tests_properties(cli.schema_free_form PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\\{\"[^\"]*\": [^\n]*\\}\n")
cli_error(schema_empty_object "its one value is \\{\\}"
          call -m ${SW_TEST_MODEL} --schema ${DATA}/empty_object_schema.json -p hi)
# A schema beside tools under auto: SmolLM2 answers this request in words, so the answer is the
# schema's object; under required the schema has no place.
add_test(NAME cli.schema_beside_tools COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS}
         --schema ${DATA}/person_schema.json --tool-choice auto -p "What is the weather in Paris?")
set_tests_properties(cli.schema_beside_tools PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "\\{\"name\": \"[^\"]*\", \"age\": [0-9]+, \"city\": \"(Paris|Berlin|Rome)\"\\}\n")
cli_error(schema_beside_tools_required "an answer schema is for tool_choice auto"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} --schema ${DATA}/person_schema.json -p hi)
cli_error(neither_tools_nor_schema "give the tools with --tools" call -m ${SW_TEST_MODEL} -p hi)
cli_error(unknown_type "unsupported type 'complex'"
          call -m ${SW_TEST_MODEL} --tools ${DATA}/unknown_type_tools.json -p hi)
cli_error(empty_tools "tool list is empty" call -m ${SW_TEST_MODEL} --tools ${DATA}/empty_tools.json -p hi)
cli_error(prompt_too_long "exceeds the context"
          call -m ${SW_TEST_MODEL} -c 256 --tools ${TOOLS} --messages ${DATA}/long_messages.json)
# A context narrower than llama.cpp's output rows per sequence once aborted in llama.cpp.
cli_error(tiny_context "exceeds the context" call -m ${SW_TEST_MODEL} -c 16 --tools ${TOOLS} -p hi)
# Option ranges are checked before anything loads (CLI11's ValidationError exits with 105).
function(cli_usage_error name regex)
  string(REPLACE ";" "|" args "${ARGN}")
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} -DCMD=${CLI} "-DARGS=${args}" "-DREGEX=${regex}" -DEXIT=105
           -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endfunction()
cli_usage_error(port_out_of_range "--port: Value 99999 not in range" serve -m ${SW_TEST_MODEL} --port 99999)
cli_usage_error(slots_out_of_range "--slots: Value 0 not in range" serve -m ${SW_TEST_MODEL} --slots 0)
cli_usage_error(negative_context "--ctx: Value -5 not in range 0 to"
                call -m ${SW_TEST_MODEL} -c -5 --tools ${TOOLS} -p hi)
cli_usage_error(negative_threads "--threads: Value -3 not in range" call -m ${SW_TEST_MODEL} -t -3 --tools ${TOOLS} -p hi)
cli_error(unknown_mode "unknown decoding mode" call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode magic)
cli_error(unknown_switch "unknown switch 'fast'"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode schemaweaver/fast)
cli_error(switch_for_serial_mode "is a switch of the schemaweaver mode"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode constrained/no-padding)
cli_error(list_in_free_mode "calls as a list are written under a grammar"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode free/list)
cli_error(unknown_tool "no tool is named 'get_date'"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --tool get_date)
cli_error(given_arguments_without_tool "need the tool they belong to"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --given-arguments city)
cli_error(given_arguments_serial "given arguments are a SchemaWeaver option"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode jump-forward --tool get_weather --given-arguments city)
cli_error(read_only_unknown_tool "--read-only: no tool is named 'x'"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --read-only x)

# A truncated copy of the default model, made at test time (the model is not in the repo).
add_test(NAME cli.make_truncated_file COMMAND sh -c "head -c 2000000 '${SW_TEST_MODEL}' > '${CMAKE_CURRENT_BINARY_DIR}/truncated.gguf'")
set_tests_properties(cli.make_truncated_file PROPERTIES FIXTURES_SETUP truncated LABELS cli)
set_tests_properties(cli.truncated_gguf cli.truncated_gguf_streamed PROPERTIES FIXTURES_REQUIRED truncated)

# The happy path through the CLI: a real call in the default mode (SchemaWeaver), and a
# provisional call for a tool marked read-only.
add_test(NAME cli.call_provisional COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS} --read-only get_weather
         -p "What is the weather like in Paris?")
set_tests_properties(cli.call_provisional PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "provisional call 0")
add_test(NAME cli.call_weather COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS}
         -p "What is the weather like in Paris?")
set_tests_properties(cli.call_weather PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\"name\": \"get_weather\"")

# SchemaWeaver's plan on another machine's pass costs (--pass-costs): where every token costs its
# share the values go serially, where a wide pass costs little more than a narrow one in
# branches (two required arguments); a table that is none is refused by name. Then a run's
# passes priced with a table (bench/replay.py).
set(TRAFFIC call -m ${SW_TEST_MODEL} --tools ${PROJECT_SOURCE_DIR}/examples/traffic_tools.json --json
    -p "How bad is the traffic from Oakland to San Jose?")
add_test(NAME cli.plan_serial COMMAND ${CLI} ${TRAFFIC} --pass-costs ${DATA}/pass_costs_compute_bound.json)
set_tests_properties(cli.plan_serial PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\"plan\": ?\"serial\"")
add_test(NAME cli.plan_branches COMMAND ${CLI} ${TRAFFIC} --pass-costs ${DATA}/pass_costs_memory_bound.json)
set_tests_properties(cli.plan_branches PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\"plan\": ?\"branches\"")
cli_error(pass_costs_not_a_table "a pass-cost table is a list of ms"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --pass-costs ${TOOLS})
cli_error(pass_costs_not_positive "a time that is not positive"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --pass-costs ${DATA}/pass_costs_negative.json)
cli_error(pass_costs_row_negative "the cost of a kept row of logits cannot be negative"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --pass-costs ${DATA}/pass_costs_negative_row.json)
add_test(NAME cli.replay_prices_a_run COMMAND sh -c
         "${CLI} bfcl -m ${SW_TEST_MODEL} --data ${SW_TEST_BFCL} --categories simple_python --sample 2 --warmup 0 \
            --modes jump-forward,schemaweaver --out ${CMAKE_CURRENT_BINARY_DIR}/replay.jsonl > /dev/null && \
          python3 ${PROJECT_SOURCE_DIR}/bench/replay.py price ${CMAKE_CURRENT_BINARY_DIR}/replay.jsonl \
            --costs ${DATA}/pass_costs_compute_bound.json")
set_tests_properties(cli.replay_prices_a_run PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "\\| schemaweaver \\| 2 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")

# The pass-cost curve on the command line, and a BFCL run that resumes where it stopped.
# The pass costs a first call learns from its own passes, with nothing measured up front.
add_test(NAME cli.learnt_pass_costs COMMAND ${CMAKE_COMMAND} -DCMD=${CLI} -DMODEL=${SW_TEST_MODEL} -DTOOLS=${TOOLS}
         -DDIR=${CMAKE_CURRENT_BINARY_DIR}/learnt-costs -P ${CMAKE_CURRENT_SOURCE_DIR}/learnt_costs.cmake)
set_tests_properties(cli.learnt_pass_costs PROPERTIES LABELS cli)
add_test(NAME cli.costs COMMAND ${CLI} costs -m ${SW_TEST_MODEL} -n 2 --rounds 1)
set_tests_properties(cli.costs PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "\\| 2 \\| [0-9.]+ \\| [0-9.]+x \\| [0-9.]+ \\|.*each kept row of logits beyond the first adds [0-9.]+ ms")
set(BFCL_RUN bfcl -m ${SW_TEST_MODEL} --data ${SW_TEST_BFCL} --categories simple_python --sample 2 --warmup 0
    --modes constrained,speculative --out ${CMAKE_CURRENT_BINARY_DIR}/resume.jsonl)
add_test(NAME cli.bfcl_first_run COMMAND ${CLI} ${BFCL_RUN})
set_tests_properties(cli.bfcl_first_run PROPERTIES LABELS cli FIXTURES_SETUP bfcl_run)
add_test(NAME cli.bfcl_resumes COMMAND ${CLI} ${BFCL_RUN} --resume)
set_tests_properties(cli.bfcl_resumes PROPERTIES LABELS cli FIXTURES_REQUIRED bfcl_run
                     PASS_REGULAR_EXPRESSION "resuming: 2 of 2 cases already done.*\\| speculative \\| [0-9]+/2")
cli_error(draft_flag_without_model "needs --draft-model"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode speculative/draft-model)
cli_error(draft_model_for_other_mode "an option of the speculative mode"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --mode constrained --draft-model ${SW_TEST_MODEL})
cli_error(resume_without_out "--resume needs --out"
          bfcl -m ${SW_TEST_MODEL} --data ${SW_TEST_BFCL} --sample 2 --resume)

# Packing: a model repacked under a budget by measured importance runs a real call; bad input
# gives a clear error and leaves no output file behind. The calibration text is a Debian
# license text (base-files).
set(CALIBRATION /usr/share/common-licenses/GPL-3)
set(PACKED ${CMAKE_CURRENT_BINARY_DIR}/packed.gguf)
# (The calibration as Pack.PackedModelKeepsToItsBudgetAndStaysClose's: the output's sensitivity,
# measured once, serves both.)
add_test(NAME cli.pack COMMAND ${CLI} pack -m ${SW_TEST_MODEL} --calibration ${CALIBRATION} --tokens 128 --bpw 4.8
         --sensitivity-tokens 8 -o ${PACKED})
# Its progress on stderr (each stage as it starts and ends), then the allocation on stdout.
set_tests_properties(cli.pack PROPERTIES LABELS cli FIXTURES_SETUP packed
                     PASS_REGULAR_EXPRESSION
                     "calibration: [0-9]+ of [0-9]+.*choices: [0-9]+ of [0-9]+.*writing: 1 of 1.*\\| 0 \\| q4_1 \\|.*4\\.[0-9]+ bits per weight")
# A model a test wrote (fixture `fixture`) still makes the weather call.
function(cli_written_model_calls name model fixture)
  add_test(NAME cli.${name} COMMAND ${CLI} call -m ${model} --tools ${TOOLS} -p "What is the weather like in Paris?")
  set_tests_properties(cli.${name} PROPERTIES LABELS cli FIXTURES_REQUIRED ${fixture}
                       PASS_REGULAR_EXPRESSION "\"name\": \"get_weather\"")
endfunction()
cli_written_model_calls(packed_model_calls ${PACKED} packed)
# A command that writes a model (pack, shape) and fails: a clear error and no file left behind.
function(cli_writer_error command name regex)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${command}_${name}.gguf)
  string(REPLACE ";" "|" args "${command};-o;${out};${ARGN}")
  add_test(NAME cli.${command}_${name} COMMAND ${CMAKE_COMMAND} -DCMD=${CLI} "-DARGS=${args}" "-DREGEX=${regex}"
           -DABSENT=${out} -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_error.cmake)
  set_tests_properties(cli.${command}_${name} PROPERTIES LABELS cli)
endfunction()
cli_writer_error(pack missing_model "cannot read '/nonexistent.gguf' as a GGUF file"
               -m /nonexistent.gguf --calibration ${CALIBRATION} --bpw 4)
cli_writer_error(pack truncated_model "does not lie within the file|cannot read '.*truncated.gguf' as a GGUF file|failed to load model"
               -m ${CMAKE_CURRENT_BINARY_DIR}/truncated.gguf --calibration ${CALIBRATION} --bpw 8)
set_tests_properties(cli.pack_truncated_model PROPERTIES FIXTURES_REQUIRED truncated)
cli_writer_error(pack empty_calibration "calibration text '.*empty.txt' is empty"
               -m ${SW_TEST_MODEL} --calibration ${DATA}/empty.txt --bpw 4)
cli_writer_error(pack budget_too_small "below the smallest packing"
               -m ${SW_TEST_MODEL} --calibration ${CALIBRATION} --bpw 2)
cli_writer_error(pack budget_and_uniform "give one budget: bytes .* or a uniform type"
               -m ${SW_TEST_MODEL} --calibration ${CALIBRATION} --bpw 4 --uniform Q4_0)
# (A time budget no packing meets is refused in cli.pack_for_speed, below, which reads the fastest
# packing from that refusal.)
cli_writer_error(pack unknown_type "unknown quantization type 'Q9'"
               -m ${SW_TEST_MODEL} --calibration ${CALIBRATION} --uniform Q9)
cli_writer_error(pack type_does_not_fit "type q3_K does not fit '.*': its rows of 576 weights are not whole blocks of 256"
               -m ${SW_TEST_MODEL} --calibration ${CALIBRATION} --uniform Q3_K)

# A prompt state saved by one process is restored by the next.
set(PROMPT_STATE ${CMAKE_CURRENT_BINARY_DIR}/prompt-state.bin)
add_test(NAME cli.prompt_state_saved COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS}
         -p "What is the weather like in Paris?" --prompt-state ${PROMPT_STATE})
set_tests_properties(cli.prompt_state_saved PROPERTIES LABELS cli FIXTURES_SETUP prompt_state
                     PASS_REGULAR_EXPRESSION "\"name\": \"get_weather\"")
add_test(NAME cli.prompt_state_restored COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS}
         -p "Weather in Oslo?" --prompt-state ${PROMPT_STATE})
set_tests_properties(cli.prompt_state_restored PROPERTIES LABELS cli FIXTURES_REQUIRED prompt_state
                     PASS_REGULAR_EXPRESSION "prompt state '.*': [1-9][0-9]* tokens restored, [1-9][0-9]* of")
# The prompt cache: a tool set's prefix saved by one process is restored by the next.
set(PROMPT_CACHE ${CMAKE_CURRENT_BINARY_DIR}/prompt-cache)
add_test(NAME cli.prompt_cache_saved COMMAND sh -c "rm -rf ${PROMPT_CACHE} && ${CLI} call -m ${SW_TEST_MODEL} \
--tools ${TOOLS} -p 'What is the weather like in Paris?' --prompt-cache-dir ${PROMPT_CACHE}")
set_tests_properties(cli.prompt_cache_saved PROPERTIES LABELS cli FIXTURES_SETUP prompt_cache
                     PASS_REGULAR_EXPRESSION "prompt cache: the tool-set prefix's [1-9][0-9]* tokens saved")
add_test(NAME cli.prompt_cache_restored COMMAND ${CLI} call -m ${SW_TEST_MODEL} --tools ${TOOLS}
         -p "Weather in Oslo?" --prompt-cache-dir ${PROMPT_CACHE})
set_tests_properties(cli.prompt_cache_restored PROPERTIES LABELS cli FIXTURES_REQUIRED prompt_cache
                     PASS_REGULAR_EXPRESSION "prompt cache: the tool-set prefix's [1-9][0-9]* tokens restored")
cli_error(prompt_cache_not_a_folder "cannot use '.*' as the prompt cache folder" call -m ${SW_TEST_MODEL}
          --tools ${TOOLS} -p "Weather in Oslo?" --prompt-cache-dir ${TOOLS})
cli_error(prompt_state_not_a_state "is not a prompt state file"
          call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --prompt-state ${TOOLS})

# Shaping: a model that keeps every layer at full width, rewritten in llama.cpp's per-layer
# architecture, gives the same distributions as the source; a pruned one runs and differs.
set(SHAPED ${CMAKE_CURRENT_BINARY_DIR}/shaped.gguf)
add_test(NAME cli.shape_unchanged COMMAND ${CLI} shape -m ${SW_TEST_MODEL} -o ${CMAKE_CURRENT_BINARY_DIR}/unchanged.gguf)
set_tests_properties(cli.shape_unchanged PROPERTIES LABELS cli FIXTURES_SETUP unchanged
                     PASS_REGULAR_EXPRESSION "30 of 30 layers, FFN 1536/1536, attention skipped in 0 layer")
add_test(NAME cli.shape_unchanged_is_the_source COMMAND ${CLI} quality -m ${CMAKE_CURRENT_BINARY_DIR}/unchanged.gguf
         --reference ${SW_TEST_MODEL} --text ${CALIBRATION} --tokens 64 --window 32)
set_tests_properties(cli.shape_unchanged_is_the_source PROPERTIES LABELS cli FIXTURES_REQUIRED unchanged
                     PASS_REGULAR_EXPRESSION "KL divergence 0\\.00000 nats, top-1 agreement 100\\.00 %")
# A pruned model: `shape` says what it kept (test `name`), and the result runs and differs from
# the source (test `runs`).
function(shaped_model_test name runs out describe)
  add_test(NAME cli.${name} COMMAND ${CLI} shape -m ${SW_TEST_MODEL} -o ${out} ${ARGN}
           --calibration ${CALIBRATION} --tokens 128)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli FIXTURES_SETUP ${name} PASS_REGULAR_EXPRESSION "${describe}")
  add_test(NAME cli.${runs} COMMAND ${CLI} quality -m ${out} --reference ${SW_TEST_MODEL}
           --text ${CALIBRATION} --tokens 64 --window 32)
  set_tests_properties(cli.${runs} PROPERTIES LABELS cli FIXTURES_REQUIRED ${name}
                       PASS_REGULAR_EXPRESSION "KL divergence 0*[1-9]|KL divergence 0\\.0*[1-9]")
endfunction()
shaped_model_test(shape shaped_model_runs ${SHAPED} "24 of 30 layers, FFN 1280/1536, attention skipped in 2 layer"
                  --layers 0-23 --ffn 1280 --skip-attention 10,12)
# A narrower model: every matrix cut to the kept residual channels.
shaped_model_test(shape_width narrowed_model_runs ${CMAKE_CURRENT_BINARY_DIR}/narrowed.gguf
                  "30 of 30 layers, FFN 1536/1536, attention skipped in 0 layer\\(s\\), width 544/576" --width 544)
cli_writer_error(shape missing_model "cannot read '/nonexistent.gguf' as a GGUF file" -m /nonexistent.gguf)
cli_writer_error(shape layer_out_of_range "layer 30 does not exist \\(the model has 30\\)"
                 -m ${SW_TEST_MODEL} --layers 0-30)
cli_writer_error(shape first_layer_attention "the first kept layer must keep its attention"
                 -m ${SW_TEST_MODEL} --layers 2-9 --skip-attention 2)
cli_writer_error(shape ffn_not_whole_blocks "FFN width 1000 for layer 0 must be a multiple of 32"
                 -m ${SW_TEST_MODEL} --ffn 1000 --calibration ${CALIBRATION})
cli_writer_error(shape width_not_whole_blocks "model width 500 must be a multiple of 32 from 32 to 576"
                 -m ${SW_TEST_MODEL} --width 500 --calibration ${CALIBRATION})
cli_writer_error(shape ffn_needs_calibration "a narrower FFN or model width keeps the channels .* give one"
                 -m ${SW_TEST_MODEL} --ffn 1024)
cli_writer_error(shape bad_list "'x' in layers is not a number or a range" -m ${SW_TEST_MODEL} --layers 0-3,x)

# Quality against the source on a text the packing was not calibrated on (Apache-2.0).
set(HELD_OUT_TEXT /usr/share/common-licenses/Apache-2.0)
add_test(NAME cli.quality_packed COMMAND ${CLI} quality -m ${PACKED} --reference ${SW_TEST_MODEL}
         --text ${HELD_OUT_TEXT} --tokens 128 --window 64)
set_tests_properties(cli.quality_packed PROPERTIES LABELS cli FIXTURES_REQUIRED packed
                     PASS_REGULAR_EXPRESSION "scoring: 2 of 2 windows.*128 positions: perplexity [0-9.]+ \\(reference [0-9.]+, [+-][0-9.]+ %\\), KL divergence 0\\.0*[1-9]")
cli_error(quality_empty_text "the text '.*empty.txt' is empty"
          quality -m ${SW_TEST_MODEL} --reference ${SW_TEST_MODEL} --text ${DATA}/empty.txt)

# The OpenAI-compatible server against the official OpenAI Python client (a real peer, from
# PyPI, in the virtual environment scripts/setup.sh makes), and the arithmetic the benchmark
# studies report with.
set(SW_PYTHON "" CACHE FILEPATH "Python with the test peers (openai, mcp-server-time, mcp-server-git)")
if(SW_PYTHON AND EXISTS "${SW_PYTHON}")
  add_test(NAME scripts.study_math COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_study_math.py)
  set_tests_properties(scripts.study_math PROPERTIES LABELS unit)
  add_test(NAME server.openai_client COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_openai_client.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --tools ${TOOLS})
  set_tests_properties(server.openai_client PROPERTIES LABELS server TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all server checks passed")
  # The agent frameworks as clients (OpenAI Agents SDK, LangChain, pydantic-ai, instructor): a tool
  # round trip with the call forced, its id answered, a final text; a streamed call; structured answers.
  add_test(NAME server.agent_frameworks COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_agent_frameworks.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --tools ${TOOLS})
  set_tests_properties(server.agent_frameworks PROPERTIES LABELS server TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all agent framework checks passed")
  # Structured outputs (response_format json_schema) through the client's own parse().
  add_test(NAME server.structured COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_structured.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --tools ${TOOLS})
  set_tests_properties(server.structured PROPERTIES LABELS server TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all structured-output checks passed")
  # Calls under schema keywords, validated by the official jsonschema package (an oracle of its
  # own, not the engine's check).
  add_test(NAME cli.keywords_jsonschema COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_keywords_jsonschema.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --tools ${CMAKE_CURRENT_SOURCE_DIR}/data/keyword_tools.json
           --tools ${CMAKE_CURRENT_SOURCE_DIR}/data/recursive_tools.json)
  set_tests_properties(cli.keywords_jsonschema PROPERTIES LABELS cli TIMEOUT 1500
                       PASS_REGULAR_EXPRESSION "calls validate under jsonschema")
  # The BFCL sample as OpenAI requests and the check of calls made elsewhere (bench/peers.py).
  add_test(NAME cli.bfcl_cases COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_bfcl_cases.py
           --cli ${CLI} --data ${SW_TEST_BFCL})
  set_tests_properties(cli.bfcl_cases PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "bfcl-cases checks passed")
  # Failures are never reported as successes: an invalid call is 422, a timeout 504, a missing
  # API key 401 - whole and streamed.
  add_test(NAME server.failures COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_failures.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --coder ${SW_CACHE}/models/qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf
           --tools ${TOOLS})
  set_tests_properties(server.failures PROPERTIES LABELS server TIMEOUT 600 PASS_REGULAR_EXPRESSION "all failure checks passed")
  # tool_choice auto on the Qwen2.5-Coder models, which begin calls in fenced blocks, bare JSON
  # or python-like form: each comes back as tool_calls; a joke stays text.
  add_test(NAME server.tool_choice_auto COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_tool_choice_auto.py
           --cli ${CLI} --models ${SW_CACHE}/models --tools ${TOOLS})
  set_tests_properties(server.tool_choice_auto PROPERTIES LABELS server TIMEOUT 900
                       PASS_REGULAR_EXPRESSION "all tool_choice auto checks passed")
  # A bounded load test: several clients at once for a fixed time, no error and no crash.
  add_test(NAME server.load COMMAND ${SW_PYTHON} ${PROJECT_SOURCE_DIR}/bench/server_load.py --cli ${CLI}
           --model ${SW_TEST_MODEL} --clients 4 --seconds 20 --slots 2)
  set_tests_properties(server.load PROPERTIES LABELS server TIMEOUT 600 PASS_REGULAR_EXPRESSION "load test passed")
  # Packing for speed: the types' times measured on this CPU (once, kept for the tests after it), a
  # budget between the fastest packing this CPU allows and the source's time met and mostly spent,
  # and the packed model still calls.
  set(PACKED_FOR_SPEED ${CMAKE_CURRENT_BINARY_DIR}/packed-for-speed.gguf)
  add_test(NAME cli.pack_for_speed COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_pack_for_speed.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --calibration ${CALIBRATION} -o ${PACKED_FOR_SPEED})
  set_tests_properties(cli.pack_for_speed PROPERTIES LABELS cli FIXTURES_SETUP packed_for_speed
                       PASS_REGULAR_EXPRESSION "pack for speed checks passed")
  cli_written_model_calls(packed_for_speed_calls ${PACKED_FOR_SPEED} packed_for_speed)
  # Model families whose weights are not fetched, as tiny random-weight models: a vocabulary-only
  # GGUF and a real chat template from llama.cpp's sdist (scripts/setup.sh keeps them beside its
  # chat library), made at test time by tests/scripts/make_tiny_model.py and kept in the cache
  # folder for the next run with the same inputs. The vocabulary is the family's own where the
  # sdist has it, else the closest (named in the README's models table).
  set(LLAMA_MODELS ${SW_LLAMA_CHAT}/models)
  set(TINY ${CMAKE_CURRENT_BINARY_DIR}/tiny)
  function(tiny_model name vocab template)
    add_test(NAME cli.tiny_${name} COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/make_tiny_model.py
             --vocab ${LLAMA_MODELS}/ggml-vocab-${vocab}.gguf --template ${LLAMA_MODELS}/templates/${template}.jinja
             -o ${TINY}/${name}.gguf --cache ${SW_CACHE}/tiny-models)
    set_tests_properties(cli.tiny_${name} PROPERTIES LABELS cli FIXTURES_SETUP tiny_${name})
  endfunction()
  tiny_model(qwen3 qwen2 Qwen-Qwen3-0.6B)
  tiny_model(qwen3-coder qwen2 Qwen3-Coder)
  tiny_model(llama3.2 llama-bpe meta-llama-Llama-3.2-3B-Instruct)
  tiny_model(mistral-nemo llama-bpe mistralai-Mistral-Nemo-Instruct-2407)
  tiny_model(hermes3 llama-bpe NousResearch-Hermes-3-Llama-3.1-8B-tool_use)
  tiny_model(granite4 gpt-2 ibm-granite-granite-4.0)
  tiny_model(qwen3.5 qwen35 Qwen3.5-4B)
  tiny_model(smollm3 llama-bpe HuggingFaceTB-SmolLM3-3B)
  tiny_model(lfm2.5 llama-bpe LFM2.5-Instruct)
  tiny_model(phi3.5 phi-3 microsoft-Phi-3.5-mini-instruct)
  tiny_model(gemma4 gemma-4 google-gemma-4-31B-it)
  tiny_model(minicpm5 qwen2 openbmb-MiniCPM5-1B)
  tiny_model(gpt-oss gpt-2 openai-gpt-oss-120b)
  tiny_model(mistral-small3.2 llama-bpe Mistral-Small-3.2-24B-Instruct-2506)
  tiny_model(functionary3.1 llama-bpe meetkai-functionary-medium-v3.1)
  tiny_model(glm4.6 qwen2 GLM-4.6)
  tiny_model(minimax-m2 qwen2 MiniMax-M2)
  # Each family's calls in every grammar mode, under tool_choice required and auto: the prompt is
  # llama.cpp's, llama.cpp's parser reads the calls we report, SchemaWeaver's are jump-forward's
  # (tests/scripts/test_family_calls.py). A family whose template gives no syntax written here is
  # named as such by `info` and still calls, in the library's format (--fallback). MODEL names
  # the tiny model where it is not the test's name (one family checked in two ways).
  function(family_calls name)
    cmake_parse_arguments(FAMILY "" "MODEL" "" ${ARGN})
    if(NOT FAMILY_MODEL)
      set(FAMILY_MODEL ${name})
    endif()
    add_test(NAME cli.family_${name} COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_family_calls.py
             --cli ${CLI} --model ${TINY}/${FAMILY_MODEL}.gguf --tools ${DATA}/family_tools.json
             ${FAMILY_UNPARSED_ARGUMENTS})
    set_tests_properties(cli.family_${name} PROPERTIES LABELS cli FIXTURES_REQUIRED tiny_${FAMILY_MODEL} TIMEOUT 900
                         PASS_REGULAR_EXPRESSION "family calls (agree with llama.cpp|come in the library's format)")
  endfunction()
  family_calls(qwen3)
  # Qwen3 thinking: reasoning cut at the budget and the block closed as the template writes it.
  family_calls(qwen3-thinking MODEL qwen3 --thinking 6)
  family_calls(llama3.2)
  family_calls(mistral-nemo --list)
  family_calls(hermes3)
  family_calls(granite4)
  family_calls(mistral-small3.2 --fallback)
  family_calls(functionary3.1)
  # Tagged arguments take more tokens: two calls of the family tool need about 350 (GLM, MiniMax 450).
  family_calls(qwen3-coder --max-tokens 400)
  family_calls(qwen3.5 --max-tokens 400)
  family_calls(qwen3.5-thinking MODEL qwen3.5 --thinking 6 --max-tokens 400)
  family_calls(glm4.6 --max-tokens 500)
  family_calls(minimax-m2 --max-tokens 500)
  family_calls(smollm3 --fallback)
  # LFM2.5's python-like calls: its template writes none, llama.cpp's handler of LFM2 reads them.
  family_calls(lfm2.5)
  family_calls(phi3.5 --fallback)
  # Gemma 4's calls in its own value notation (strings between <|"|>, keys bare).
  family_calls(gemma4)
  family_calls(minicpm5 --max-tokens 400)
  family_calls(minicpm5-thinking MODEL minicpm5 --thinking 6 --max-tokens 400)
  # gpt-oss answers text in channels of its own; its reasoning ends "<|end|><|start|>assistant"
  # before a call (the text's "<|channel|>final<|message|>" is not the block's).
  family_calls(gpt-oss --channels)
  family_calls(gpt-oss-thinking MODEL gpt-oss --channels --thinking 6)
  # The template's other variables reach it (gpt-oss's reasoning effort); enable_thinking is the
  # thinking budget's, and a variable list that is not JSON is refused.
  add_test(NAME cli.template_kwargs COMMAND ${CLI} call -m ${TINY}/gpt-oss.gguf --tools ${TOOLS} -p hi -n 1
           --template-kwargs "{\"reasoning_effort\": \"high\"}" --print-prompt)
  set_tests_properties(cli.template_kwargs PROPERTIES LABELS cli FIXTURES_REQUIRED tiny_gpt-oss
                       PASS_REGULAR_EXPRESSION "Reasoning: high")
  cli_error(template_kwargs_thinking "enable_thinking is set by the thinking budget"
            call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --template-kwargs "{\"enable_thinking\": true}")
  cli_error(template_kwargs_not_json "--template-kwargs is not valid JSON"
            call -m ${SW_TEST_MODEL} --tools ${TOOLS} -p hi --template-kwargs "{effort: low}")
  # llama.cpp's own parser, through `schemaweaver parse`, reads each family's call syntax (a
  # model's output written as that family writes a call) into the call.
  function(parse_test name model)
    add_test(NAME cli.parse_${name} COMMAND ${CLI} parse -m ${TINY}/${model}.gguf --tools ${TOOLS} ${ARGN}
             ${DATA}/outputs/${name}.txt)
    set_tests_properties(cli.parse_${name} PROPERTIES LABELS cli FIXTURES_REQUIRED tiny_${model} PASS_REGULAR_EXPRESSION
                         "\"tool_calls\": .{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}.}")
  endfunction()
  parse_test(qwen3 qwen3)
  parse_test(qwen3-thinking qwen3 --thinking)
  parse_test(qwen3-coder qwen3-coder)
  parse_test(llama3.2 llama3.2)
  parse_test(mistral-nemo mistral-nemo)
  # gpt-oss as its models write a call (recipient in the channel's header, not the role's)
  parse_test(gpt-oss gpt-oss)
  parse_test(minicpm5 minicpm5)
  parse_test(lfm2.5 lfm2.5)
  parse_test(gemma4 gemma4)
  # Reasoning is read apart from the call.
  add_test(NAME cli.parse_reasoning COMMAND ${CLI} parse -m ${TINY}/qwen3.gguf --tools ${TOOLS} --thinking
           ${DATA}/outputs/qwen3-thinking.txt)
  set_tests_properties(cli.parse_reasoning PROPERTIES LABELS cli FIXTURES_REQUIRED tiny_qwen3
                       PASS_REGULAR_EXPRESSION "\"reasoning_content\": \"The user wants the weather")
  # Thinking over HTTP: reasoning_content whole and streamed, the block a prelude under auto.
  add_test(NAME server.thinking COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_thinking.py
           --cli ${CLI} --model ${TINY}/qwen3.gguf --plain ${SW_TEST_MODEL} --tools ${DATA}/family_tools.json)
  set_tests_properties(server.thinking PROPERTIES LABELS server FIXTURES_REQUIRED tiny_qwen3 TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all thinking checks passed")
  cli_error(parse_broken_template "the chat template cannot be read"
            parse -m ${SW_TEST_MODEL} --chat-template ${DATA}/broken_template.jinja ${DATA}/outputs/plain.txt)
  cli_error(parse_missing_output "cannot read '/nonexistent/output.txt'"
            parse -m ${SW_TEST_MODEL} /nonexistent/output.txt)

  # The agent loop end to end: the default model calls the time server's tools through MCP.
  add_test(NAME cli.agent_time COMMAND ${CLI} agent -m ${SW_TEST_MODEL} --max-rounds 3 --json --require-call
           --mcp "${SW_CACHE}/venv/bin/mcp-server-time --local-timezone UTC" -p "What time is it in Tokyo?")
  set_tests_properties(cli.agent_time PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "\"server\":\"mcp-time\"")
  # MCP over both transports in one run (the SDK's server over Streamable HTTP, the time server
  # over stdio), the revisions agreed, a destructive tool's call refused without a yes.
  add_test(NAME cli.agent_mcp_transports COMMAND ${SW_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/server/test_mcp_agent.py
           --cli ${CLI} --model ${SW_TEST_MODEL} --python ${SW_PYTHON})
  set_tests_properties(cli.agent_mcp_transports PROPERTIES LABELS cli TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "all MCP agent checks passed")
  # A provisional call through a real MCP server: git_log (the only tool shown) is read-only
  # and has optional arguments, so it runs on the provisional call while the model decides
  # them; its result is kept (executed_early) or it runs again with the final call (rerun).
  # A fixed path: the prompt names it, and the small model's answer depends on the prompt's
  # words (under some build folders it writes no valid call at all). One call per turn: left
  # to go on, the small model repeats git_log until max_tokens on some CPUs.
  set(GIT_REPO /tmp/schemaweaver-git-repo)
  add_test(NAME cli.agent_git_repo COMMAND sh -c "rm -rf '${GIT_REPO}' && git init -q '${GIT_REPO}' && \
git -C '${GIT_REPO}' -c user.name=test -c user.email=test@example.com commit -q --allow-empty -m 'first commit'")
  set_tests_properties(cli.agent_git_repo PROPERTIES LABELS cli FIXTURES_SETUP git_repo)
  # The small model's value for repo_path runs on to max_tokens for some prompts on some CPUs
  # (a near-tie decides whether its string ends), so two prompts are tried: the test passes if
  # either gets its provisional call executed.
  set(GIT_AGENT ${CLI} agent -m ${SW_TEST_MODEL} --max-rounds 2 --json --require-call --max-calls 1
      --mcp \"${SW_CACHE}/venv/bin/mcp-server-git --repository ${GIT_REPO}\" --tools git_log)
  string(REPLACE ";" " " GIT_AGENT "${GIT_AGENT}")
  add_test(NAME cli.agent_git_provisional COMMAND sh -c
           "${GIT_AGENT} -p 'Show the last two commits of the git repository at ${GIT_REPO}'; \
${GIT_AGENT} -p 'Show the git log of ${GIT_REPO}'")
  set_tests_properties(cli.agent_git_provisional PROPERTIES LABELS cli FIXTURES_REQUIRED git_repo
                       PASS_REGULAR_EXPRESSION "\"(executed_early|rerun)\":true")
else()
  message(WARNING "SW_PYTHON is not set: the server test with the OpenAI client is skipped (run scripts/setup.sh)")
endif()
