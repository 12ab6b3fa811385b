"""The native Sender (remoting/native/sender/, module remoting._sender): connections' bytes
written by its own thread,
in order, never copied, with room reported and a removed connection's last bytes delivered;
it writes to each connection's own descriptor, and closes it itself once handed over.

Each test drives it over real socket pairs, the way Connection does: queue with send(), start
the writes with kick() (the event loop calls it before each I/O wait)."""

from __future__ import annotations

import os
import random
import select
import socket
import threading

import pytest

from remoting.sender import native_sender
from tests.kits.nativekit import needs_sender

pytestmark = needs_sender


@pytest.fixture
def sender():
    s = native_sender().Sender()
    yield s
    s.close()


def pair() -> tuple[socket.socket, socket.socket]:
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    return ours, peer


def read_all(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(1 << 20, n - got))
        assert chunk, f"EOF after {got} of {n} bytes"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def wait_notice(s, timeout_s: float = 10.0) -> list[int]:
    readable, _, _ = select.select([s.notice_fd], [], [], timeout_s)
    assert readable, "no notice from the sender's thread"
    return s.notices()


def test_each_connection_gets_its_bytes_in_order_across_many_sends(sender) -> None:
    rng = random.Random(7)
    pairs = [pair() for _ in range(4)]
    ids = [sender.add(ours) for ours, _ in pairs]
    plans, expected = [], [bytearray() for _ in pairs]
    for _ in range(3000):
        which = rng.randrange(len(pairs))
        parts = [rng.randbytes(rng.choice((0, 1, 7, 300, 5000, 70_000))) for _ in range(3)]
        plans.append((which, parts))
        expected[which] += b"".join(parts)
    received = [b""] * len(pairs)

    def read(i: int) -> None:
        received[i] = read_all(pairs[i][1], len(expected[i]))

    readers = [threading.Thread(target=read, args=(i,)) for i in range(len(pairs))]
    for t in readers:
        t.start()
    for n, (which, parts) in enumerate(plans):
        sender.send(ids[which], [parts[0], memoryview(parts[1]), bytearray(parts[2])])
        if n % rng.choice((1, 5, 50)) == 0:
            sender.kick()
    sender.kick()
    for t in readers:
        t.join(60)
    assert received == [bytes(e) for e in expected]
    assert [sender.pending(i) for i in ids] == [0, 0, 0, 0]


def test_sends_of_any_number_of_buffers_arrive_in_order(sender) -> None:
    """Chunks of a few buffers are used again for later sends (one kept spare): sends of 0 to
    40 buffers, written by write_now, kicks and the thread, arrive whole and in order."""
    rng = random.Random(11)
    ours, peer = pair()
    cid = sender.add(ours)
    plans = [[rng.randbytes(rng.choice((0, 1, 9, 200))) for _ in range(rng.choice((0, 1, 2, 8, 9, 40)))]
             for _ in range(2000)]  # fmt: skip
    expected = b"".join(b"".join(parts) for parts in plans)
    received = []
    reader = threading.Thread(target=lambda: received.append(read_all(peer, len(expected))))
    reader.start()
    for n, parts in enumerate(plans):
        queued = sender.send(cid, [bytearray(p) if n % 2 else p for p in parts])
        assert queued >= sum(map(len, parts))  # this send's bytes, and any not yet written
        if n % 3 == 0:
            sender.write_now(cid)
        elif n % 3 == 1:
            sender.kick()
    sender.kick()
    reader.join(60)
    assert received == [expected]
    # the writer thread counts its bytes off after its sendmsg returns, which the reader can
    # see first: wait for the sender to say the queue is empty
    if sender.watch(cid, 0):
        assert wait_notice(sender) == [cid]
    assert sender.pending(cid) == 0


def test_bytes_wait_for_a_peer_that_does_not_read_and_room_is_reported(sender) -> None:
    ours, peer = pair()
    cid = sender.add(ours)
    other_ours, other_peer = pair()
    other = sender.add(other_ours)
    big = random.Random(1).randbytes(8 << 20)
    assert sender.send(cid, [big]) == len(big)
    sender.kick()
    # The kernel takes a few hundred KiB; the rest waits in the sender, and meanwhile another
    # connection is still served.
    assert sender.watch(cid, 0) is True
    sender.send(other, [b"not stuck"])
    sender.kick()
    assert read_all(other_peer, 9) == b"not stuck"
    assert sender.pending(cid) > 0
    assert read_all(peer, len(big)) == big
    assert wait_notice(sender) == [cid]
    assert sender.pending(cid) == 0
    assert sender.watch(cid, 0) is False  # already there: nothing will be reported


def test_removing_a_connection_still_delivers_what_was_queued_then_closes(sender) -> None:
    ours, peer = pair()
    cid = sender.add(ours)
    sender.send(cid, [b"last ", b"words"])
    assert sender.remove(cid, ours.fileno()) is True  # no kick: remove hands it over itself
    ours.detach()  # the descriptor is the thread's now
    assert read_all(peer, 10) == b"last words"
    peer.settimeout(10)
    assert peer.recv(1) == b""  # then EOF: the thread closed it
    with pytest.raises(KeyError):
        sender.send(cid, [b"more"])


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_descriptor_is_added_per_connection(sender) -> None:
    pairs = [pair() for _ in range(50)]
    before = open_fds()
    for ours, _ in pairs:
        sender.add(ours)
    assert open_fds() == before


