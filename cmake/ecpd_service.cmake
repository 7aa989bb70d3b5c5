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
