# ecpd_lazy_library(<pkg-config prefix> <library name>): a library the code
# opens at its first use (core/lazy_lib.h) instead of linking it, so that the
# dynamic loader does not load it and everything it needs at every start.
#
# Makes the INTERFACE target ecpd_lazy_<name>: the library's headers and
# compile flags, and ECPD_<NAME>_SONAME, the name dlopen is given, read from
# the library found here (its ABI is the one the headers describe); the
# variable of that name holds it too, for the tests. Records
# the library's file in the global property ECPD_LAZY_LIBRARIES: the package
# must depend on it by name, since dpkg-shlibdeps only sees what is linked.
function(ecpd_lazy_library prefix name)
  set(file "")
  foreach(candidate ${${prefix}_LINK_LIBRARIES})
    get_filename_component(base "${candidate}" NAME)
    if(base MATCHES "^lib${name}\\.so")
      set(file "${candidate}")
    endif()
  endforeach()
  if(NOT file)
    message(FATAL_ERROR "no shared lib${name} among ${${prefix}_LINK_LIBRARIES}")
  endif()
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${file}" OUTPUT_VARIABLE dump RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR NOT dump MATCHES "SONAME +([^ \n]+)")
    message(FATAL_ERROR "cannot read the SONAME of ${file} with ${CMAKE_OBJDUMP}")
  endif()
  set(soname "${CMAKE_MATCH_1}")
  string(TOUPPER "${name}" upper)
  add_library(ecpd_lazy_${name} INTERFACE)
  target_include_directories(ecpd_lazy_${name} SYSTEM INTERFACE ${${prefix}_INCLUDE_DIRS})
  target_compile_options(ecpd_lazy_${name} INTERFACE ${${prefix}_CFLAGS_OTHER})
  target_compile_definitions(ecpd_lazy_${name} INTERFACE "ECPD_${upper}_SONAME=\"${soname}\"")
  get_filename_component(real "${file}" REALPATH)
  set_property(GLOBAL APPEND PROPERTY ECPD_LAZY_LIBRARIES "${real}")
  set(ECPD_${upper}_SONAME "${soname}" PARENT_SCOPE)
  message(STATUS "lib${name}: opened at first use as ${soname}")
endfunction()
