/* The sender's thread and what it runs: never the GIL, never a Python object; only the
 * buffers' buf/len, under the Sender's mutex or on chunks it has taken off the lists. */
#include "sender.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------------ lists (mutex held) */

void sender_push_ready(Sender *s, conn *c) {
    if (c->queued || c->busy || c->blocked) return;
    c->queued = 1;
    c->next_ready = NULL;
    if (s->ready_tail) s->ready_tail->next_ready = c;
    else s->ready_head = c;
    s->ready_tail = c;
    /* stored atomically: Sender_kick peeks at it without the mutex (sender.c) */
    __atomic_store_n(&s->nready, s->nready + 1, __ATOMIC_RELAXED);
}

conn *sender_pop_ready(Sender *s) {
    conn *c = s->ready_head;
    if (!c) return NULL;
    s->ready_head = c->next_ready;
    if (!s->ready_head) s->ready_tail = NULL;
    c->queued = 0;
    __atomic_store_n(&s->nready, s->nready - 1, __ATOMIC_RELAXED);
    return c;
}

void sender_to_done(Sender *s, chunk *first) {
    while (first) {
        chunk *next = first->next;
        first->next = s->done;
        /* stored atomically: release_done peeks at it without the mutex (sender.c) */
        __atomic_store_n(&s->done, first, __ATOMIC_RELAXED);
        first = next;
    }
}

void sender_wake(Sender *s) {
    uint64_t one = 1;
    ssize_t rc = write(s->wake_fd, &one, sizeof one);
    (void)rc; /* a full eventfd counter still wakes the thread */
    s->sleeping = 0;
}

static void notice(Sender *s, conn *c) {
    if (c->watch_below < 0) return;
    if (c->pending > c->watch_below && !c->err) return;
    c->watch_below = -1;
    if (s->nnotices == s->cap_notices) {
        int cap = s->cap_notices ? s->cap_notices * 2 : 16;
        int *grown = realloc(s->notices, sizeof(int) * (size_t)cap);
        if (!grown) return; /* the writer re-checks pending when it next sends */
        s->notices = grown;
        s->cap_notices = cap;
    }
    s->notices[s->nnotices++] = c->id;
    uint64_t one = 1;
    ssize_t rc = write(s->notice_fd, &one, sizeof one);
    (void)rc;
}

/* The thread's end of a removed connection: drop what is left, close its descriptor (ours
 * since remove()). */
static void finalize(Sender *s, conn *c) {
    sender_to_done(s, c->head);
    c->head = c->tail = NULL;
    if (c->in_epoll) epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->blocked) s->nblocked--;
    if (c->owns_fd) close(c->fd);
    s->slots[c->id] = NULL;
    free(c);
}

/* ------------------------------------------------------------------ writing (no mutex) */

typedef struct {
    chunk *sent, *left; /* fully written chunks; the rest, first one possibly part-written */
    Py_ssize_t bytes;
    int err, again;
} outcome;

static outcome write_chunks(int fd, chunk *list) {
    outcome out = {NULL, list, 0, 0, 0};
    chunk **sent_tail = &out.sent;
    struct iovec iov[MAX_IOV];
    while (out.left) {
        int n = 0;
        for (chunk *ch = out.left; ch && n < MAX_IOV; ch = ch->next) {
            for (Py_ssize_t i = ch->index; i < ch->nbuf && n < MAX_IOV; i++) {
                Py_ssize_t skip = i == ch->index ? ch->offset : 0;
                iov[n].iov_base = (char *)ch->bufs[i].buf + skip;
                iov[n].iov_len = (size_t)(ch->bufs[i].len - skip);
                n++;
            }
        }
        struct msghdr msg = {0};
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)n;
        ssize_t wrote = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (wrote < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) out.again = 1;
            else out.err = errno;
            break;
        }
        out.bytes += wrote;
        while (out.left && wrote > 0) {
            chunk *ch = out.left;
            Py_ssize_t rest = ch->bufs[ch->index].len - ch->offset;
            if (wrote < rest) {
                ch->offset += wrote;
                break;
            }
            wrote -= rest;
            ch->index++;
            ch->offset = 0;
            if (ch->index == ch->nbuf) {
                out.left = ch->next;
                ch->next = NULL;
                *sent_tail = ch;
                sent_tail = &ch->next;
            }
        }
    }
    return out;
}

/* Take a ready connection's chunks (mutex held), write them (mutex released), settle. */
void sender_service(Sender *s, conn *c, int on_thread) {
    chunk *list = c->head;
    c->head = c->tail = NULL;
    c->busy = 1;
    pthread_mutex_unlock(&s->mu);
    outcome out = write_chunks(c->fd, list);
    pthread_mutex_lock(&s->mu);
    c->busy = 0;
    sender_to_done(s, out.sent);
    c->pending -= out.bytes;
    if (out.left) {
        chunk *last = out.left;
        while (last->next) last = last->next;
        last->next = c->head;
        c->head = out.left;
        if (!c->tail) c->tail = last;
    }
    if (out.err && !c->err) {
        c->err = out.err;
        sender_to_done(s, c->head);
        c->head = c->tail = NULL;
        c->pending = 0;
    }
    if (c->closing) {
        if (on_thread) finalize(s, c);
        else {
            sender_push_ready(s, c);
            sender_wake(s);
        }
        return;
    }
    if (out.again && c->head) {
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.ptr = c};
        int rc = epoll_ctl(s->epfd, c->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
        if (rc == 0) {
            c->in_epoll = 1;
            c->blocked = 1;
            s->nblocked++;
            if (!on_thread && s->sleeping) sender_wake(s); /* it must wait for this one too */
        } else {
            c->err = errno;
            sender_to_done(s, c->head);
            c->head = c->tail = NULL;
            c->pending = 0;
        }
    } else if (c->head) {
        sender_push_ready(s, c);
    }
    notice(s, c);
}

void *sender_run_thread(void *arg) {
    Sender *s = arg;
    struct epoll_event evs[MAX_EVENTS];
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->stopping) {
            /* One last pass: what the kernel takes now still leaves. */
            conn *c;
            while ((c = sender_pop_ready(s)) != NULL) sender_service(s, c, 1);
            break;
        }
        if (s->nready == 0 || s->nblocked > 0) {
            int timeout = s->nready == 0 ? -1 : 0;
            s->sleeping = timeout != 0;
            pthread_mutex_unlock(&s->mu);
            int n = epoll_wait(s->epfd, evs, MAX_EVENTS, timeout);
            pthread_mutex_lock(&s->mu);
            s->sleeping = 0;
            for (int i = 0; i < n; i++) {
                conn *c = evs[i].data.ptr;
                if (c == NULL) {
                    uint64_t count;
                    ssize_t rc = read(s->wake_fd, &count, sizeof count);
                    (void)rc;
                } else if (c->blocked) {
                    c->blocked = 0;
                    s->nblocked--;
                    sender_push_ready(s, c);
                }
            }
            if (n > 0 || s->nready == 0) continue;
        }
        conn *c = sender_pop_ready(s);
        if (c) sender_service(s, c, 1);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
