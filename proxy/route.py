"""QueryRoute's pure half: a NameServer TopicRouteData as the 5.x MessageQueues an SDK sees
(RouteActivity.genMessageQueueFromQueueData): per broker group, read-only queues first, then
write-only, then read-write, ids counted across them; every queue is reached through the proxy
(cluster mode), so a Broker's endpoints are the ones the SDK dialled."""

from __future__ import annotations

from proxy.apis import definition_pb2 as pb
from remoting import constants as K
from remoting.body import TopicRouteData

MASTER_ID = 0
MIXED = (
    pb.MessageType.NORMAL,
    pb.MessageType.FIFO,
    pb.MessageType.DELAY,
    pb.MessageType.TRANSACTION,
)


def accepted(topic_type: str) -> tuple[int, ...]:
    """RouteActivity.parseTopicMessageType: what a topic of that message.type accepts."""
    if topic_type == "MIXED":
        return MIXED
    if topic_type in ("NORMAL", "FIFO", "DELAY", "TRANSACTION"):
        return (pb.MessageType.Value(topic_type),)
    return (pb.MessageType.MESSAGE_TYPE_UNSPECIFIED,)


def _queues(
    topic: pb.Resource,
    broker: pb.Broker,
    perm: int,
    reads: int,
    writes: int,
    types: tuple[int, ...],
):
    readable, writable = K.is_readable(perm), K.is_writeable(perm)
    r = w = rw = n = 0
    if readable and writable:
        rw = min(writes, reads)
        r, w = reads - rw, writes - rw
    elif writable:
        w = writes
    elif readable:
        r = reads
    else:
        n = max(1, writes, reads)
    kinds = [
        (r, pb.Permission.READ),
        (w, pb.Permission.WRITE),
        (rw, pb.Permission.READ_WRITE),
        (n, pb.Permission.NONE),
    ]
    queue_id = 0
    for count, permission in kinds:
        for _ in range(count):
            yield pb.MessageQueue(
                topic=topic,
                id=queue_id,
                permission=permission,
                broker=broker,
                accept_message_types=types,
            )
            queue_id += 1


def message_queues(
    topic: pb.Resource,
    route: TopicRouteData,
    endpoints: pb.Endpoints,
    types: tuple[int, ...] = MIXED,
) -> list[pb.MessageQueue]:
    masters = {
        data.broker_name
        for data in route.broker_datas
        if MASTER_ID in {int(k) for k in data.broker_addrs}
    }
    out: list[pb.MessageQueue] = []
    for queue_data in route.queue_datas:
        if queue_data.broker_name not in masters:
            continue
        broker = pb.Broker(name=queue_data.broker_name, id=MASTER_ID, endpoints=endpoints)
        out.extend(
            _queues(
                topic,
                broker,
                queue_data.perm,
                queue_data.read_queue_nums,
                queue_data.write_queue_nums,
                types,
            )
        )
    return out


def endpoints_of(request_endpoints: pb.Endpoints, fallback_host: str, port: int) -> pb.Endpoints:
    """The endpoints an SDK should dial for every broker: those it named in the request (the
    address it reached us by), else ours."""
    if request_endpoints.addresses:
        return request_endpoints
    return pb.Endpoints(
        scheme=pb.AddressScheme.IPv4, addresses=[pb.Address(host=fallback_host, port=port)]
    )
