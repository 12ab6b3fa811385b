/* The load generator's worker in C: one connection, frames sent in turn, each response read
 * whole before the next request (a sync client), or with WINDOW > 1 up to WINDOW requests in
 * flight (how a RocketMQ client's async send and oneway pipeline): each read's answers are
 * counted and as many new requests leave in one write. On the 2-vCPU machines we measure on, the
 * Python worker's own per-request work took CPU the server needed; this one costs a send and
 * a receive. bench/loadgen.py builds it with the C compiler `make` already needs and falls back
 * to its Python worker without one.
 *
 * usage: loadgen HOST PORT DURATION_S MAX_REQUESTS FRAMES_FILE OUT_FILE [WINDOW]
 * FRAMES_FILE holds RocketMQ frames back to back (each starts with its big-endian length).
 * OUT_FILE gets five little-endian u64 (requests, errors, payload bytes, elapsed ns, number of
 * latencies), then one u32 latency in microseconds per request (windowed: from the request's
 * write to its answer, answers matched in order, as the broker answers one connection).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 1024

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int read_exact(int fd, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = recv(fd, buf + got, n - got, 0);
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

static int write_all(int fd, const unsigned char *buf, size_t n) {
    size_t put = 0;
    while (put < n) {
        ssize_t k = send(fd, buf + put, n - put, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        put += (size_t)k;
    }
    return 0;
}

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* The "code" of a JSON response header; -1 when there is none. */
static long response_code(const unsigned char *header, size_t n) {
    static const char key[] = "\"code\":";
    for (size_t i = 0; i + sizeof key - 1 < n; i++) {
        if (memcmp(header + i, key, sizeof key - 1) == 0) {
            return strtol((const char *)header + i + sizeof key - 1, NULL, 10);
        }
    }
    return -1;
}

struct run {
    int fd;
    const unsigned char *frames;
    size_t nframes, *offsets, *lengths;
    uint64_t max_requests, deadline;
    uint64_t requests, errors, payload;
    uint32_t *latencies;
    size_t lat_cap;
};

static void record(struct run *r, uint64_t t0, uint64_t t1) {
    if (r->requests == r->lat_cap) {
        r->lat_cap *= 2;
        r->latencies = realloc(r->latencies, r->lat_cap * sizeof(uint32_t));
    }
    r->latencies[r->requests++] = (uint32_t)((t1 - t0) / 1000);
}

/* Count one answer frame (starting at its length field). */
static void answer(struct run *r, const unsigned char *frame) {
    size_t length = be32(frame);
    size_t header_length = be32(frame + 4) & 0xFFFFFF;
    if (response_code(frame + 8, header_length) != 0) r->errors++;
    r->payload += length - 4 - header_length;
}

static void run_sync(struct run *r) {
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    while (r->requests < r->max_requests) {
        size_t which = r->requests % r->nframes;
        uint64_t t0 = now_ns();
        if (write_all(r->fd, r->frames + r->offsets[which], r->lengths[which]) != 0) break;
        if (read_exact(r->fd, buf, 4) != 0) break;
        size_t length = be32(buf);
        if (length + 4 > cap) {
            cap = length + 4;
            buf = realloc(buf, cap);
        }
        if (read_exact(r->fd, buf + 4, length) != 0) break;
        uint64_t t1 = now_ns();
        answer(r, buf);
        record(r, t0, t1);
        if ((r->requests & 63) == 0 && t1 > r->deadline) break;
    }
    free(buf);
}

/* Up to `window` requests in flight; after each read, as many new ones as were answered
 * leave in one write. */
static void run_windowed(struct run *r, size_t window) {
    size_t cap = 4 << 20, have = 0, out_cap = 1 << 20;
    unsigned char *buf = malloc(cap), *out = malloc(out_cap);
    uint64_t *sent_at = malloc(window * sizeof(uint64_t));
    uint64_t sent = 0, stop = r->max_requests;
    int done = 0;
    for (;;) {
        size_t out_len = 0;
        uint64_t t0 = now_ns();
        if (t0 > r->deadline) done = 1;
        while (!done && sent < stop && sent - r->requests < window) {
            size_t which = sent % r->nframes, n = r->lengths[which];
            if (out_len + n > out_cap) {
                out_cap = 2 * (out_len + n);
                out = realloc(out, out_cap);
            }
            memcpy(out + out_len, r->frames + r->offsets[which], n);
            out_len += n;
            sent_at[sent % window] = t0;
            sent++;
        }
        if (out_len && write_all(r->fd, out, out_len) != 0) break;
        if (sent == r->requests) break;
        if (have == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t k = recv(r->fd, buf + have, cap - have, 0);
        if (k <= 0) break;
        have += (size_t)k;
        uint64_t t1 = now_ns();
        size_t pos = 0;
        while (have - pos >= 4) {
            size_t length = be32(buf + pos);
            if (length + 4 > cap) {
                cap = 2 * (length + 4);
                buf = realloc(buf, cap);
            }
            if (have - pos < 4 + length) break;
            answer(r, buf + pos);
            record(r, sent_at[r->requests % window], t1);
            pos += 4 + length;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;
    }
    free(buf);
    free(out);
    free(sent_at);
}

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s HOST PORT DURATION_S MAX_REQUESTS FRAMES_FILE OUT_FILE [WINDOW]\n",
                argv[0]);
        return 2;
    }
    size_t window = argc == 8 ? strtoull(argv[7], NULL, 10) : 1;
    if (window < 1) window = 1;
    double duration_s = atof(argv[3]);
    uint64_t max_requests = strtoull(argv[4], NULL, 10);
    FILE *f = fopen(argv[5], "rb");
    if (!f) {
        perror("frames file");
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *frames = malloc((size_t)size);
    if (!frames || fread(frames, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read the frames file\n");
        return 1;
    }
    fclose(f);
    size_t nframes = 0, offsets[MAX_FRAMES], lengths[MAX_FRAMES];
    for (long pos = 0; pos + 4 <= size; nframes++) {
        if (nframes == MAX_FRAMES) {
            fprintf(stderr, "more than %d frames\n", MAX_FRAMES);
            return 1;
        }
        offsets[nframes] = (size_t)pos;
        lengths[nframes] = 4 + be32(frames + pos);
        pos += (long)lengths[nframes];
    }
    if (nframes == 0) {
        fprintf(stderr, "no frames\n");
        return 1;
    }

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    inet_pton(AF_INET, argv[1], &addr.sin_addr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("connect");
        return 1;
    }

    uint64_t started = now_ns();
    struct run r = {.fd = fd, .frames = frames, .nframes = nframes, .offsets = offsets,
                    .lengths = lengths, .max_requests = max_requests,
                    .deadline = started + (uint64_t)(duration_s * 1e9), .lat_cap = 1 << 16};
    r.latencies = malloc(r.lat_cap * sizeof(uint32_t));
    if (window == 1) {
        run_sync(&r);
    } else {
        run_windowed(&r, window);
    }
    uint64_t elapsed = now_ns() - started;
    close(fd);

    FILE *out = fopen(argv[6], "wb");
    if (!out) {
        perror("out file");
        return 1;
    }
    uint64_t head[5] = {r.requests, r.errors, r.payload, elapsed, r.requests};
    fwrite(head, sizeof head, 1, out);
    fwrite(r.latencies, sizeof(uint32_t), r.requests, out);
    fclose(out);
    return 0;
}
