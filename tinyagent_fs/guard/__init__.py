"""The path guard and the one gitignore-style pattern engine it and the walks ask."""
