"""Settings from the environment (see .env.example)."""

import os

DATABASE_URL = os.environ["DATABASE_URL"]
LOG_LEVEL = os.environ.get("LOG_LEVEL", "info")
REDIS_URL = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
SECRET_KEY = os.getenv("SECRET_KEY")
WORKERS = int(os.environ.get("APP_WORKERS", "2"))
DEBUG = os.environ.get("LOG_LEVEL") == "debug"
