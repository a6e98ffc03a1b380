"""The distribution's version, in a module of its own: everything that prints it (the CLI,
exports, journals) imports it from here, never from the `attnkata` package above them."""

__version__ = "0.1.0"
