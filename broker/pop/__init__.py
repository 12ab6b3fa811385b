"""5.x pop consumption (RIP-19) on the remoting protocol: POP_MESSAGE, ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, checkpoints in the revive log and the revive
service. Wire formats: docs/pop.md."""
