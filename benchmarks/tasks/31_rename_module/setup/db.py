"""A tiny in-memory store standing in for the real database."""

_TABLES = {}


def connect(name="app"):
    return _TABLES.setdefault(name, {})


def insert(conn, key, row):
    conn[key] = dict(row)


def fetch(conn, key):
    return conn.get(key)
