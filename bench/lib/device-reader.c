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
 * The same process reads the peers the gateway is compared with, so every kind is read alike:
 *   - MQTT 3.1.1 (Mosquitto): CONNECT (clean session, no keep-alive), SUBSCRIBE at QoS 0 to one topic, then
 *     PUBLISH packets;
 *   - NATS (core, and JetStream push consumers that deliver to a subject): the text protocol, `SUB` to one
 *     subject, `MSG`/`HMSG` read, `PING` answered with `PONG`, JetStream flow-control requests (HMSG status 100
 *     with a reply subject) answered with an empty message to the reply subject, idle heartbeats ignored (a
 *     stalled-consumer heartbeat is answered like flow control).
 * Their payloads carry the same `{"type":"event","offset":N,...` prefix as the gateway's frames, and N is read
 * from it the same way.
 *
 * With --ack, every device acknowledges every event frame at once, as firmware does: it answers with a masked
 * {"type":"ack","offset":N} text frame as soon as the frame is parsed.
 * With --pong, every device answers the server's WebSocket ping control frames with a pong, as any RFC 6455
 * client library does, so the server keeps a device that never acknowledges connected past its silence timeout.
 *
 * Commands, one per line on stdin:
 *   device HOST PORT PATH TOKEN   open a device stream (WebSocket handshake with a bearer token)
 *   tcp HOST PORT BYTES           open a plain TCP socket; every BYTES bytes read count as one numbered round
 *   mqtt HOST PORT TOPIC          open an MQTT 3.1.1 session subscribed to TOPIC at QoS 0 (answers once SUBACK came)
 *   nats HOST PORT SUBJECT        open a NATS connection subscribed to SUBJECT (answers once the server's PONG
 *                                 confirmed the SUB)
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

enum Kind { KIND_DEVICE, KIND_TCP, KIND_MQTT, KIND_NATS };

