"""One module per area of the console: cluster, topics, consumer groups, messages."""
