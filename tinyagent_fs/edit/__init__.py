"""Edit planning: matching with the tolerance ladder, near-miss hints, regex edits."""
