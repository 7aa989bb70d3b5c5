/* The floor for B1: a Unix-socket server that echoes each line back and does
 * nothing else. usage: bench_echo_floor SOCKET_PATH (serves one client). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int srv = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
    unlink(argv[1]);
    if (bind(srv, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(srv, 1) < 0)
        return perror("echo_floor"), 1;
    int c = accept(srv, NULL, NULL);
    char buf[65536];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0)
        if (write(c, buf, (size_t)n) != n)
            break;
    unlink(argv[1]);
    return 0;
}
