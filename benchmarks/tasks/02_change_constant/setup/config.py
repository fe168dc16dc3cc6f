"""Settings of the uploader."""

MAX_RETRIES = 3
TIMEOUT_SECONDS = 30
USER_AGENT = "uploader/1.0"
