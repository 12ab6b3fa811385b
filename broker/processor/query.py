"""Queue offsets and message lookup: GET_MAX_OFFSET, GET_MIN_OFFSET,
GET_EARLIEST_MSG_STORETIME, SEARCH_OFFSET_BY_TIMESTAMP, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID
(docs/spec/remoting.md §9.4, §9.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


class QueryProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        for code, handler in (
            (RequestCode.GET_MAX_OFFSET, self.max_offset),
            (RequestCode.GET_MIN_OFFSET, self.min_offset),
            (RequestCode.GET_EARLIEST_MSG_STORETIME, self.earliest_time),
            (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset),
            (RequestCode.QUERY_MESSAGE, self.query_message),
            (RequestCode.VIEW_MESSAGE_BY_ID, self.view_message),
        ):
            server.register(code, handler)

    def max_offset(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetMaxOffsetRequestHeader, request.ext_fields)
        offset = self.broker.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return request.make_response(ext_fields={"offset": str(offset)})

    def min_offset(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetMinOffsetRequestHeader, request.ext_fields)
        offset = max(0, self.broker.store.get_min_offset_in_queue(header.topic, header.queue_id))
        return request.make_response(ext_fields={"offset": str(offset)})

    def earliest_time(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(GetEarliestMsgStoretimeRequestHeader, request.ext_fields)
        timestamp = self.broker.store.get_earliest_message_time(header.topic, header.queue_id)
        return request.make_response(ext_fields={"timestamp": str(timestamp)})

    def search_offset(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(SearchOffsetRequestHeader, request.ext_fields)
        offset = self.broker.store.get_offset_in_queue_by_time(
            header.topic, header.queue_id, header.timestamp
        )
        return request.make_response(ext_fields={"offset": str(offset)})

    def query_message(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(QueryMessageRequestHeader, request.ext_fields)
        max_num = header.max_num
        if request.ext(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = self.broker.store_config.default_query_max_num
        result = self.broker.store.query_message(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        ext = {
            "indexLastUpdateTimestamp": str(result.index_last_update_timestamp),
            "indexLastUpdatePhyoffset": str(result.index_last_update_phyoffset),
        }
        if not result.buffers:
            return request.make_response(
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
                ext,
            )
        return request.make_response(ext_fields=ext, body=b"".join(result.buffers))

    def view_message(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(ViewMessageRequestHeader, request.ext_fields)
        record = self.broker.store.look_message_by_offset(header.offset)
        if record is None:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}"
            )
        return request.make_response(body=bytes(record))
