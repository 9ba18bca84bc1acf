"""Text: bytes to text and back, lines, what is safe to show, terminal output as text."""
