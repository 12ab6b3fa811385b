/* The bytes objects a scanned command carries (its body and its header, send_scan.c), made
 * again from the ones the last commands carried once nothing else holds them.
 *
 * A lone send's read is copied out of the module's read buffer into a new bytes object for its
 * body (1 KiB in the peers' harness: above pymalloc's 512 bytes and glibc's tcache, so a
 * malloc and a free of ~500 instructions a request, and new cache lines each time) and one for
 * its header. The command is gone before the connection's next read (the store copies the body
 * into the CommitLog), so the same objects can take the next request's bytes: a pool holds one
 * reference to each object it made, and hands an object out again only when that reference is
 * the only one left (Py_REFCNT 1: no command, memoryview, buffer export, store queue or
 * anything else can see it, so writing its bytes changes nothing anyone can observe; its
 * cached hash is reset as a new object's is). An object still held elsewhere is never touched:
 * the pool makes a new one, as before. Sizes must match exactly. Empty and one-byte bytes are
 * CPython's shared singletons and are never pooled, nor is anything above BYTES_POOL_MAX, so
 * the pool keeps at most BYTES_POOL objects of that size alive between requests. Builds
 * without the GIL keep no pool: a reference count read there proves nothing. */
#include "codec.h"
#include <string.h>

static int poolable(Py_ssize_t n) {
#ifdef Py_GIL_DISABLED
    return 0;
#else
    return n > 1 && n <= BYTES_POOL_MAX;
#endif
}

PyObject *reused_bytes(BytesPool *pool, const unsigned char *p, Py_ssize_t n) {
    if (!poolable(n)) return PyBytes_FromStringAndSize((const char *)p, n);
    for (int i = 0; i < BYTES_POOL; i++) {
        PyObject *b = pool->items[i];
        if (b != NULL && Py_REFCNT(b) == 1 && Py_SIZE(b) == n) {
            memcpy(PyBytes_AS_STRING(b), p, (size_t)n);
            /* as a new object's: not hashed yet (the field is deprecated, not gone) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
            ((PyBytesObject *)b)->ob_shash = -1;
#pragma GCC diagnostic pop
            return Py_NewRef(b);
        }
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)p, n);
    if (b != NULL) { /* the slot's old object, when nothing else holds it, is freed here */
        Py_XSETREF(pool->items[pool->next], Py_NewRef(b));
        pool->next = (pool->next + 1) % BYTES_POOL;
    }
    return b;
}
