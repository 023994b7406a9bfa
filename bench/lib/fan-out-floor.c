/*
 * The floor under any device gateway on this machine, for bench/devices.ts: a TCP server with nothing in
 * it but the fan-out. On each trigger it writes one buffer of a frame's size to every accepted socket,
 * from THREADS threads at once (each takes the next socket from a shared counter), and does nothing
 * else: no WebSocket, no database, no event loop. Measured by the same reader processes as the gateway.
 *
 *   fan-out-floor THREADS BYTES      prints "port N" once listening on 127.0.0.1
 * Commands, one per line on stdin:
 *   accept N    accepts N connections, answers "accepted"
 *   write       writes the buffer to every socket, answers "written"
 *   close       exits
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int *fds;
static int nfds;
static char *buffer;
static int bytes;
static atomic_int next_socket;
static pthread_barrier_t start, done;

static void die(const char *what) {
  fprintf(stderr, "fan-out-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void write_share(void) {
  for (int i; (i = atomic_fetch_add(&next_socket, 1)) < nfds;) {
    if (write(fds[i], buffer, bytes) != bytes) die("write");
  }
}

static void *helper(void *unused) {
  (void)unused;
  for (;;) {
    pthread_barrier_wait(&start);
    write_share();
    pthread_barrier_wait(&done);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: fan-out-floor THREADS BYTES\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  bytes = atoi(argv[2]);
  buffer = malloc(bytes);
  memset(buffer, 'x', bytes);
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 4096) != 0) die("listen");
  getsockname(listener, (struct sockaddr *)&addr, &len);
  pthread_barrier_init(&start, NULL, threads);
  pthread_barrier_init(&done, NULL, threads);
  for (int t = 1; t < threads; t++) {
    pthread_t id;
    if (pthread_create(&id, NULL, helper, NULL) != 0) die("pthread_create");
  }
  printf("port %d\n", ntohs(addr.sin_port));
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    int n;
    if (sscanf(line, "accept %d", &n) == 1) {
      fds = realloc(fds, (nfds + n) * sizeof(int));
      for (int i = 0; i < n; i++) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) die("accept");
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fds[nfds++] = fd;
      }
      printf("accepted\n");
    } else if (strncmp(line, "write", 5) == 0) {
      atomic_store(&next_socket, 0);
      pthread_barrier_wait(&start);
      write_share();
      pthread_barrier_wait(&done);
      printf("written\n");
    } else if (strncmp(line, "close", 5) == 0) {
      return 0;
    }
    fflush(stdout);
  }
  return 0;
}
