"""raftcron client kit: verify dispatches and fence writes (raftcron.fence)."""
