"""What a mutating call will do (ChangeSet), its diff, and what a person approved."""
