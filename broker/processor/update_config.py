"""UPDATE_BROKER_CONFIG: the request's body is ``key=value`` lines (Java properties); see
broker/config_update.py for what changes when."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.config import ConfigError
from broker.config_update import update_running_broker
from remoting import properties
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.runtime_config import BlackListedKeys

if TYPE_CHECKING:
    from broker.controller import BrokerController


class UpdateBrokerConfigProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.UPDATE_BROKER_CONFIG, self.handle)

    async def handle(self, connection: Any, request: RemotingCommand) -> RemotingCommand:
        try:
            changes = properties.loads(bytes(request.body).decode("utf-8"))
        except (UnicodeDecodeError, properties.PropertiesError) as exc:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR, f"string2Properties error: {exc}"
            )
        if not changes:
            return request.make_response()
        try:
            update = await update_running_broker(self.broker, changes)
        except BlackListedKeys as exc:  # Java's code; its remark with the keys
            return request.error_response(ResponseCode.NO_PERMISSION, str(exc))
        except ConfigError as exc:
            return request.error_response(ResponseCode.SYSTEM_ERROR, str(exc))
        except OSError as exc:
            return request.error_response(
                ResponseCode.SYSTEM_ERROR,
                f"cannot write {self.broker.runtime.path}: {exc}; nothing was changed",
            )
        parts = []
        if update.live:
            parts.append(f"applied: {', '.join(update.live)}")
        if update.at_restart:
            parts.append(f"stored, applied at the next start: {', '.join(update.at_restart)}")
        return request.make_response(remark="; ".join(parts) or None)
