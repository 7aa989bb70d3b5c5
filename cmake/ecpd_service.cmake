# ecpd_service(NAME name SOURCES file...): the library of services/<name>.
#
# What others may include of a service, as "<name>/interface.h" and
# "<name>/adapter.h", are its C API and its adapter's entry point, through
# forwarding headers in a directory of their own. The service's own directory
# (internal.h and every private header) stays PRIVATE, so another service or
# the server that names a private header does not compile (tests/boundary
# proves it). The library is ecpd_<name>; link what it needs with
# target_link_libraries afterwards.
function(ecpd_service)
  cmake_parse_arguments(SVC "" "NAME" "SOURCES" ${ARGN})
  set(target ecpd_${SVC_NAME})
  add_library(${target} STATIC ${SVC_SOURCES})
  foreach(header interface.h adapter.h)
    file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/public/${SVC_NAME}/${header}
         CONTENT "#include \"${CMAKE_CURRENT_SOURCE_DIR}/${header}\"\n" @ONLY)
  endforeach()
  target_include_directories(${target}
    PUBLIC ${CMAKE_CURRENT_BINARY_DIR}/public
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC ecpd_core)
endfunction()

# ecpd_service_test(NAME test SOURCES file... LINK lib... [PRIVATE] [LABELS label...] [TIMEOUT seconds]):
# a test program of a service, named after its first source, run by ctest as
# NAME. PRIVATE lets it include the service's private headers (a unit test
# that looks inside); a test of the wire needs only the public ones.
function(ecpd_service_test)
  cmake_parse_arguments(T "PRIVATE" "NAME;TIMEOUT" "SOURCES;LINK;LABELS" ${ARGN})
  list(GET T_SOURCES 0 first)
  get_filename_component(target ${first} NAME_WE)
  add_executable(${target} ${T_SOURCES})
  if(T_PRIVATE)
    target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  target_link_libraries(${target} PRIVATE ${T_LINK})
  add_test(NAME ${T_NAME} COMMAND ${target})
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_TIMEOUT)
    set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()
