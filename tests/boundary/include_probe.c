/* One #include, chosen by the build: PROBE_HEADER. The boundary tests compile
 * this with the include directories a part of the project gets (the server,
 * or a service that links other services) and a header that part must not
 * see; they pass only when the compiler reports that header missing. */
#include PROBE_HEADER

int boundary_probe;
