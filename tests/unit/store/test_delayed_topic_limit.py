"""A delayed message is checked against the record limits with its real topic, before it is
parked in SCHEDULE_TOPIC_XXXX (Java's DefaultMessageStore.checkMessage): parked, a topic no
record can hold could never be delivered (found by the fuzzer, tests/fuzz)."""

from __future__ import annotations

from broker.store.types import PutMessageStatus
from remoting.constants import SCHEDULE_TOPIC
from tests.unit.store.conftest import StoreFactory, message


def test_a_delayed_message_whose_topic_no_record_holds_is_refused_not_parked(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    refused = store.put_message(message(topic="%RETRY%" + "G" * 121, DELAY="1"))
    assert refused.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.find_consume_queue(SCHEDULE_TOPIC, 0) is None
    assert store.put_message(message(topic="%RETRY%" + "G" * 120, DELAY="1")).ok
