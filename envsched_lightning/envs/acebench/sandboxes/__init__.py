"""ACEBench-Agent's stateful sandboxes: the phone (messages, reminders, food delivery) and travel APIs."""
