"""cuzk-diag: find where the time goes in a cuzk proving daemon log."""

__version__ = "0.1.0"
