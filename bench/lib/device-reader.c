/*
 * A measuring process for the device push benchmark (bench/devices.ts, through bench/lib/device-swarm.ts).
 *
 * It holds many device sockets, as many base stations would, and records two times for every event frame:
 *   - arrival: the kernel's receive timestamp of the bytes that completed the frame (SO_TIMESTAMPNS), i.e.
 *     when the frame reached the device's socket. It does not depend on when this process gets a core to
 *     read it, so packing a thousand devices onto the server's machine does not add their reading queue to
 *     the server's latency.
 *   - read: when this process read those bytes, which does include that queue.
 * Both are reported on CLOCK_MONOTONIC, the clock of process.hrtime() in the Node processes.
 *
 * Written in C because the kernel's timestamp is ancillary data of recvmsg(2), which node:net does not
 * expose.
 *
 * With --ack, every device acknowledges every event frame at once, as firmware does: it answers with a masked
 * {"type":"ack","offset":N} text frame as soon as the frame is parsed.
 *
 * Commands, one per line on stdin:
 *   device HOST PORT PATH TOKEN   open a device stream (WebSocket handshake with a bearer token)
 *   tcp HOST PORT BYTES           open a plain TCP socket; every BYTES bytes read count as one numbered round
 *   sync                          answers "connected N" once the commands before it are done
 *   collect                       answers "s OFFSET ARRIVAL_NS READ_NS" per frame since the last collect, then "end"
 *   close                         exits
 * Unprompted: "complete OFFSET" once every socket has the frame (or round) OFFSET.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BUFFER (64 * 1024)
static const char EVENT_PREFIX[] = "{\"type\":\"event\",\"offset\":";

typedef struct {
  int fd;
  int raw_bytes;    /* > 0 for a plain TCP socket: the size of one round */
  long raw_in;      /* plain TCP: bytes read towards the next round */
  long next_round;  /* plain TCP: the next round number (from 1) */
  unsigned char *pending;
  size_t pending_len;
} Conn;

typedef struct {
  long offset;
  int64_t arrival_ns;
  int64_t read_ns;
} Sample;

static Conn *conns;
static size_t nconns, capconns;
static Sample *samples;
static size_t nsamples, capsamples;
static int *complete_count; /* per offset: sockets that have it */
static size_t capcount;
static int epfd;
static int ack_events; /* --ack: answer every event frame with an ack frame */

static void die(const char *what) {
  fprintf(stderr, "device-reader: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int64_t clock_ns(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void record(long offset, int64_t arrival_ns, int64_t read_ns) {
  if (nsamples == capsamples) {
    capsamples = capsamples ? capsamples * 2 : 65536;
    samples = realloc(samples, capsamples * sizeof(Sample));
    if (!samples) die("realloc");
  }
  samples[nsamples++] = (Sample){offset, arrival_ns, read_ns};
  if (offset < 0) return;
  if ((size_t)offset >= capcount) {
    size_t cap = capcount ? capcount : 1024;
    while (cap <= (size_t)offset) cap *= 2;
    complete_count = realloc(complete_count, cap * sizeof(int));
    if (!complete_count) die("realloc");
    memset(complete_count + capcount, 0, (cap - capcount) * sizeof(int));
    capcount = cap;
  }
  if (++complete_count[offset] == (int)nconns) {
    printf("complete %ld\n", offset);
    fflush(stdout);
  }
}

static int connect_to(const char *host, const char *port) {
  struct addrinfo hints = {0}, *res;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0) die("getaddrinfo");
  int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0) die("socket");
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) die("connect");
  freeaddrinfo(res);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0) die("SO_TIMESTAMPNS");
  return fd;
}

