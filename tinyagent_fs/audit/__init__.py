"""The audit log: the event, its writer and its reader."""
