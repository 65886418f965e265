"""Back-office invoicing."""

__version__ = "0.7.2"