/* Performs the WebSocket handshake (blocking); bytes after the response head are kept as pending. */
static void handshake(Conn *c, const char *host, const char *port, const char *path, const char *token) {
  char req[4096];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\n"
                   "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ZW1lcmdlbmN5LWJlbmNoIQ==\r\n\r\n",
                   path, host, port, token);
  if (write(c->fd, req, n) != n) die("handshake write");
  char head[8192];
  size_t len = 0;
  char *end = NULL;
  while (!end) {
    ssize_t r = read(c->fd, head + len, sizeof head - 1 - len);
    if (r <= 0) die("handshake read");
    len += r;
    head[len] = 0;
    end = strstr(head, "\r\n\r\n");
  }
  if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
    fprintf(stderr, "device-reader: upgrade refused: %.*s\n", (int)strcspn(head, "\r\n"), head);
    exit(1);
  }
  size_t rest = len - (size_t)(end + 4 - head);
  if (rest > 0) {
    c->pending = malloc(rest);
    memcpy(c->pending, end + 4, rest);
    c->pending_len = rest;
  }
}

static Conn *add_conn(int fd) {
  if (nconns == capconns) {
    capconns = capconns ? capconns * 2 : 1024;
    conns = realloc(conns, capconns * sizeof(Conn));
    if (!conns) die("realloc");
    /* epoll data holds indexes, not pointers, so moving the array is safe */
  }
  Conn *c = &conns[nconns];
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->next_round = 1;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = nconns};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  nconns++;
  return c;
}

/* Sends {"type":"ack","offset":N} on a device socket, masked as every client frame must be. */
static void send_ack(int fd, long offset) {
  static uint32_t seed = 0x9e3779b9;
  unsigned char frame[64];
  char payload[48];
  int len = snprintf(payload, sizeof payload, "{\"type\":\"ack\",\"offset\":%ld}", offset);
  seed = seed * 1664525 + 1013904223;
  unsigned char mask[4] = {seed >> 24, seed >> 16, seed >> 8, seed};
  frame[0] = 0x81; /* FIN, text */
  frame[1] = 0x80 | len;
  memcpy(frame + 2, mask, 4);
  for (int i = 0; i < len; i++) frame[6 + i] = payload[i] ^ mask[i % 4];
  /* A few dozen bytes into a socket whose peer keeps reading: the blocking write does not wait. */
  if (write(fd, frame, 6 + len) != 6 + len) die("ack write");
}

/* Parses complete unmasked server frames in buf (received on fd); returns the bytes consumed. */
static size_t parse_frames(int fd, const unsigned char *buf, size_t len, int64_t arrival_ns, int64_t read_ns) {
  size_t pos = 0;
  while (len - pos >= 2) {
    int opcode = buf[pos] & 0x0f;
    uint64_t plen = buf[pos + 1] & 0x7f;
    size_t header = 2;
    if (plen == 126) {
      if (len - pos < 4) break;
      plen = ((uint64_t)buf[pos + 2] << 8) | buf[pos + 3];
      header = 4;
    } else if (plen == 127) {
      if (len - pos < 10) break;
      plen = 0;
      for (int i = 0; i < 8; i++) plen = (plen << 8) | buf[pos + 2 + i];
      header = 10;
    }
    if (len - pos < header + plen) break;
    const unsigned char *payload = buf + pos + header;
    size_t prefix = sizeof EVENT_PREFIX - 1;
    if (opcode == 1 && plen > prefix && memcmp(payload, EVENT_PREFIX, prefix) == 0) {
      long offset = 0;
      for (size_t i = prefix; i < plen && payload[i] >= '0' && payload[i] <= '9'; i++) offset = offset * 10 + (payload[i] - '0');
      record(offset, arrival_ns, read_ns);
      if (ack_events) send_ack(fd, offset);
    }
    pos += header + plen;
  }
  return pos;
}

/* Parses the complete frames among the bytes kept from earlier reads, keeping the incomplete rest. */
static void parse_pending(Conn *c, int64_t arrival_ns, int64_t read_ns) {
  size_t used = parse_frames(c->fd, c->pending, c->pending_len, arrival_ns, read_ns);
  memmove(c->pending, c->pending + used, c->pending_len - used);
  c->pending_len -= used;
  if (c->pending_len == 0) {
    free(c->pending);
    c->pending = NULL;
  }
}

