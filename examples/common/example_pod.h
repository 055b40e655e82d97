/*
 * example_pod.h - two "servers" of a super-pod on one machine, for the cross-server examples
 * (12, 13): network namespaces on a bridge, a pod file naming them, and processes started in
 * them with their ACLVMM_SERVER_ID (docs/fabric.md).
 *
 * Server s (1 or 2) is the namespace aclvmm-ex<pid>-s<s>, at 10.78.0.<s>/24, linked by the veth
 * pair ax<pid>e<s> / ax<pid>b<s> to a bridge in aclvmm-ex<pid>-sw. Every name carries the launcher's pid and is created exclusively (ip refuses
 * an existing one); pod_stop() deletes the namespaces, and with them the links. The pod file is
 * in a fresh mkdtemp directory, removed by pod_stop().
 *
 * Creating namespaces needs root and iproute2's `ip`; pod_available() says why it cannot, and
 * the examples then exit with EXIT_SKIP (examples/run.sh reports SKIP, CTest "skipped").
 */
#ifndef ACLVMM_EXAMPLE_POD_H
#define ACLVMM_EXAMPLE_POD_H

#define _GNU_SOURCE /* setns */
#include "example_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <unistd.h>

#define EXIT_SKIP 77 /* the example cannot run on this machine (and says why) */
#define POD_SERVERS 2

extern char **environ;

struct example_pod {
    char prefix[32];   /* aclvmm-ex<pid>: the namespaces */
    char link[16];     /* ax<pid>: the veths (interface names have at most 15 characters) */
    char dir[64];      /* holds the pod file */
    char pod_file[96];
    int up;            /* namespaces created */
};

static inline int pod_run(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd) == 0;
}

/* 1 when this machine lets the example create namespaces; otherwise 0 and why. */
static inline int pod_available(char *why, size_t n)
{
    if (geteuid() != 0) {
        snprintf(why, n,
                 "needs root to create network namespaces (run it with sudo, or in a user namespace "
                 "of its own: unshare -rnm sh -c 'mount -t tmpfs tmpfs /run && exec <this program>')");
        return 0;
    }
    if (!pod_run("ip -V > /dev/null 2>&1")) {
        snprintf(why, n, "needs iproute2's ip (scripts/setup.sh installs it)");
        return 0;
    }
    if (!pod_run("ip netns add aclvmm-ex%d-probe 2>/dev/null", (int)getpid())) {
        snprintf(why, n, "this machine does not let it create a network namespace");
        return 0;
    }
    pod_run("ip netns del aclvmm-ex%d-probe", (int)getpid());
    return 1;
}

static inline void pod_stop(struct example_pod *pod)
{
    if (pod->up) {
        for (int s = 1; s <= POD_SERVERS; ++s) {
            pod_run("ip netns del %s-s%d 2>/dev/null", pod->prefix, s);
        }
        pod_run("ip netns del %s-sw 2>/dev/null", pod->prefix);
        pod->up = 0;
    }
    if (pod->pod_file[0] != '\0') {
        unlink(pod->pod_file);
        pod->pod_file[0] = '\0';
    }
    if (pod->dir[0] != '\0') {
        rmdir(pod->dir);
        pod->dir[0] = '\0';
    }
}

static inline const char *pod_address(int server, char *buf, size_t n)
{
    snprintf(buf, n, "10.78.0.%d", server);
    return buf;
}

/* Two servers on a bridge and the pod file listing them; exits the example on failure. */
static inline void pod_start(struct example_pod *pod)
{
    memset(pod, 0, sizeof(*pod));
    snprintf(pod->prefix, sizeof(pod->prefix), "aclvmm-ex%d", (int)getpid());
    snprintf(pod->link, sizeof(pod->link), "ax%d", (int)getpid());
    pod->up = 1;
    const char *p = pod->prefix, *l = pod->link;
    int ok = pod_run("ip netns add %s-sw", p) && pod_run("ip -n %s-sw link add br0 type bridge", p) &&
             pod_run("ip -n %s-sw link set br0 up", p);
    for (int s = 1; ok && s <= POD_SERVERS; ++s) {
        char a[32];
        ok = pod_run("ip netns add %s-s%d", p, s) &&
             pod_run("ip link add %se%d type veth peer name %sb%d", l, s, l, s) &&
             pod_run("ip link set %se%d netns %s-s%d", l, s, p, s) &&
             pod_run("ip link set %sb%d netns %s-sw", l, s, p) &&
             pod_run("ip -n %s-s%d link set %se%d name eth0", p, s, l, s) &&
             pod_run("ip -n %s-s%d addr add %s/24 dev eth0", p, s, pod_address(s, a, sizeof(a))) &&
             pod_run("ip -n %s-s%d link set eth0 up", p, s) && pod_run("ip -n %s-s%d link set lo up", p, s) &&
             pod_run("ip -n %s-sw link set %sb%d master br0 up", p, l, s);
    }
    if (!ok) {
        pod_stop(pod);
        expect(0, "could not create the namespaces of the pod");
    }
    snprintf(pod->dir, sizeof(pod->dir), "/tmp/aclvmm-example-pod-XXXXXX");
    if (mkdtemp(pod->dir) == NULL) {
        pod->dir[0] = '\0';
        pod_stop(pod);
        expect(0, "mkdtemp: %s", strerror(errno));
    }
    snprintf(pod->pod_file, sizeof(pod->pod_file), "%s/pod", pod->dir);
    FILE *f = fopen(pod->pod_file, "w");
    if (f == NULL) {
        pod_stop(pod);
        expect(0, "cannot write %s: %s", pod->pod_file, strerror(errno));
    }
    fprintf(f, "# server_id address: the two servers of this example's pod\n");
    for (int s = 1; s <= POD_SERVERS; ++s) {
        char a[32];
        fprintf(f, "%d %s\n", s, pod_address(s, a, sizeof(a)));
    }
    fclose(f);
    char a1[32], a2[32];
    expect(1, "pod of two servers: server 1 at %s, server 2 at %s (namespaces %s-s1, %s-s2)",
           pod_address(1, a1, sizeof(a1)), pod_address(2, a2, sizeof(a2)), p, p);
}

