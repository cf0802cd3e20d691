/* The floor under every stdio call on this machine: a client that writes a 112-byte request
 * to a child over a pipe and waits for the echo, while the child spins SPIN_US (the Python
 * server's time per call) before answering. Prints the client's CPU (user + system) per
 * round trip and the p50 round trip, for three ways of waiting: a blocking read, epoll with
 * no timeout, and epoll with a timeout (as tokio waits while a call's deadline is armed).
 * docs/benchmarks.md, fourteenth section.
 *
 *   cc -O2 -o /tmp/pipe_pingpong tests/bench/pipe_pingpong.c
 *   /tmp/pipe_pingpong block 20000; /tmp/pipe_pingpong epoll 20000; /tmp/pipe_pingpong epoll-timeout 20000
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SPIN_US 50

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static double cpu_us(const struct rusage *r) {
    return r->ru_utime.tv_sec * 1e6 + r->ru_utime.tv_usec + r->ru_stime.tv_sec * 1e6 + r->ru_stime.tv_usec;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s block|epoll|epoll-timeout ROUNDS\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int rounds = atoi(argv[2]);
    int timeout = strcmp(mode, "epoll-timeout") == 0 ? 118000 : -1;
    int use_epoll = strcmp(mode, "block") != 0;
    int to_child[2], to_parent[2];
    if (rounds <= 0 || pipe(to_child) || pipe(to_parent)) return 2;
    if (fork() == 0) {
        char buf[256];
        close(to_child[1]);
        close(to_parent[0]);
        for (;;) {
            ssize_t n = read(to_child[0], buf, sizeof buf);
            if (n <= 0) _exit(0);
            long start = now_ns();
            while (now_ns() - start < SPIN_US * 1000L) {}
            if (write(to_parent[1], buf, (size_t)n) != n) _exit(1);
        }
    }
    close(to_child[0]);
    close(to_parent[1]);
    int ep = epoll_create1(0);
    struct epoll_event ready = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, to_parent[0], &ready);
    char request[112], answer[256];
    memset(request, 'x', sizeof request);
    long *took = malloc(sizeof(long) * (size_t)rounds);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    for (int i = 0; i < rounds; i++) {
        long start = now_ns();
        if (write(to_child[1], request, sizeof request) != (ssize_t)sizeof request) return 1;
        if (use_epoll) epoll_wait(ep, &ready, 1, timeout);
        if (read(to_parent[0], answer, sizeof answer) <= 0) return 1;
        took[i] = now_ns() - start;
    }
    getrusage(RUSAGE_SELF, &after);
    qsort(took, (size_t)rounds, sizeof(long), by_value);
    printf("%s: client CPU %.1f us a round trip, p50 %.1f us\n", mode,
           (cpu_us(&after) - cpu_us(&before)) / rounds, took[rounds / 2] / 1000.0);
    close(to_child[1]);
    wait(NULL);
    return 0;
}
