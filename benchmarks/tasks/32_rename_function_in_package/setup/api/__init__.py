"""The user API."""

from api.users import get_usr, list_users

__all__ = ["get_usr", "list_users"]
