"""mqproxy: RocketMQ 5's Proxy in cluster mode: the gRPC ``apache.rocketmq.v2.MessagingService``
for the 5.x SDKs, served from the remoting protocol of our NameServers and brokers."""
