"""5.x timer messages: TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS, delivered at any
millisecond up to timerMaxDelaySec, rounded to timerPrecisionMs (docs/pop.md)."""
