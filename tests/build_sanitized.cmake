# Configures and builds TARGETS ('|'-separated) with a sanitizer in a build folder of their own:
# SANITIZER=ASAN (AddressSanitizer and UndefinedBehaviorSanitizer, with clang and the libFuzzer
# targets; ctest asan_build) or TSAN (ThreadSanitizer, gcc; ctest tsan_build). The fixtures of
# the *_asan, fuzz_* and *_tsan tests.
# Arguments: -DSOURCE_DIR=<repo> -DBINARY_DIR=<build folder> -DSHARED_DIR=<shared>
#            -DTARGETS=<target|target|...> -DSANITIZER=ASAN|TSAN
string(REPLACE "|" ";" targets "${TARGETS}")
string(TOLOWER "${SANITIZER}" name)
foreach(step configure build)
  if(step STREQUAL "configure")
    # A unity build (batches of 8 sources): this folder is built from scratch on every CI run,
    # and the libraries' shared headers are then parsed once a batch (measured: qcc_ir 82.6 s ->
    # 47.0 s, qcc_frontend 62.6 -> 37.7 s). Test binaries and the vector-ISA kernel files opt out
    # (their file-local names clash); the main build stays one file a unit.
    set(cmd ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -DQCC_${SANITIZER}=ON
            -DQCC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQCC_SHARED_DIR=${SHARED_DIR}
            -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
    # -O1 and line tables only (file:line in every report, no variable info): the instrumented
    # build is the longest step of CI, and full -O2 -g made it about a fifth slower to compile.
    # The test sources themselves build at -O0 (tests/CMakeLists.txt).
    if(SANITIZER STREQUAL "ASAN")
      # clang, so that the same build also gives the libFuzzer targets (fuzz/CMakeLists.txt).
      list(APPEND cmd -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DQCC_FUZZ=ON
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG")
    else()
      list(APPEND cmd "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    endif()
  else()
    set(cmd ${CMAKE_COMMAND} --build ${BINARY_DIR} --target ${targets} -j 2)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}_build: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${name}_build: built ${targets} with ${SANITIZER} in ${BINARY_DIR}")
