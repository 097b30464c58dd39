"""The API client (being moved here from ``invtools.client``)."""

from invtools.client import Client, Measurement, Page, RequestStats, Team

__all__ = ["Client", "Team", "Page", "RequestStats", "Measurement"]