def test_a_reused_descriptor_number_never_gets_a_removed_connections_bytes(sender) -> None:
    ours, peer = pair()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    cid = sender.add(ours)
    fd = ours.fileno()
    sender.send(cid, [b"\x01" * (4 << 20)])  # far more than the kernel takes: it waits
    sender.kick()
    assert sender.remove(cid, fd) is True
    ours.detach()
    peer.close()  # the thread drops the rest and closes fd
    # The number comes back for new sockets once closed; whoever gets it sees only its bytes.
    for _ in range(1_000_000):  # until the thread has closed it
        new_ours, new_peer = pair()
        if fd in (new_ours.fileno(), new_peer.fileno()):
            break
        new_ours.close()
        new_peer.close()
    else:
        pytest.fail(f"descriptor {fd} was never closed by the sender's thread")
    new_cid = sender.add(new_ours if new_ours.fileno() == fd else new_peer)
    reader = new_peer if new_ours.fileno() == fd else new_ours
    sender.send(new_cid, [b"mine"])
    sender.kick()
    reader.setblocking(True)
    assert read_all(reader, 4) == b"mine"
    reader.setblocking(False)
    with pytest.raises(BlockingIOError):
        reader.recv(1)


def test_only_the_connections_own_descriptor_can_be_handed_over(sender) -> None:
    ours, _peer = pair()
    cid = sender.add(ours)
    with pytest.raises(ValueError):
        sender.remove(cid, ours.fileno() + 1000)


def test_a_failed_write_is_reported_and_later_sends_raise(sender) -> None:
    ours, peer = pair()
    cid = sender.add(ours)
    peer.close()
    with pytest.raises(OSError):
        for _ in range(1000):
            sender.send(cid, [b"x" * 4096])
            assert sender.watch(cid, 0) is True
            sender.kick()
            assert wait_notice(sender) == [cid]  # written, or failed
    assert sender.watch(cid, 0) is False


def test_buffers_are_held_until_written_not_copied(sender) -> None:
    ours, peer = pair()
    cid = sender.add(ours)
    data = bytearray(b"held until the thread has written it")
    sender.send(cid, [memoryview(data)])
    with pytest.raises(BufferError):
        data.extend(b"!")  # exported to the queued chunk
    sender.kick()
    assert read_all(peer, 36) == bytes(data)
    sender.kick()  # any call from the loop releases written chunks
    data.extend(b"!")


def test_each_call_from_the_loop_releases_written_chunks_and_an_idle_kick_writes_nothing(
    sender,
) -> None:
    """release_done and kick look at the done and ready lists without the mutex when they are
    empty: written chunks are still released by the next send as by a kick, and kicks with
    nothing queued leave later sends to be written as before."""
    ours, peer = pair()
    cid = sender.add(ours)
    for _ in range(3):
        sender.kick()  # nothing queued, nothing done
    data = bytearray(b"written, then released by a send")
    sender.send(cid, [memoryview(data)])
    written_here = sender.write_now(cid)  # alone, the thread asleep: written in this call
    if not written_here:  # the thread had not gone to sleep yet: it writes
        sender.kick()
    assert read_all(peer, len(data)) == bytes(data)
    queued = sender.send(cid, [b"!"])  # the written chunk released (by write_now or here)
    if written_here:  # (a chunk the thread wrote reaches the done list when it settles)
        assert queued == 1
        data.extend(b"?")
    sender.kick()
    assert read_all(peer, 1) == b"!"
    for _ in range(3):
        sender.kick()
    sender.send(cid, [b"later"])
    sender.kick()
    assert read_all(peer, 5) == b"later"


def test_unknown_ids_and_a_closed_sender_are_refused() -> None:
    s = native_sender().Sender()
    with pytest.raises(KeyError):
        s.send(3, [b"x"])
    ours, _peer = pair()
    cid = s.add(ours)
    s.close()
    with pytest.raises(RuntimeError):
        s.send(cid, [b"x"])
    assert s.remove(cid, ours.fileno()) is False  # closing after its server: ours to close
    ours.close()
    s.kick()


def test_send_each_queues_each_frame_as_its_own_send_and_answers_each(sender) -> None:
    """A selector round's replies in one call: each id's frame queued as send(id, (frame,))
    queues it, each answer that send's (bytes queued, or its exception), a bad item not
    stopping the others."""
    pairs = [pair() for _ in range(3)]
    ids = [sender.add(ours) for ours, _ in pairs]
    broken, broken_peer = pair()
    broken_id = sender.add(broken)
    broken_peer.close()
    with pytest.raises(OSError):
        for _ in range(1000):  # until the sender has seen the write fail
            sender.send(broken_id, [b"x" * 4096])
            sender.kick()
            if sender.watch(broken_id, 0):
                wait_notice(sender)
    frames = [b"one", memoryview(b"two!"), b"", bytearray(b"four"), b"five", 5]
    answers = sender.send_each([ids[0], ids[1], ids[2], 999, broken_id, ids[0]], frames)
    assert answers[:3] == [3, 4, 0]
    assert isinstance(answers[3], KeyError)
    assert isinstance(answers[4], OSError)
    assert isinstance(answers[5], TypeError)  # not a buffer: refused, nothing queued
    assert sender.pending(ids[0]) == 3
    sender.kick()
    assert read_all(pairs[0][1], 3) == b"one"
    assert read_all(pairs[1][1], 4) == b"two!"
    assert sender.send_each([ids[2]], [b"x"]) == [1]
    for bad in (([ids[0]], []), ((ids[0],), [b"x"]), ([ids[0]], (b"x",))):
        with pytest.raises(TypeError):
            sender.send_each(*bad)
    closed = native_sender().Sender()
    cid = closed.add(pairs[2][0])
    closed.close()
    (answer,) = closed.send_each([cid], [b"x"])
    assert isinstance(answer, RuntimeError)
