"""attnkata: an interview-prep trainer for hand-written attention."""

__version__ = "0.1.0"