static struct example_pod g_pod;

static inline void pod_clean_up(void)
{
    kill_children();
    pod_stop(&g_pod);
}

/* The launcher's start: 1 with g_pod up (torn down at exit, children killed), or 0 after saying
   why this machine cannot run the example (exit with EXIT_SKIP then). */
static inline int launch_pod(void)
{
    char why[256];
    if (!pod_available(why, sizeof(why))) {
        printf("[SKIP] %s%sthis example %s\n", ROLE_PREFIX_, why);
        return 0;
    }
    select_a3_product(); /* FABRIC needs a super-pod product; both servers' processes inherit it */
    atexit(pod_clean_up);
    pod_start(&g_pod);
    return 1;
}

/* A process of this program in server `server`'s namespace, with its ACLVMM_SERVER_ID and the pod
   file; *to_child / *from_child are its standard input and output. */
static inline pid_t pod_spawn(const struct example_pod *pod, int server, char *const argv[], int *to_child,
                              int *from_child)
{
    char ns[128], id[40], file[160];
    snprintf(ns, sizeof(ns), "/run/netns/%s-s%d", pod->prefix, server);
    snprintf(id, sizeof(id), "ACLVMM_SERVER_ID=%d", server);
    snprintf(file, sizeof(file), "ACLVMM_POD_FILE=%s", pod->pod_file);
    /* The environment is built before fork: the child may only make async-signal-safe calls. */
    size_t count = 0;
    while (environ[count] != NULL) {
        ++count;
    }
    char **envp = xmalloc((count + 3) * sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < count; ++i) {
        if (strncmp(environ[i], "ACLVMM_SERVER_ID=", 17) != 0 && strncmp(environ[i], "ACLVMM_POD_FILE=", 16) != 0) {
            envp[k++] = environ[i];
        }
    }
    envp[k++] = id;
    envp[k++] = file;
    envp[k] = NULL;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        expect(0, "pipe2: %s", strerror(errno));
    }
    pid_t pid = fork_or_fail();
    if (pid == 0) {
        int fd = open(ns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
            _exit(126);
        }
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    free(envp);
    close(in[0]);
    close(out[1]);
    *to_child = in[1];
    *from_child = out[0];
    remember_child(pid);
    return pid;
}

/* One line from fd (without its newline) within timeout_ms; 1 on success, 0 at the end of the
   stream or after the timeout. Byte by byte: the lines are few and short. */
static inline int next_line(int fd, char *line, size_t n, int timeout_ms)
{
    size_t len = 0;
    for (int waited = 0; waited < timeout_ms;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) != 1) {
            waited += 100;
            continue;
        }
        char c;
        if (read(fd, &c, 1) != 1) {
            return 0;
        }
        if (c == '\n') {
            line[len] = '\0';
            return 1;
        }
        if (len + 1 < n) {
            line[len++] = c;
        }
    }
    return 0;
}

/* Copies a child's output lines to this process's standard output until one starts with
   `prefix` (returned in line; 1) or the stream ends (0). prefix NULL: until the end. */
static inline int relay_until(int fd, const char *prefix, char *line, size_t n, int timeout_ms)
{
    while (next_line(fd, line, n, timeout_ms)) {
        if (prefix != NULL && strncmp(line, prefix, strlen(prefix)) == 0) {
            return 1;
        }
        printf("%s\n", line);
        fflush(stdout);
    }
    return 0;
}

static inline void send_line(int fd, const char *line)
{
    size_t n = strlen(line);
    if (write(fd, line, n) != (ssize_t)n || write(fd, "\n", 1) != 1) {
        expect(0, "could not write to a child: %s", strerror(errno));
    }
}

/* Bytes as hex text and back (handles travel in the lines above). */
static inline void to_hex(const void *data, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; ++i) {
        out[2 * i] = digits[((const uint8_t *)data)[i] >> 4];
        out[2 * i + 1] = digits[((const uint8_t *)data)[i] & 15];
    }
    out[2 * n] = '\0';
}

static inline int from_hex(const char *text, void *data, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        unsigned v;
        if (sscanf(text + 2 * i, "%2x", &v) != 1) {
            return 0;
        }
        ((uint8_t *)data)[i] = (uint8_t)v;
    }
    return 1;
}

#endif /* ACLVMM_EXAMPLE_POD_H */
