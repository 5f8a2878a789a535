"""The control plane (FastAPI): REST API under `/v1`, Control Tables, `/metrics`, health."""

from streamjoin.api.config import ApiSettings, ConfigurationError, load_api_settings
from streamjoin.api.main import create_app

__all__ = ["ApiSettings", "ConfigurationError", "create_app", "load_api_settings"]