static void on_readable(Conn *c) {
  static unsigned char buf[READ_BUFFER];
  char control[CMSG_SPACE(sizeof(struct timespec))];
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
  ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    fprintf(stderr, "device-reader: a socket closed (%s)\n", n == 0 ? "end of stream" : strerror(errno));
    exit(1);
  }
  int64_t read_ns = clock_ns(CLOCK_MONOTONIC);
  /* The kernel's timestamp is on CLOCK_REALTIME: move it onto CLOCK_MONOTONIC with the offset between the two now. */
  int64_t arrival_ns = read_ns;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
      struct timespec ts;
      memcpy(&ts, CMSG_DATA(cm), sizeof ts);
      int64_t real_ns = clock_ns(CLOCK_REALTIME), mono_ns = clock_ns(CLOCK_MONOTONIC);
      arrival_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - (real_ns - mono_ns);
    }
  }
  if (c->raw_bytes > 0) {
    c->raw_in += n;
    while (c->raw_in >= c->raw_bytes) {
      c->raw_in -= c->raw_bytes;
      record(c->next_round++, arrival_ns, read_ns);
    }
    return;
  }
  /* A read carries the timestamp of the last bytes it took, so a frame is stamped when its last byte arrived. */
  if (c->pending_len == 0) {
    size_t used = parse_frames(c->fd, buf, n, arrival_ns, read_ns);
    if (used < (size_t)n) {
      c->pending = malloc(n - used);
      memcpy(c->pending, buf + used, n - used);
      c->pending_len = n - used;
    }
    return;
  }
  c->pending = realloc(c->pending, c->pending_len + n);
  memcpy(c->pending + c->pending_len, buf, n);
  c->pending_len += n;
  parse_pending(c, arrival_ns, read_ns);
}

static void command(char *line) {
  char a[256], b[32], p[1024], t[512];
  if (sscanf(line, "device %255s %31s %1023s %511s", a, b, p, t) == 4) {
    Conn *c = add_conn(connect_to(a, b));
    handshake(c, a, b, p, t);
    if (c->pending_len > 0) {
      int64_t now = clock_ns(CLOCK_MONOTONIC);
      parse_pending(c, now, now);
    }
  } else if (sscanf(line, "tcp %255s %31s %1023s", a, b, p) == 3) {
    Conn *c = add_conn(connect_to(a, b));
    c->raw_bytes = atoi(p);
  } else if (strcmp(line, "sync") == 0) {
    printf("connected %zu\n", nconns);
  } else if (strcmp(line, "collect") == 0) {
    for (size_t i = 0; i < nsamples; i++) printf("s %ld %lld %lld\n", samples[i].offset, (long long)samples[i].arrival_ns, (long long)samples[i].read_ns);
    printf("end\n");
    nsamples = 0;
    memset(complete_count, 0, capcount * sizeof(int));
  } else if (strcmp(line, "close") == 0) {
    exit(0);
  } else if (line[0]) {
    fprintf(stderr, "device-reader: unknown command: %s\n", line);
    exit(2);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  ack_events = argc > 1 && strcmp(argv[1], "--ack") == 0;
  epfd = epoll_create1(0);
  if (epfd < 0) die("epoll_create1");
  struct epoll_event in = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &in) != 0) die("epoll_ctl stdin");
  char line[4096];
  size_t line_len = 0;
  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(epfd, events, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 != UINT64_MAX) {
        on_readable(&conns[events[i].data.u64]);
        continue;
      }
      ssize_t r = read(0, line + line_len, sizeof line - 1 - line_len);
      if (r <= 0) exit(0); /* the benchmark went away */
      line_len += r;
      char *start = line, *nl;
      while ((nl = memchr(start, '\n', line + line_len - start))) {
        *nl = 0;
        command(start);
        start = nl + 1;
      }
      line_len = line + line_len - start;
      memmove(line, start, line_len);
    }
  }
}
