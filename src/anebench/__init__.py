"""anebench: how fast an accelerator streams LLM weights from memory."""

__version__ = "0.1.0"
