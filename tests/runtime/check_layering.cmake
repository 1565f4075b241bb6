# ctest runtime_layering (see CMakeLists.txt here): fails when qcc_runtime's link closure holds a
# compiler-side library (FORBIDDEN, comma-separated, computed at configure time) or when a file
# under SOURCE_DIR includes an ir/, frontend/, passes/, calib/, tools/, ONNX or protobuf header,
# or a backend header outside backend_*/kernels/.
set(errors "")
if(FORBIDDEN)
  string(APPEND errors "qcc_runtime links compiler-side libraries: ${FORBIDDEN}\n")
endif()
file(GLOB_RECURSE sources ${SOURCE_DIR}/*.h ${SOURCE_DIR}/*.cc ${SOURCE_DIR}/*.cu)
set(include_re "^[ \t]*#[ \t]*include[ \t]*[<\"]")
foreach(file IN LISTS sources)
  file(STRINGS "${file}" bad REGEX
       "${include_re}(ir|frontend|passes|calib|tools|onnx|google/protobuf)/")
  file(STRINGS "${file}" backend REGEX "${include_re}backend_[a-z]+/")
  foreach(line IN LISTS backend)
    if(NOT line MATCHES "${include_re}backend_[a-z]+/kernels/")
      list(APPEND bad "${line}")
    endif()
  endforeach()
  foreach(line IN LISTS bad)
    string(APPEND errors "${file}: ${line}\n")
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "runtime/ must not depend on the compiler (DESIGN.md s.1):\n${errors}")
endif()
list(LENGTH sources n)
message(STATUS "runtime layering OK (${n} files, link closure clean)")
