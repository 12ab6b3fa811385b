"""Telemetry's settings answer (pure): what a client reported, with the proxy's policy merged
in, as GrpcClientSettingsManager does. The SDKs block at start-up until this answer arrives."""

from __future__ import annotations

from google.protobuf import duration_pb2

from client.consumer import MessageSelector, subscription
from proxy.apis import definition_pb2 as pb
from proxy.config import ProxyConfig
from remoting.body import ConsumerData, ConsumeType, SubscriptionGroupConfig
from remoting.names import group_problem, topic_problem

# Consumers: RocketMQ's default subscription group (16 retries, the 4.x delay levels from the
# 10 s level on); ProxyConfig's long-polling figures.
CONSUMER_MAX_ATTEMPTS = 17
RETRY_DELAYS_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
# A known group's retry policy: 5.x's default CustomizedRetryPolicy (our groups carry no
# groupRetryPolicy), 1 s for a first failure
GROUP_RETRY_DELAYS_S = (1, 5, *RETRY_DELAYS_S)
LONG_POLLING_BATCH = 32
LONG_POLLING_TIMEOUT_S = 20
MAX_SUBSCRIPTIONS = 256


def _ms(value: int) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromMilliseconds(value)
    return duration


def max_attempts(group: SubscriptionGroupConfig | None) -> int:
    """retryMaxTimes + 1, kept within a protobuf int32 and at least one delivery."""
    if group is None:
        return CONSUMER_MAX_ATTEMPTS
    return max(1, min(group.retry_max_times + 1, 2**31 - 1))


def merge_settings(
    reported: pb.Settings, config: ProxyConfig, group: SubscriptionGroupConfig | None = None
) -> pb.Settings:
    """``group``: a consumer's subscription group config (None: unknown, the client's own
    ``fifo`` stands), as GrpcClientSettingsManager.mergeSubscriptionData."""
    settings = pb.Settings()
    settings.CopyFrom(reported)
    settings.metric.CopyFrom(pb.Metric(on=False))  # no OTLP collector behind this proxy
    if reported.client_type == pb.ClientType.PRODUCER or reported.HasField("publishing"):
        settings.backoff_policy.CopyFrom(
            pb.RetryPolicy(
                max_attempts=config.grpc_client_producer_max_attempts,
                exponential_backoff=pb.ExponentialBackoff(
                    initial=_ms(config.grpc_client_producer_backoff_initial_millis),
                    max=_ms(config.grpc_client_producer_backoff_max_millis),
                    multiplier=config.grpc_client_producer_backoff_multiplier,
                ),
            )
        )
        settings.publishing.validate_message_type = config.enable_topic_message_type_check
        settings.publishing.max_body_size = config.max_message_size
        return settings
    delays = RETRY_DELAYS_S if group is None else GROUP_RETRY_DELAYS_S
    settings.backoff_policy.CopyFrom(
        pb.RetryPolicy(
            max_attempts=max_attempts(group),
            customized_backoff=pb.CustomizedBackoff(next=[_ms(s * 1000) for s in delays]),
        )
    )
    subscription = settings.subscription
    subscription.receive_batch_size = LONG_POLLING_BATCH
    subscription.long_polling_timeout.CopyFrom(_ms(LONG_POLLING_TIMEOUT_S * 1000))
    if group is not None:
        subscription.fifo = group.consume_message_orderly
    elif not subscription.HasField("fifo"):
        subscription.fifo = False
    return settings


def consumer_data(settings: pb.Settings) -> ConsumerData | None:
    """What the brokers hear of a 5.x consumer group (RocketMQ's ClientActivity: CONSUME_POP,
    clustering); None for producers or a settings without a valid group."""
    if not settings.HasField("subscription"):
        return None
    group = settings.subscription.group.name
    if not group or group_problem(group):
        return None
    subscriptions = []
    for entry in settings.subscription.subscriptions[:MAX_SUBSCRIPTIONS]:
        if topic_problem(entry.topic.name):
            continue
        expression = entry.expression.expression or "*"
        if entry.expression.type == pb.FilterType.SQL:
            subscriptions.append(subscription(entry.topic.name, MessageSelector.by_sql(expression)))
        else:
            subscriptions.append(subscription(entry.topic.name, expression))
    return ConsumerData(
        group_name=group,
        consume_type=ConsumeType.CONSUME_POP,
        subscription_data_set=subscriptions,
    )
