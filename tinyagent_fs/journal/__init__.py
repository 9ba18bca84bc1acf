"""The undo journal: old contents kept outside the project, stored and signed."""