typedef struct {
  int fd;
  enum Kind kind;
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
static int answer_pings; /* --pong: answer WebSocket ping control frames on device sockets */

static void die(const char *what) {
  fprintf(stderr, "device-reader: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void write_all(int fd, const void *data, size_t len) {
  /* Small answers into a socket whose peer keeps reading: the blocking write does not wait. */
  if (write(fd, data, len) != (ssize_t)len) die("write");
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

/* Keeps buf[from..len) as the connection's pending bytes. */
static void keep_rest(Conn *c, const unsigned char *buf, size_t from, size_t len) {
  if (from >= len) return;
  c->pending = malloc(len - from);
  memcpy(c->pending, buf + from, len - from);
  c->pending_len = len - from;
}

/* MQTT 3.1.1: CONNECT (clean session, keep-alive off), CONNACK, SUBSCRIBE QoS 0 to `topic`, SUBACK (blocking). */
static void mqtt_handshake(Conn *c, const char *topic) {
  static unsigned long sessions;
  char client_id[64];
  int id_len = snprintf(client_id, sizeof client_id, "bench-%d-%lu", (int)getpid(), ++sessions);
  unsigned char out[1200];
  size_t n = 0, topic_len = strlen(topic);
  /* CONNECT */
  out[n++] = 0x10;
  out[n++] = (unsigned char)(10 + 2 + id_len);
  memcpy(out + n, "\x00\x04MQTT\x04\x02\x00\x00", 10);
  n += 10;
  out[n++] = 0;
  out[n++] = (unsigned char)id_len;
  memcpy(out + n, client_id, id_len);
  n += id_len;
  /* SUBSCRIBE, packet id 1 */
  size_t rem = 2 + 2 + topic_len + 1;
  out[n++] = 0x82;
  if (rem > 127 || topic_len > 1000) {
    fprintf(stderr, "device-reader: MQTT topic too long\n");
    exit(1);
  }
  out[n++] = (unsigned char)rem;
  out[n++] = 0;
  out[n++] = 1;
  out[n++] = (unsigned char)(topic_len >> 8);
  out[n++] = (unsigned char)topic_len;
  memcpy(out + n, topic, topic_len);
  n += topic_len;
  out[n++] = 0;
  write_all(c->fd, out, n);
  /* CONNACK (4 bytes) then SUBACK (5 bytes) */
  unsigned char in[256];
  size_t got = 0;
  while (got < 9) {
    ssize_t r = read(c->fd, in + got, sizeof in - got);
    if (r <= 0) die("mqtt handshake read");
    got += r;
  }
  if (in[0] != 0x20 || in[3] != 0 || in[4] != 0x90 || in[8] > 2) {
    fprintf(stderr, "device-reader: MQTT broker refused the session or the subscription\n");
    exit(1);
  }
  keep_rest(c, in, 9, got);
}

/* NATS: INFO, then CONNECT, SUB and PING; the PONG confirms the subscription is in place (blocking). */
static void nats_handshake(Conn *c, const char *subject) {
  char out[1400];
  int n = snprintf(out, sizeof out,
                   "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1,"
                   "\"lang\":\"c\",\"version\":\"bench\"}\r\nSUB %s 1\r\nPING\r\n",
                   subject);
  write_all(c->fd, out, n);
  unsigned char in[16384];
  size_t got = 0;
  for (;;) {
    ssize_t r = read(c->fd, in + got, sizeof in - 1 - got);
    if (r <= 0) die("nats handshake read");
    got += r;
    /* The server's INFO comes first; the answer to our PING is the first PONG line. */
    const unsigned char *pong = memmem(in, got, "\r\nPONG\r\n", 8);
    if (pong) {
      keep_rest(c, in, pong + 8 - in, got);
      return;
    }
    const unsigned char *err = memmem(in, got, "-ERR", 4);
    if (err) {
      fprintf(stderr, "device-reader: NATS server refused: %.*s\n", (int)(got - (err - in)), err);
      exit(1);
    }
    if (got >= sizeof in - 1) {
      fprintf(stderr, "device-reader: no PONG from the NATS server\n");
      exit(1);
    }
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

/* Sends one short frame (payload of at most 125 bytes) on a device socket, masked as every client frame must be. */
static void send_masked(int fd, unsigned char first_byte, const unsigned char *payload, int len) {
  static uint32_t seed = 0x9e3779b9;
  unsigned char frame[6 + 125];
  seed = seed * 1664525 + 1013904223;
  unsigned char mask[4] = {seed >> 24, seed >> 16, seed >> 8, seed};
  frame[0] = first_byte;
  frame[1] = 0x80 | len;
  memcpy(frame + 2, mask, 4);
  for (int i = 0; i < len; i++) frame[6 + i] = payload[i] ^ mask[i % 4];
  /* A few dozen bytes into a socket whose peer keeps reading: the blocking write does not wait. */
  if (write(fd, frame, 6 + len) != 6 + len) die("device write");
}

/* Sends {"type":"ack","offset":N}. */
static void send_ack(int fd, long offset) {
  char payload[48];
  int len = snprintf(payload, sizeof payload, "{\"type\":\"ack\",\"offset\":%ld}", offset);
  send_masked(fd, 0x81 /* FIN, text */, (const unsigned char *)payload, len);
}

/* The offset N of a payload that starts with {"type":"event","offset":N; -1 for any other payload. */
static long event_offset(const unsigned char *payload, size_t plen) {
  size_t prefix = sizeof EVENT_PREFIX - 1;
  if (plen <= prefix || memcmp(payload, EVENT_PREFIX, prefix) != 0) return -1;
  long offset = 0;
  for (size_t i = prefix; i < plen && payload[i] >= '0' && payload[i] <= '9'; i++) offset = offset * 10 + (payload[i] - '0');
  return offset;
}

/* Parses complete unmasked server frames in buf (received on fd); returns the bytes consumed. */
static size_t parse_ws(int fd, const unsigned char *buf, size_t len, int64_t arrival_ns, int64_t read_ns) {
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
    long offset = opcode == 1 ? event_offset(payload, plen) : -1;
    if (offset >= 0) {
      record(offset, arrival_ns, read_ns);
      if (ack_events) send_ack(fd, offset);
    } else if (opcode == 9 && answer_pings && plen <= 125) {
      send_masked(fd, 0x8a /* FIN, pong */, payload, (int)plen);
    }
    pos += header + plen;
  }
  return pos;
}

/* Parses complete MQTT packets (PUBLISH at QoS 0 or higher; others skipped); returns the bytes consumed. */
static size_t parse_mqtt(const unsigned char *buf, size_t len, int64_t arrival_ns, int64_t read_ns) {
  size_t pos = 0;
  while (len - pos >= 2) {
    uint64_t rem = 0;
    size_t i = 1;
    int complete = 0;
    for (int shift = 0; i < 5 && pos + i < len; i++, shift += 7) {
      rem |= (uint64_t)(buf[pos + i] & 0x7f) << shift;
      if (!(buf[pos + i] & 0x80)) {
        complete = 1;
        i++;
        break;
      }
    }
    if (!complete) break;
    if (len - pos < i + rem) break;
    const unsigned char *body = buf + pos + i;
    if ((buf[pos] >> 4) == 3 && rem >= 2) { /* PUBLISH */
      size_t topic_len = ((size_t)body[0] << 8) | body[1];
      size_t skip = 2 + topic_len + (((buf[pos] >> 1) & 3) ? 2 : 0);
      if (skip <= rem) {
        long offset = event_offset(body + skip, rem - skip);
        if (offset >= 0) record(offset, arrival_ns, read_ns);
      }
    }
    pos += i + rem;
  }
  return pos;
}

/* Splits a NATS protocol line (without CRLF) into at most 8 space-separated tokens. */
static int nats_tokens(char *line, char **tokens) {
  int n = 0;
  for (char *t = strtok(line, " \t"); t && n < 8; t = strtok(NULL, " \t")) tokens[n++] = t;
  return n;
}

/* Publishes an empty message to `subject` (the answer to a JetStream flow-control request). */
static void nats_reply_empty(int fd, const char *subject, size_t len) {
  char out[600];
  int n = snprintf(out, sizeof out, "PUB %.*s 0\r\n\r\n", (int)len, subject);
  write_all(fd, out, n);
}

/* Parses complete NATS protocol messages; answers PING and flow control; returns the bytes consumed. */
static size_t parse_nats(int fd, const unsigned char *buf, size_t len, int64_t arrival_ns, int64_t read_ns) {
  size_t pos = 0;
  while (pos < len) {
    const unsigned char *eol = memmem(buf + pos, len - pos, "\r\n", 2);
    if (!eol) break;
    size_t line_len = eol - (buf + pos);
    size_t after_line = pos + line_len + 2;
    char line[1024];
    if (line_len >= sizeof line) {
      fprintf(stderr, "device-reader: NATS protocol line too long\n");
      exit(1);
    }
    memcpy(line, buf + pos, line_len);
    line[line_len] = 0;
    if (strncmp(line, "MSG ", 4) == 0 || strncmp(line, "HMSG ", 5) == 0) {
      int headers = line[0] == 'H';
      char *tok[8];
      int n = nats_tokens(line, tok);
      /* MSG subject sid [reply] size / HMSG subject sid [reply] hdrlen totlen */
      int base = headers ? 5 : 4;
      if (n != base && n != base + 1) {
        fprintf(stderr, "device-reader: bad NATS message line\n");
        exit(1);
      }
      const char *reply = n == base + 1 ? tok[3] : NULL;
      size_t total = strtoul(tok[n - 1], NULL, 10);
      size_t hdr = headers ? strtoul(tok[n - 2], NULL, 10) : 0;
      if (len - after_line < total + 2) break;
      const unsigned char *h = buf + after_line;
      /* A status message (NATS/1.0 100 ...): flow-control request or idle heartbeat, no payload. */
      if (headers && hdr >= 12 && memcmp(h, "NATS/1.0 100", 12) == 0) {
        if (reply) nats_reply_empty(fd, reply, strlen(reply));
        const char stalled[] = "Nats-Consumer-Stalled: ";
        const unsigned char *st = memmem(h, hdr, stalled, sizeof stalled - 1);
        if (st) {
          const unsigned char *v = st + sizeof stalled - 1;
          const unsigned char *ve = memmem(v, h + hdr - v, "\r\n", 2);
          if (ve) nats_reply_empty(fd, (const char *)v, ve - v);
        }
      } else {
        long offset = event_offset(h + hdr, total - hdr);
        if (offset >= 0) record(offset, arrival_ns, read_ns);
      }
      pos = after_line + total + 2;
      continue;
    }
    if (strcmp(line, "PING") == 0) write_all(fd, "PONG\r\n", 6);
    else if (strncmp(line, "-ERR", 4) == 0) fprintf(stderr, "device-reader: NATS server: %s\n", line);
    /* PONG, +OK, INFO: nothing to do. */
    pos = after_line;
  }
  return pos;
}

static size_t parse_frames(Conn *c, const unsigned char *buf, size_t len, int64_t arrival_ns, int64_t read_ns) {
  switch (c->kind) {
    case KIND_MQTT:
      return parse_mqtt(buf, len, arrival_ns, read_ns);
    case KIND_NATS:
      return parse_nats(c->fd, buf, len, arrival_ns, read_ns);
    default:
      return parse_ws(c->fd, buf, len, arrival_ns, read_ns);
  }
}

/* Parses the complete frames among the bytes kept from earlier reads, keeping the incomplete rest. */
static void parse_pending(Conn *c, int64_t arrival_ns, int64_t read_ns) {
  size_t used = parse_frames(c, c->pending, c->pending_len, arrival_ns, read_ns);
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
    size_t used = parse_frames(c, buf, n, arrival_ns, read_ns);
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

/* Bytes that arrived with a handshake's answer (a first frame or message) are read as if just arrived. */
static void parse_handshake_leftover(Conn *c) {
  if (c->pending_len == 0) return;
  int64_t now = clock_ns(CLOCK_MONOTONIC);
  parse_pending(c, now, now);
}

static void command(char *line) {
  char a[256], b[32], p[1024], t[512];
  if (sscanf(line, "device %255s %31s %1023s %511s", a, b, p, t) == 4) {
    Conn *c = add_conn(connect_to(a, b));
    handshake(c, a, b, p, t);
    parse_handshake_leftover(c);
  } else if (sscanf(line, "tcp %255s %31s %1023s", a, b, p) == 3) {
    Conn *c = add_conn(connect_to(a, b));
    c->kind = KIND_TCP;
    c->raw_bytes = atoi(p);
  } else if (sscanf(line, "mqtt %255s %31s %1023s", a, b, p) == 3) {
    Conn *c = add_conn(connect_to(a, b));
    c->kind = KIND_MQTT;
    mqtt_handshake(c, p);
    parse_handshake_leftover(c);
  } else if (sscanf(line, "nats %255s %31s %1023s", a, b, p) == 3) {
    Conn *c = add_conn(connect_to(a, b));
    c->kind = KIND_NATS;
    nats_handshake(c, p);
    parse_handshake_leftover(c);
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
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--ack") == 0) ack_events = 1;
    else if (strcmp(argv[i], "--pong") == 0) answer_pings = 1;
  }
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
