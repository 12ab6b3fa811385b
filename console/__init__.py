"""mqconsole: a web console for the cluster (the pages rocketmq-dashboard users open daily),
its own process, talking to the cluster only through the admin client as mqadmin does."""
