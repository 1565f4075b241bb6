# ctest runtime_layering (see CMakeLists.txt here): fails when qcc_runtime's link closure holds a
# compiler-side library (FORBIDDEN, comma-separated, computed at configure time) or when a file
# under SOURCE_DIR includes an ir/, frontend/, passes/, calib/, builder/, tools/, backend_*/
# (the evaluator and the lowerings), ONNX or protobuf header. The kernels are in kernels/.
set(errors "")
if(FORBIDDEN)
  string(APPEND errors "qcc_runtime links libraries it must not (compiler-side ones, or a BLAS): ${FORBIDDEN}\n")
endif()
file(GLOB_RECURSE sources ${SOURCE_DIR}/*.h ${SOURCE_DIR}/*.cc ${SOURCE_DIR}/*.cu)
set(include_re "^[ \t]*#[ \t]*include[ \t]*[<\"]")
foreach(file IN LISTS sources)
  file(STRINGS "${file}" bad REGEX
       "${include_re}(ir|frontend|passes|calib|builder|tools|backend_[a-z]+|onnx|google/protobuf)/")
  foreach(line IN LISTS bad)
    string(APPEND errors "${file}: ${line}\n")
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "runtime/ must not depend on the compiler (DESIGN.md s.1):\n${errors}")
endif()
list(LENGTH sources n)
message(STATUS "runtime layering OK (${n} files, link closure clean)")
