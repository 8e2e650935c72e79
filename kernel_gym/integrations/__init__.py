"""Integrations with other systems (Ray, OpenRLHF, ...). Each module imports its third-party package lazily,
so importing one never requires the others; the core never imports this package."""
