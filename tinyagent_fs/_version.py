"""The package's version, alone: the wheel's metadata reads it from here, and parts that
report it (the MCP server, the Jupyter server extension) import it without the package."""

__version__ = "0.1.0"
